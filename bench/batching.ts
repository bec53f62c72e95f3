// `npm run bench -- batching [--seconds N]`: dynamic batching on vs off, through the real
// platform, for two ONNX models, next to the same model run in-process with no HTTP.
//
//   mlp   fixtures/onnx/mlp.onnx (16 → 64 → 64 → 4): overhead-bound, microseconds a row, so
//         HTTP, JSON and scheduling dominate and batching can only save per-call overhead
//   cnn   fixtures/bench/cnn-bench.onnx (3×64×64 → 10, made by
//         fixtures/bench/make_bench_models.py): compute-bound, ≥ 2 ms an image on one thread
//
// Each model is registered once and deployed four times, one replica each (one intra-op
// thread, the worker's default): `<model>-on` with batching {maxBatchSize 32, maxDelayMicros
// 0, maxQueue 1024} — the adaptive batcher, the default (it gathers only where its per-row
// costs, measured in both modes back to back, say it pays) —, `<model>-fixed` with the same
// bounds and `adaptive: false` (the fixed rule: always join what queued), and `<model>-off`
// and `<model>-off2` with `batching: null` (two identical workers: their ratio is the A/A
// noise floor of comparing workers on this machine, printed beside the goal). Load:
// single-row bodies through the gateway, closed loop at 1, 4, 16 and 64 connections,
// `--seconds` (default 3) per point, `--rounds` (default 2) rounds whose order alternates
// (on, off, fixed, off2; then the reverse) so drift on a shared machine falls on all four; a
// point's figures are the rounds' means. wrk when installed, else the JavaScript client
// (bench/_load.ts). After each model, the adaptive workers' choice (kiln_worker_batch_gathering)
// and their measured per-row costs are printed.
//
// Goals: never_slower_ratio, the WORST on/off ratio over both models and all concurrencies
// (≥ 0.97); compute_bound_ceiling_fraction, the CNN's best batching-on rows/s over its
// in-process ceiling (≥ 0.8). small_model_gain (the MLP's on/off at 64 connections) is printed
// as a figure, no longer a goal (issue 16: batching can remove only the runtime's per-call
// cost, a small part of a gateway-bound request).
// The ceiling: the same model in this process with onnxruntime-node (intraOpNumThreads 1),
// batches of 1, 4, 16 and 32 rows, measured before the platform starts.
//
// Which points count for the p99 goal: the batching-on points whose closed-loop latency
// floor (Little's law: connections ÷ the model's in-process ceiling rows/s) is within the SLO.
// Where even the bare model cannot serve that many clients within 50 ms, no server can, and
// the point measures the model, not Kiln. The max p99 over all batching-on points is printed
// as well.

import { readFile } from 'node:fs/promises';

import * as ort from 'onnxruntime-node';

import { call, readArtifact, register } from '../test/helpers/platform.ts';
import { closedLoop, type LoadTarget } from './_load.ts';
import { startBenchPlatform } from './_platform.ts';
import { failureProblem, goal, percentile, table } from './_report.ts';
import { runWrk, wrkAvailable } from './_wrk.ts';

const root = new URL('../', import.meta.url).pathname;
const concurrencyLevels = [1, 4, 16, 64] as const;
const ceilingBatchSizes = [1, 4, 16, 32] as const;
const batchingOn = { maxBatchSize: 32, maxDelayMicros: 0, maxQueue: 1024 } as const;
const batchingFixed = { ...batchingOn, adaptive: false } as const;
// `off2` is a second, identical batching-off endpoint (its own worker): off2/off is an A/A
// ratio, the noise floor of comparing two workers on this machine.
const variants = ['on', 'off', 'fixed', 'off2'] as const;
type Variant = (typeof variants)[number];
const sloMs = 50;

interface BenchModel {
  readonly name: string;
  readonly path: string;
  readonly input: string;
  /** Shape of one row, without the batch axis. */
  readonly rowShape: readonly number[];
}

const models: readonly BenchModel[] = [
  { name: 'mlp', path: `${root}fixtures/onnx/mlp.onnx`, input: 'features', rowShape: [16] },
  {
    name: 'cnn',
    path: `${root}fixtures/bench/cnn-bench.onnx`,
    input: 'image',
    rowShape: [3, 64, 64],
  },
];

