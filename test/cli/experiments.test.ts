// `kiln experiments create|list|show|outcomes|report|stop`: the real CLI (one process per
// command) against an in-process platform; and the report's rendering.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { collectVariant, readOutcomes } from '../../src/cli/commands/experiments.ts';
import { figure, reportText } from '../../src/cli/commands/experiments-render.ts';
import type { ExperimentReport } from '../../src/control/traffic/experiment-report.ts';
import type { ExperimentRecord } from '../../src/store/traffic-records.ts';
import { call, registerFixture, testPlatform } from '../helpers/platform.ts';
import { sleep } from '../control/traffic/textbook-examples.ts';
import { Cli } from './cli-harness.ts';

void test('kiln experiments, end to end', async () => {
  const platform = await testPlatform();
  await registerFixture(platform.url, 'm', 'onnx', 'mlp.onnx');
  await registerFixture(platform.url, 'm', 'onnx', 'mlp.onnx');
  const deployed = await call(platform.url, 'PUT', '/api/v1/endpoints/heart', {
    model: 'm',
    version: 1,
    replicas: 0,
  });
  assert.equal(deployed.status, 201);
  const cli = new Cli(platform.url, platform.home);

  assert.equal(
    await cli.ok(['experiments', 'list']),
    'no experiments (start one with `kiln experiments create`)\n',
  );
  const refused = await cli.fails(
    ['experiments', 'create', 'heart', '--name', 'x', '--variant', 'm:1=60', '--variant', 'm:2=60'],
    1,
  );
  assert.match(refused, /KILN_TRAFFIC_POLICY_INVALID/);
  assert.match(refused, /weights must sum to 100, got 120/);
  await cli.fails(['experiments', 'create', 'heart', '--name', 'x', '--variant', 'm=50'], 2);

  const created = await cli.json<ExperimentRecord>([
    'experiments',
    'create',
    'heart',
    '--name',
    'sleep',
    '--variant',
    'm:1=50',
    '--variant',
    'm:2=50',
  ]);
  assert.equal(created.state, 'running');
  const id = created.id;
  assert.match(
    await cli.ok(['experiments', 'list']),
    new RegExp(`^ID +NAME .*\\n${id} +sleep +heart +running +m:1 50%, m:2 50% `),
  );
  assert.match(await cli.ok(['experiments', 'show', id]), /control: +m:1\n/);

  // Outcomes from a file (JSON lines) and from flags.
  const file = join(platform.home, 'outcomes.jsonl');
  const lines = [
    ...sleep.group1.map((value) => ({ metric: 'sleep', kind: 'mean', value, variant: 'm:1' })),
    ...sleep.group2.map((value) => ({ metric: 'sleep', kind: 'mean', value, variant: 'm:2' })),
  ].map((o) => JSON.stringify(o));
  await writeFile(file, lines.join('\n') + '\n');
  assert.equal(
    await cli.ok(['experiments', 'outcomes', id, '--file', file]),
    `accepted 20 outcomes for experiment ${id} (m:1 10, m:2 10)\n`,
  );
  assert.match(
    await cli.ok([
      'experiments',
      'outcomes',
      id,
      '--metric',
      'clicked',
      '--kind',
      'rate',
      '--value',
      '1',
      '--user',
      'alice',
    ]),
    /^accepted 1 outcomes for experiment exp-\w+ \(m:[12] 1\)\n$/,
  );
  await cli.fails(['experiments', 'outcomes', id, '--metric', 'clicked'], 2);

  const report = await cli.json<ExperimentReport>(['experiments', 'report', id]);
  const sleepMetric = report.metrics.find((m) => m.metric === 'sleep');
  assert.ok(sleepMetric?.comparisons[0]?.ok === true);
  const text = await cli.ok(['experiments', 'report', id, '--mde', 'sleep=0.5']);
  assert.match(
    text,
    /metric sleep \(mean; Welch's t-test, alpha 0.05, sample size at power 0.8\):/,
  );
  assert.match(
    text,
    /\nm:2 +10 +2\.33 +\+1\.58 +\+210\.7% +d \+0\.8322 +\[-0\.2055, 3\.365\] +t 1\.861, df 17\.78 +0\.07939 +no +227 \(217 more; mde 0\.5\)\n/,
  );

  assert.match(
    await cli.ok(['experiments', 'stop', id, '--reason', 'done']),
    /^stopped experiment exp-\w+; endpoint heart back to its stable version\n$/,
  );
  assert.match(await cli.fails(['experiments', 'stop', id], 1), /KILN_EXPERIMENT_STOPPED/);
  assert.match(
    await cli.fails(['experiments', 'report', 'exp-none'], 1),
    /KILN_EXPERIMENT_NOT_FOUND/,
  );
});

void test('variants parse as MODEL:VERSION=WEIGHT', () => {
  assert.deepEqual(collectVariant('iris:2=50', collectVariant('iris:1=50')), [
    { model: 'iris', version: 1, weight: 50 },
    { model: 'iris', version: 2, weight: 50 },
  ]);
  assert.throws(() => collectVariant('iris=50'), /expected MODEL:VERSION=WEIGHT/);
  assert.throws(() => collectVariant('iris:0=50'), /expected MODEL:VERSION=WEIGHT/);
});

void test('figures keep four significant digits and never print NaN', () => {
  assert.deepEqual([0, 0.07939414, 1.58, 3.3654832, 210.666, 5.69e-7, 12345678, null].map(figure), [
    '0',
    '0.07939',
    '1.58',
    '3.365',
    '210.7',
    '5.69e-7',
    '1.23e+7',
    '-',
  ]);
  const empty: ExperimentReport = {
    experiment: {
      id: 'exp-1',
      endpoint: 'heart',
      name: 'n',
      variants: [
        { model: 'm', version: 1, weight: 50 },
        { model: 'm', version: 2, weight: 50 },
      ],
      salt: 'exp-1',
      keyPath: null,
      state: 'running',
      createdBy: 't',
      createdAt: '2026-01-31T14:05:09.123Z',
      stoppedAt: null,
    },
    control: 'm:1',
    alpha: 0.05,
    power: 0.8,
    confidence: 0.95,
    variants: [
      {
        variant: 'm:1',
        weight: 50,
        requests: 0,
        share: null,
        errors: 0,
        errorRate: null,
        latencyMs: null,
      },
      {
        variant: 'm:2',
        weight: 50,
        requests: 0,
        share: null,
        errors: 0,
        errorRate: null,
        latencyMs: null,
      },
    ],
    metrics: [],
  };
  const text = reportText(empty);
  assert.match(
    text,
    /^experiment exp-1 "n" on endpoint heart \(running since 2026-01-31 14:05:09; control m:1\)\n/,
  );
  assert.match(text, /\nm:1 +50% +0 +- +0 +- +- +-\n/);
  assert.match(text, /no outcomes reported yet/);
  assert.ok(!text.includes('NaN'));
});

void test('an outcomes file is a JSON list, {"outcomes": [...]} (any layout) or one object per line', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'kiln-outcomes-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const a = { metric: 'm', kind: 'rate', value: 1, user: 'u1' };
  const b = { metric: 'm', kind: 'rate', value: 0, variant: 'x:1' };
  const files: Record<string, string> = {
    'list.json': JSON.stringify([a, b], null, 2),
    'wrapped.json': JSON.stringify({ outcomes: [a, b] }, null, 2),
    'lines.jsonl': `${JSON.stringify(a)}\n\n${JSON.stringify(b)}\n`,
  };
  for (const [name, text] of Object.entries(files)) {
    await writeFile(join(dir, name), text);
    assert.deepEqual(await readOutcomes(join(dir, name)), [a, b], name);
  }
  await writeFile(join(dir, 'one.json'), JSON.stringify(a, null, 2));
  assert.deepEqual(await readOutcomes(join(dir, 'one.json')), [a]);
  await writeFile(join(dir, 'bad.json'), '{"metric": ');
  await assert.rejects(readOutcomes(join(dir, 'bad.json')), /is not JSON/);
  await assert.rejects(readOutcomes(join(dir, 'missing.json')), /no such file or directory/);
});
