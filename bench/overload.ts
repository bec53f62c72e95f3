// `npm run bench -- overload [--seconds N] [--factor F] [--pin] [--heavy-only|--trees-only]`:
// twice the capacity (`--factor`, default 2) offered as an open loop; does the platform keep
// serving its capacity at a bounded latency and shed the rest with 429?
//
// Two scenarios, one after the other on the same platform:
// - heavy (the goals are read here): fixtures/bench/heavy-small-input.onnx (made by
//   fixtures/bench/make_bench_models.py), 32 features in, ~2.3 ms of convolutions a row on
//   one thread, batching on as for any ONNX deep net. The model is the bottleneck, which is
//   what overload means for a real endpoint: more requests than the model can compute. (Not
//   the batching bench's CNN: its 12,288-value JSON images cost the gateway and the worker
//   about as much CPU to parse as the model takes, so it is as much a JSON bench.)
// - trees (shown, not a goal): the XGBoost bench model at ~15 µs a row, batching off. Its
//   capacity (~20-30k req/s here) is the CPU of the gateway, the worker and the load
//   generator together on 2 cores, so at 2× the client alone needs as much CPU as the whole
//   serving path and every refusal (~30 µs of gateway CPU) is taken from serving: it
//   measures the price of a 429, not the model's overload.
// The guard in both: the gateway's per-endpoint `maxConcurrency`, which refuses before
// reading a byte of the body (429 KILN_ENDPOINT_BUSY, Retry-After: 1); configured here at
// the knee, tighter than the bound every endpoint gets by default.
//
// Per scenario:
// 1. Capacity: the endpoint without a configured limit (its derived bound, 256 for heavy's
//    queue and 64 for unbatched trees, is above the sweep), closed loop at 4, 8, 16 and 32
//    connections, 3 s each, with the JavaScript client (bench/_load.ts), the same client as
//    the open loop, so the client's own CPU cost per request is the same on both sides.
//    Capacity = the best.
// 2. maxConcurrency = the fewest connections that reached 90 % of capacity (the knee: more
//    in flight only adds queueing, Little's law), deployed as the endpoint `<scenario>-guarded`.
// 3. A burst of 4 × maxConcurrency requests at once, to show the 429s and their Retry-After.
// 4. Open loop at 2 × capacity for `--seconds` (default 20): goodput (200s per second) vs
//    capacity, the p99 of the admitted (200) requests from their scheduled send time, and
//    the 429s.

import { spawnSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';

import { call, readArtifact, register } from '../test/helpers/platform.ts';
import { deployEndpoint } from './batching.ts';
import { closedLoop, openLoop, type LoadTarget } from './_load.ts';
import { startBenchPlatform } from './_platform.ts';
import { goal, percentile, table } from './_report.ts';

const root = new URL('../', import.meta.url).pathname;
const capacityLevels = [4, 8, 16, 32] as const;
const sloMs = 50;

function option(args: readonly string[], name: string, fallback: number): number {
  const i = args.indexOf(`--${name}`);
  const value = i >= 0 ? Number(args[i + 1]) : fallback;
  return Number.isFinite(value) && value > 0 ? Math.floor(value) : fallback;
}

/**
 * With --pin (Linux, taskset): the load generator (this process) on CPU 0, the gateway and
 * the workers on CPU 1, so the client's own work (which grows with the offered rate, 429s
 * included) does not take the serving path's CPU. As in bench/e2e.ts.
 */
function pinProcesses(): void {
  const pids = (pattern: string): string[] =>
    spawnSync('pgrep', ['-f', pattern], { encoding: 'utf8' })
      .stdout.split('\n')
      .filter((l) => l.trim() !== '');
  spawnSync('taskset', ['-cp', '0', String(process.pid)]);
  for (const pid of [...pids('gateway/main.ts'), ...pids('worker/main.ts')])
    spawnSync('taskset', ['-cp', '1', pid]);
  console.log('pinned: load generator → CPU 0; gateway and workers → CPU 1');
}

interface Scenario {
  /** Endpoint name prefix and label. */
  readonly name: string;
  readonly label: string;
  /** Registered model to deploy (the platform's `bench` model when null). */
  readonly model: { readonly name: string; readonly path: string } | null;
  readonly batching: { maxBatchSize: number; maxDelayMicros: number; maxQueue: number } | null;
  readonly body: string;
}

interface ScenarioResult {
  readonly goodputFraction: number;
  readonly p99: number;
}

export async function run(args: readonly string[]): Promise<void> {
  const seconds = option(args, 'seconds', 20);
  const factorAt = args.indexOf('--factor');
  const factor = factorAt >= 0 ? Number(args[factorAt + 1]) || 2 : 2;
  const only = args.includes('--heavy-only')
    ? 'heavy'
    : args.includes('--trees-only')
      ? 'trees'
      : null;
  const bench = await startBenchPlatform({ tempPrefix: 'kiln-bench-overload-' });
  const { platform } = bench;
  try {
    const metadata = (await (await fetch(`${bench.workerUrl}/v2/models/bench`)).json()) as {
      inputs: { name: string; shape: number[] }[];
    };
    const inputName = metadata.inputs[0]?.name ?? 'input';
    const fixture = JSON.parse(
      await readFile(`${root}fixtures/trees/bench-fraud.rows.json`, 'utf8'),
    ) as { rows: (number | null)[][] };
    // Row 2: the first realistic row (0 and 1 are all-missing / all-zero edge cases).
    const row = fixture.rows[2] ?? fixture.rows[0] ?? [];
    const features = Array.from({ length: 32 }, (_, i) => ((i * 37) % 17) / 17 - 0.5);
    const scenarios: Scenario[] = [
      {
        name: 'heavy',
        label:
          'heavy: fixtures/bench/heavy-small-input.onnx (32 features, ~2.3 ms of convolutions a row), batching on (the ONNX default), one row per request',
        model: { name: 'heavy', path: `${root}fixtures/bench/heavy-small-input.onnx` },
        batching: { maxBatchSize: 32, maxDelayMicros: 0, maxQueue: 256 },
        body: JSON.stringify({
          inputs: [{ name: 'features', shape: [1, 32], datatype: 'FP32', data: features }],
        }),
      },
      {
        name: 'trees',
        label:
          'trees: fixtures/trees/bench-fraud.ubj (~15 µs a row), batching off (the trees default), one row per request',
        model: null,
        batching: null,
        body: JSON.stringify({
          inputs: [{ name: inputName, shape: [1, row.length], datatype: 'FP32', data: row }],
        }),
      },
    ];
    const results = new Map<string, ScenarioResult>();
    for (const scenario of scenarios) {
      if (only !== null && scenario.name !== only) continue;
      results.set(
        scenario.name,
        await runScenario(platform, scenario, { seconds, factor, pin: args.includes('--pin') }),
      );
    }
    const heavy = results.get('heavy');
    if (heavy !== undefined) {
      console.log(
        'goals read on the heavy scenario (the model, not the serving path, is the limit)',
      );
      goal('overload', 'goodput_fraction', heavy.goodputFraction, '>=', 0.9);
      goal('overload', 'admitted_p99_ms', heavy.p99, '<=', sloMs);
    }
  } finally {
    await bench.close();
  }
}

async function runScenario(
  platform: { readonly url: string; readonly gatewayUrl: string },
  scenario: Scenario,
  options: { readonly seconds: number; readonly factor: number; readonly pin: boolean },
): Promise<ScenarioResult> {
  const { seconds, factor, pin } = options;
  const body = scenario.body;
  console.log(`\n== ${scenario.label}`);
  let model = 'bench';
  if (scenario.model !== null) {
    model = scenario.model.name;
    const files = await readArtifact(scenario.model.path);
    const registered = await register(platform.url, model, 'onnx', files);
    if (registered.status !== 201) throw new Error(JSON.stringify(registered.body));
  }
  const open = `${scenario.name}-open`;
  await deployEndpoint(platform.url, platform.gatewayUrl, open, model, {
    batching: scenario.batching,
  });
  if (pin) pinProcesses();

  // 1. capacity
  const openTarget: LoadTarget = {
    origin: platform.gatewayUrl,
    path: `/v2/models/${open}/infer`,
    body,
  };
  await closedLoop(openTarget, 8, 1000);
  const sweep: { connections: number; rps: number; p50: number; p99: number }[] = [];
  for (const connections of capacityLevels) {
    const r = await closedLoop(openTarget, connections, 3000);
    const l = Array.from(r.latenciesMs);
    sweep.push({ connections, rps: r.rps, p50: percentile(l, 50), p99: percentile(l, 99) });
  }
  const capacity = Math.max(...sweep.map((s) => s.rps));
  const knee = sweep.find((s) => s.rps >= 0.9 * capacity)?.connections ?? 8;
  console.log('capacity: closed loop, JavaScript client, no limit, 3 s per point');
  console.log(
    table(
      ['conns', 'req/s', 'p50 ms', 'p99 ms'],
      sweep.map((s) => [String(s.connections), s.rps, s.p50, s.p99]),
    ),
  );
  console.log(
    `capacity ${Math.round(capacity)} req/s; maxConcurrency ${knee} (fewest connections at ≥ 90 % of it)`,
  );

  // 2. the guarded endpoint
  const guardedName = `${scenario.name}-guarded`;
  await deployEndpoint(platform.url, platform.gatewayUrl, guardedName, model, {
    batching: scenario.batching,
    maxConcurrency: knee,
  });
  await call(platform.url, 'DELETE', `/api/v1/endpoints/${open}`);
  if (pin) pinProcesses();
  const guarded: LoadTarget = { ...openTarget, path: `/v2/models/${guardedName}/infer` };
  await closedLoop(guarded, knee, 1000);

  // 3. a burst, to see the shedding answer
  const burst = await Promise.all(
    Array.from({ length: knee * 4 }, async () => {
      const response = await fetch(platform.gatewayUrl + guarded.path, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      });
      const text = await response.text();
      return { status: response.status, retryAfter: response.headers.get('retry-after'), text };
    }),
  );
  const refused = burst.filter((b) => b.status === 429);
  console.log(
    `burst of ${burst.length} at once: ${burst.length - refused.length} served, ${refused.length} × 429` +
      (refused[0] === undefined
        ? ''
        : ` (Retry-After: ${refused[0].retryAfter ?? 'missing'}; ${refused[0].text.slice(0, 120)})`),
  );

  // 4. twice the capacity, open loop
  const rate = Math.round(factor * capacity);
  const connections = Math.max(64, knee * 4);
  console.log(
    `open loop at ${rate} req/s (${factor} × capacity) for ${seconds} s, ${connections} client connections`,
  );
  const r = await openLoop(guarded, rate, seconds * 1000, connections);
  const served = r.statuses['200'] ?? 0;
  const shed = r.statuses['429'] ?? 0;
  const goodput = served / r.seconds;
  const admitted = Array.from(r.latenciesMs);
  const p99 = percentile(admitted, 99);
  const other = Object.entries(r.statuses)
    .filter(([status]) => status !== '200' && status !== '429')
    .map(([status, n]) => `${status}: ${n}`);
  const failed = r.errors - shed - other.reduce((s, o) => s + Number(o.split(': ')[1]), 0);
  console.log(
    table(
      ['offered/s', 'sent/s', 'goodput/s', 'of capacity', 'p50 ms', 'p99 ms', '429', 'other'],
      [
        [
          String(rate),
          r.requests / r.seconds,
          goodput,
          goodput / capacity,
          percentile(admitted, 50),
          p99,
          shed,
          [...other, ...(failed > 0 ? [`no answer: ${failed}`] : [])].join(', ') || '0',
        ],
      ],
    ),
  );
  if (r.requests / r.seconds < 0.95 * rate)
    console.log(
      'the client sent below the offered rate: it fell behind, and the latencies (from each ' +
        "request's scheduled time) include its own backlog",
    );
  console.log(
    `${served} served, ${shed} shed with 429 (${((100 * shed) / Math.max(1, r.requests)).toFixed(1)} %) in ${r.seconds.toFixed(1)} s`,
  );
  await call(platform.url, 'DELETE', `/api/v1/endpoints/${guardedName}`);
  return { goodputFraction: goodput / capacity, p99 };
}
