// `kiln simulate` as a user runs it (a real `kiln` process): files in, the side-by-side table,
// --json and --plot out; every bad file a KILN_* error naming it; --endpoint reading the
// measured latencies from GET /api/v1/endpoints/{e}/scale (a stub platform here: the route's
// shape is the contract with the control plane).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ScaleStatus } from '../../src/control/autoscale/autoscale-controller.ts';
import { HistogramSketch } from '../../src/traffic/histogram-sketch.ts';
import { Cli } from './cli-harness.ts';

const dir = mkdtempSync(join(tmpdir(), 'kiln-simulate-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, content: unknown): string {
  const path = join(dir, name);
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
  return path;
}

const trace = file('spike.csv', 't_seconds,rps\n0,5\n120,40\n300,5\n420,0\n');
const model = file('model.json', {
  concurrencyPerReplica: 2,
  serviceTimeMs: { kind: 'exponential', meanMs: 50 },
  instanceTypes: { small: { startupMs: 1000, usdPerHour: 0.2 } },
});
const kiln = file('kiln.json', {
  name: 'kiln',
  kind: 'kiln',
  policy: { minReplicas: 1, maxReplicas: 20, target: 1 },
});
const hpa = file('hpa.json', {
  name: 'hpa',
  kind: 'hpa',
  policy: { minReplicas: 1, maxReplicas: 20, signal: 'cpu', target: 0.7 },
});
// No platform is needed without --endpoint: a URL nothing listens on proves it.
const offline = new Cli('http://127.0.0.1:9', dir);

test('kiln simulate prints the policies side by side and writes the plot', async () => {
  const plot = join(dir, 'out.svg');
  const stdout = await offline.ok([
    'simulate',
    '--trace',
    trace,
    '--policy',
    kiln,
    '--policy',
    hpa,
    '--model',
    model,
    '--slo-ms',
    '200',
    '--plot',
    plot,
  ]);
  const lines = stdout.trimEnd().split('\n');
  assert.match(lines[0] ?? '', /^trace 420 s, \d+ requests, SLO 200 ms, 2 slot\(s\) per replica/);
  assert.match(lines[1] ?? '', /^POLICY\s+INSTANCE\s+SLO MET/);
  assert.match(lines[2] ?? '', /^kiln\s+small\s+\d+\.\d{3}%/);
  assert.match(lines[3] ?? '', /^hpa\s+small\s+\d+\.\d{3}%/);
  assert.equal(lines.at(-1), `plot written to ${plot}`);
  const svg = readFileSync(plot, 'utf8');
  assert.ok(svg.startsWith('<svg ') && svg.trimEnd().endsWith('</svg>'));
});

test('kiln simulate --json prints the report; the same seed repeats it', async () => {
  const args = [
    'simulate',
    '--trace',
    trace,
    '--policy',
    kiln,
    '--model',
    model,
    '--slo-ms',
    '200',
    '--seed',
    '5',
  ];
  const first = await offline.json<{
    seed: number;
    policies: { name: string; requests: number }[];
  }>(args);
  const again = await offline.json<unknown>(args);
  assert.deepEqual(again, first);
  assert.equal(first.seed, 5);
  assert.deepEqual(
    first.policies.map((p) => p.name),
    ['kiln'],
  );
});

test('bad input: each a KILN_* error naming the file and the problem', async () => {
  const base = ['--policy', kiln, '--model', model, '--slo-ms', '200'];
  const badTrace = file('bad.csv', 't_seconds,rps\n0,5\n60,lots\n');
  assert.equal(
    await offline.fails(['simulate', '--trace', badTrace, ...base], 1),
    `error: invalid trace ${badTrace}: line 3: rate "lots" is not a number (KILN_TRACE_INVALID)\n` +
      'hint: a trace is CSV `t_seconds,rps` rows (header optional) or JSON [{"t": s, "rps": n}]\n',
  );
  const badPolicy = file('bad-policy.json', {
    name: 'x',
    kind: 'kiln',
    policy: { minReplicas: 5, maxReplicas: 2 },
  });
  const policyError = await offline.fails(
    ['simulate', '--trace', trace, '--policy', badPolicy, '--model', model, '--slo-ms', '200'],
    1,
  );
  assert.match(
    policyError,
    /^error: invalid simulation: policy file .*bad-policy\.json: policy x: .*minReplicas \(5\) > maxReplicas \(2\).*\(KILN_SIMULATION_INVALID\)/,
  );
  const badModel = file('bad-model.json', { concurrencyPerReplica: 0 });
  assert.match(
    await offline.fails(
      ['simulate', '--trace', trace, '--policy', kiln, '--model', badModel, '--slo-ms', '200'],
      1,
    ),
    /^error: invalid simulation: model file .*: concurrencyPerReplica must be an integer >= 1, got 0 \(KILN_SIMULATION_INVALID\)/,
  );
  assert.match(
    await offline.fails(['simulate', '--trace', join(dir, 'missing.csv'), ...base], 1),
    /^error: cannot read trace .*missing\.csv: no such file or directory \(KILN_LOCAL_FILE\)/,
  );
  assert.match(
    await offline.fails(['simulate', '--trace', trace, '--policy', kiln, '--slo-ms', '200'], 2),
    /^error: give --model FILE or --endpoint E \(or both\) \(KILN_USAGE\)/,
  );
  assert.match(
    await offline.fails(
      ['simulate', '--trace', trace, '--policy', kiln, '--model', model, '--slo-ms', '0'],
      2,
    ),
    /expected a number > 0/,
  );
});

test('--endpoint draws service times from the measured latency sketch and start-up', async () => {
  const sketch = new HistogramSketch();
  for (let i = 0; i < 1000; i++) sketch.add(20 + (i % 40));
  const seen: string[] = [];
  let measured = true;
  const server = createServer((request: IncomingMessage, response) => {
    seen.push(`${request.method} ${request.url}`);
    response.setHeader('content-type', 'application/json');
    const empty = new HistogramSketch().snapshot();
    // The fields `kiln simulate --endpoint` reads, typed by the control plane's ScaleStatus:
    // a change of that contract fails the typecheck here.
    const body: Pick<ScaleStatus, 'endpoint' | 'startup' | 'latencyMs'> = {
      endpoint: 'fraud',
      startup: { measuredP90Ms: 1500, samples: 4, usedMs: 1500 },
      latencyMs: measured
        ? {
            since: '2026-11-23T00:00:00.000Z',
            count: 1000,
            p50: 40,
            p90: 55,
            p95: 57,
            p99: 59,
            sketch: sketch.snapshot(),
          }
        : {
            since: '2026-11-23T00:00:00.000Z',
            count: 0,
            p50: null,
            p90: null,
            p95: null,
            p99: null,
            sketch: empty,
          },
    };
    response.end(JSON.stringify(body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const cli = new Cli(url, dir);
    const report = await cli.json<{
      meanServiceMs: number;
      concurrencyPerReplica: number;
      policies: { instanceType: string; startupMs: number }[];
    }>([
      'simulate',
      '--trace',
      trace,
      '--policy',
      kiln,
      '--endpoint',
      'fraud',
      '--slo-ms',
      '200',
      '--concurrency-per-replica',
      '3',
      '--token',
      'test-token',
    ]);
    assert.deepEqual(seen, ['GET /api/v1/endpoints/fraud/scale']);
    assert.ok(report.meanServiceMs > 35 && report.meanServiceMs < 45, `${report.meanServiceMs}`);
    assert.equal(report.concurrencyPerReplica, 3);
    assert.deepEqual(
      report.policies.map((p) => [p.instanceType, p.startupMs]),
      [['measured', 1500]],
    );
    measured = false;
    assert.match(
      await cli.fails(
        [
          'simulate',
          '--trace',
          trace,
          '--policy',
          kiln,
          '--endpoint',
          'fraud',
          '--slo-ms',
          '200',
          '--token',
          't',
        ],
        1,
      ),
      /^error: invalid simulation: endpoint fraud has no measured latencies yet .*\(KILN_SIMULATION_INVALID\)/,
    );
  } finally {
    server.close();
  }
});