function option(args: readonly string[], name: string, fallback: number): number {
  const i = args.indexOf(`--${name}`);
  const value = i >= 0 ? Number(args[i + 1]) : fallback;
  return Number.isFinite(value) && value > 0 ? Math.floor(value) : fallback;
}

/** Deterministic row values in [-1, 1) with two decimals (short JSON). */
function rowValues(rowShape: readonly number[]): number[] {
  const n = rowShape.reduce((a, b) => a * b, 1);
  return Array.from({ length: n }, (_, i) => (((i * 37) % 200) - 100) / 100);
}

/**
 * Deploys `model` (already registered) on `endpoint` with `config`, and waits until a replica
 * is ready and the gateway routes to it. Shared with bench/overload.ts.
 */
export async function deployEndpoint(
  apiUrl: string,
  gatewayUrl: string,
  endpoint: string,
  model: string,
  config: Record<string, unknown>,
): Promise<void> {
  const put = await call(apiUrl, 'PUT', `/api/v1/endpoints/${endpoint}`, { model, config });
  if (put.status !== 200 && put.status !== 201)
    throw new Error(`deploy ${endpoint}: ${JSON.stringify(put.body)}`);
  for (let i = 0; i < 600; i++) {
    const status = (await call(apiUrl, 'GET', `/api/v1/endpoints/${endpoint}`)).body as {
      status: { ready: boolean };
    };
    if (status.status.ready) {
      const gw = await fetch(`${gatewayUrl}/v2/models/${endpoint}/ready`);
      await gw.arrayBuffer();
      if (gw.status === 200) return;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`the endpoint ${endpoint} never became ready`);
}

// ── the ceiling: onnxruntime-node in this process ───────────────────────────────────────

interface CeilingPoint {
  readonly batchSize: number;
  readonly msPerBatch: number;
  readonly rowsPerSecond: number;
}

async function measureCeiling(model: BenchModel, seconds: number): Promise<CeilingPoint[]> {
  const session = await ort.InferenceSession.create(await readFile(model.path), {
    executionProviders: ['cpu'],
    intraOpNumThreads: 1,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  });
  const row = rowValues(model.rowShape);
  const points: CeilingPoint[] = [];
  for (const batchSize of ceilingBatchSizes) {
    // [batchSize, ...rowShape] FP32, the same row repeated.
    const data = new Float32Array(batchSize * row.length);
    for (let b = 0; b < batchSize; b++) data.set(row, b * row.length);
    const feeds = {
      [model.input]: new ort.Tensor('float32', data, [batchSize, ...model.rowShape]),
    };
    for (let i = 0; i < 3; i++) await session.run(feeds);
    // A time budget per batch size (a quarter of a load point), at least 5 calls.
    const budgetMs = (seconds * 1000) / 4;
    let calls = 0;
    const start = performance.now();
    while (calls < 5 || performance.now() - start < budgetMs) {
      await session.run(feeds);
      calls++;
    }
    const msPerBatch = (performance.now() - start) / calls;
    points.push({ batchSize, msPerBatch, rowsPerSecond: (batchSize * 1000) / msPerBatch });
  }
  await session.release();
  return points;
}

// ── load through the gateway ────────────────────────────────────────────────────────────

interface LoadPoint {
  readonly rps: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly errors: number;
  /** Every request sent (answered or not): the 0.1 % failure rule's denominator. */
  readonly requests: number;
}

async function measure(
  gatewayUrl: string,
  endpoint: string,
  body: string,
  connections: number,
  seconds: number,
  useWrk: boolean,
): Promise<LoadPoint> {
  const path = `/v2/models/${endpoint}/infer`;
  if (useWrk) {
    const r = runWrk(gatewayUrl + path, body, connections, seconds);
    return { rps: r.rps, p50Ms: r.p50Ms, p99Ms: r.p99Ms, errors: r.errors, requests: r.requests };
  }
  const target: LoadTarget = { origin: gatewayUrl, path, body };
  const r = await closedLoop(target, connections, seconds * 1000);
  const latencies = Array.from(r.latenciesMs);
  return {
    rps: r.rps,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    errors: r.errors,
    requests: r.requests,
  };
}

interface ModelResult {
  readonly model: BenchModel;
  readonly ceiling: readonly CeilingPoint[];
  /** Per concurrency level: batching on (adaptive), off, and fixed. */
  readonly points: readonly LevelPoint[];
}

type LevelPoint = { readonly connections: number } & Record<Variant, LoadPoint>;

/** The rounds' mean (p50/p99 too: a summary of rounds, not a percentile of all requests). */
function meanPoint(points: readonly LoadPoint[]): LoadPoint {
  const mean = (pick: (p: LoadPoint) => number): number =>
    points.reduce((sum, p) => sum + pick(p), 0) / points.length;
  return {
    rps: mean((p) => p.rps),
    p50Ms: mean((p) => p.p50Ms),
    p99Ms: mean((p) => p.p99Ms),
    errors: points.reduce((sum, p) => sum + p.errors, 0),
    requests: points.reduce((sum, p) => sum + p.requests, 0),
  };
}

/** What the adaptive batcher of each replica of `endpoint` chose and measured (its /metrics). */
async function adaptiveState(apiUrl: string, endpoint: string): Promise<string[]> {
  const status = (await call(apiUrl, 'GET', `/api/v1/endpoints/${endpoint}`)).body as {
    status?: { replicas?: { url?: string }[] };
  };
  const lines: string[] = [];
  for (const replica of status.status?.replicas ?? []) {
    if (replica.url === undefined) continue;
    let text: string;
    try {
      // A fresh connection: the bench's pool may hold one the worker has since closed.
      const response = await fetch(`${replica.url}/metrics`, { headers: { connection: 'close' } });
      text = await response.text();
    } catch (error) {
      lines.push(`metrics unavailable (${String(error)})`);
      continue;
    }
    const value = (line: string): string => line.split(' ').at(-1) ?? '?';
    const gathering = text.split('\n').find((l) => l.startsWith('kiln_worker_batch_gathering{'));
    const costs = text
      .split('\n')
      .filter((l) => l.startsWith('kiln_worker_batch_row_cost_seconds{'))
      .map((l) => `${/mode="(\w+)"/.exec(l)?.[1] ?? '?'} ${(Number(value(l)) * 1e6).toFixed(1)}`);
    const probes = text
      .split('\n')
      .filter((l) => l.startsWith('kiln_worker_batch_probes_total{'))
      .map((l) => `${/mode="(\w+)"/.exec(l)?.[1] ?? '?'} ${value(l)}`);
    lines.push(
      `gathering ${gathering === undefined ? '?' : value(gathering)}; µs per row in the last stretch of each mode (measured back to back): ${costs.join(', ')}; probes: ${probes.join(', ') || 'none'}`,
    );
  }
  return lines;
}

export async function run(args: readonly string[]): Promise<void> {
  const seconds = option(args, 'seconds', 3);
  const rounds = option(args, 'rounds', 2);
  const useWrk = wrkAvailable();

  console.log('ceiling: onnxruntime-node in this process, intraOpNumThreads 1, no HTTP');
  const ceilings = new Map<string, CeilingPoint[]>();
  for (const model of models) {
    const points = await measureCeiling(model, seconds);
    ceilings.set(model.name, points);
    console.log(`\n${model.name} (${model.path.replace(root, '')})`);
    console.log(
      table(
        ['batch', 'ms/batch', 'rows/s'],
        points.map((p) => [String(p.batchSize), p.msPerBatch, p.rowsPerSecond]),
      ),
    );
  }

  const bench = await startBenchPlatform({ tempPrefix: 'kiln-bench-batching-' });
  const { platform } = bench;
  const results: ModelResult[] = [];
  try {
    // The helper deploys the XGBoost `bench` endpoint; its worker is not needed here.
    await call(platform.url, 'DELETE', '/api/v1/endpoints/bench');
    for (const model of models) {
      const registered = await register(
        platform.url,
        model.name,
        'onnx',
        await readArtifact(model.path),
      );
      if (registered.status !== 201) throw new Error(JSON.stringify(registered.body));
      await deployEndpoint(platform.url, platform.gatewayUrl, `${model.name}-on`, model.name, {
        batching: batchingOn,
      });
      await deployEndpoint(platform.url, platform.gatewayUrl, `${model.name}-off`, model.name, {
        batching: null,
      });
      await deployEndpoint(platform.url, platform.gatewayUrl, `${model.name}-fixed`, model.name, {
        batching: batchingFixed,
      });
      await deployEndpoint(platform.url, platform.gatewayUrl, `${model.name}-off2`, model.name, {
        batching: null,
      });
    }
    console.log(
      `\nthrough the gateway: one row per request, closed loop, ${seconds} s per point, ${rounds} round(s) in alternating order, ${useWrk ? 'wrk (one thread)' : 'the JavaScript client (wrk is not installed)'}`,
    );
    console.log(
      `batching on (adaptive): ${JSON.stringify(batchingOn)}; fixed: ${JSON.stringify(batchingFixed)}; off and off2: null (off2/off, two identical workers: the A/A noise floor)`,
    );
    for (const model of models) {
      const body = JSON.stringify({
        inputs: [
          {
            name: model.input,
            shape: [1, ...model.rowShape],
            datatype: 'FP32',
            data: rowValues(model.rowShape),
          },
        ],
      });
      // Warm-up: every endpoint, a second each.
      for (const variant of variants)
        await measure(platform.gatewayUrl, `${model.name}-${variant}`, body, 4, 1, useWrk);
      const points: LevelPoint[] = [];
      for (const connections of concurrencyLevels) {
        const measured: Record<Variant, LoadPoint[]> = { on: [], off: [], fixed: [], off2: [] };
        for (let round = 0; round < rounds; round++) {
          const order = round % 2 === 0 ? variants : [...variants].reverse();
          for (const variant of order) {
            measured[variant].push(
              await measure(
                platform.gatewayUrl,
                `${model.name}-${variant}`,
                body,
                connections,
                seconds,
                useWrk,
              ),
            );
          }
        }
        points.push({
          connections,
          on: meanPoint(measured.on),
          off: meanPoint(measured.off),
          fixed: meanPoint(measured.fixed),
          off2: meanPoint(measured.off2),
        });
      }
      const ceiling = ceilings.get(model.name) ?? [];
      results.push({ model, ceiling, points });
      const best = Math.max(...ceiling.map((c) => c.rowsPerSecond));
      console.log(`\n${model.name}: in-process ceiling ${Math.round(best)} rows/s (best batch)`);
      console.log(
        table(
          [
            'conns',
            'on req/s',
            'on p50',
            'on p99',
            'off req/s',
            'off p50',
            'off p99',
            'on/off',
            'fixed/off',
            'A/A off2/off',
            'on/ceiling',
            'errors',
          ],
          points.map((p) => [
            String(p.connections),
            p.on.rps,
            p.on.p50Ms,
            p.on.p99Ms,
            p.off.rps,
            p.off.p50Ms,
            p.off.p99Ms,
            p.on.rps / p.off.rps,
            p.fixed.rps / p.off.rps,
            p.off2.rps / p.off.rps,
            p.on.rps / best,
            p.on.errors + p.off.errors + p.fixed.errors + p.off2.errors,
          ]),
        ),
      );
      // Read twice at most: the API's idle keep-alive connection may have been closed
      // during the load (ECONNRESET on reuse); a failure is printed, the bench goes on.
      let state: string[] = [];
      for (let attempt = 0; attempt < 2 && state.length === 0; attempt++) {
        try {
          state = await adaptiveState(platform.url, `${model.name}-on`);
        } catch (error) {
          if (attempt === 1) state = [`unavailable (${String(error)})`];
        }
      }
      for (const line of state) console.log(`${model.name}-on adaptive batcher: ${line}`);
    }
  } finally {
    await bench.close();
  }

  // ── goals ─────────────────────────────────────────────────────────────────────────────
  const ratios = results.flatMap((r) => r.points.map((p) => p.on.rps / p.off.rps));
  const neverSlower = ratios.some((x) => !Number.isFinite(x)) ? Number.NaN : Math.min(...ratios);
  const mlp = results.find((r) => r.model.name === 'mlp');
  const mlpTop = mlp?.points.at(-1);
  const smallGain = mlpTop === undefined ? Number.NaN : mlpTop.on.rps / mlpTop.off.rps;
  const cnn = results.find((r) => r.model.name === 'cnn');
  const cnnBestOn = Math.max(...(cnn?.points.map((p) => p.on.rps) ?? [Number.NaN]));
  const cnnCeiling = Math.max(...(cnn?.ceiling.map((c) => c.rowsPerSecond) ?? [Number.NaN]));
  const counted: { label: string; p99Ms: number }[] = [];
  const skipped: string[] = [];
  let maxP99All = 0;
  for (const r of results) {
    const best = Math.max(...r.ceiling.map((c) => c.rowsPerSecond));
    for (const p of r.points) {
      maxP99All = Math.max(maxP99All, p.on.p99Ms);
      const floorMs = (p.connections / best) * 1000;
      const label = `${r.model.name}@${p.connections}`;
      if (floorMs <= sloMs) counted.push({ label, p99Ms: p.on.p99Ms });
      else skipped.push(`${label} (floor ${floorMs.toFixed(0)} ms)`);
    }
  }
  const worst = counted.reduce<{ label: string; p99Ms: number } | null>(
    (a, b) => (a === null || b.p99Ms > a.p99Ms || Number.isNaN(b.p99Ms) ? b : a),
    null,
  );
  console.log(
    `\np99 goal over batching-on points whose Little's-law floor (connections ÷ ceiling rows/s) is ≤ ${sloMs} ms: ${counted.map((c) => c.label).join(', ')}; worst ${worst?.label ?? 'none'}`,
  );
  if (skipped.length > 0) console.log(`not counted: ${skipped.join(', ')}`);
  console.log(`max p99 over all batching-on points: ${maxP99All.toFixed(1)} ms`);
  console.log(
    `cnn: best batching-on ${Math.round(cnnBestOn)} rows/s vs in-process ceiling ${Math.round(cnnCeiling)} rows/s\n`,
  );
  const worstAt = results
    .flatMap((r) => r.points.map((p) => ({ label: `${r.model.name}@${p.connections}`, p })))
    .reduce<{ label: string; ratio: number } | null>((a, { label, p }) => {
      const ratio = p.on.rps / p.off.rps;
      return a === null || ratio < a.ratio ? { label, ratio } : a;
    }, null);
  console.log(
    `never slower: worst on/off ${worstAt?.ratio.toFixed(3) ?? 'none'} at ${worstAt?.label ?? 'none'}`,
  );
  // The same comparison between two identical workers: how far apart two workers read here
  // with nothing different between them. A goal finer than this floor is not resolved.
  const aa = results.flatMap((r) => r.points.map((p) => p.off2.rps / p.off.rps));
  const aaSpread = Math.max(...aa.map((ratio) => Math.abs(1 - ratio)));
  console.log(
    `A/A noise floor: off2/off from ${Math.min(...aa).toFixed(3)} to ${Math.max(...aa).toFixed(3)} (worst ${(aaSpread * 100).toFixed(1)} % apart, two identical workers)`,
  );
  // Retired as a goal (issue 16, item 5): printed as a figure.
  console.log(
    `small_model_gain (mlp on/off at 64 connections, not a goal): ${smallGain.toFixed(3)}`,
  );
  // Throughput goals count 2xx answers only and read met=no when > 0.1 % of requests failed.
  const failed = failureProblem(
    results.flatMap((r) =>
      r.points.flatMap((p) =>
        (['on', 'off'] as const).map((variant) => ({
          label: `${r.model.name}@${p.connections} ${variant}`,
          requests: p[variant].requests,
          errors: p[variant].errors,
        })),
      ),
    ),
  );
  goal('batching', 'never_slower_ratio', neverSlower, '>=', 0.97, failed);
  goal('batching', 'compute_bound_ceiling_fraction', cnnBestOn / cnnCeiling, '>=', 0.8, failed);
  goal('batching', 'p99_within_slo', worst?.p99Ms ?? Number.NaN, '<=', sloMs);
}
