// `npm run bench -- e2e`: Open Inference Protocol v2 infer on an XGBoost endpoint, through
// the gateway vs straight to the worker, on this machine's loopback.
//
// With wrk installed (Debian's `wrk`, a C client that leaves the 2 cores to the serving
// path): both paths at fixed concurrency 1…32 → throughput, p50/p99 per point; the
// gateway's maximum is the best point; the goal is read at the concurrency whose gateway
// throughput is nearest half of it: added p99 = gateway p99 − worker p99 at that
// concurrency. Goal: ≤ 1 ms.
// Without wrk: the JavaScript client (bench/_load.ts), closed loop for the maximum, then an
// open loop at half of it on both paths (--sweep adds 10–40 % points). On 2 cores that
// client's own CPU use dominates the tail, so its figure is an upper bound.
// --pin (Linux): load generator on CPU 0, gateway and worker on CPU 1.

import { spawnSync } from 'node:child_process';

import { closedLoop, openLoop, type LoadResult, type LoadTarget } from './_load.ts';
import { startBenchPlatform } from './_platform.ts';
import { goal, percentile, table } from './_report.ts';
import { runWrk, wrkAvailable, type WrkResult } from './_wrk.ts';

const root = new URL('../', import.meta.url).pathname;

function option(args: readonly string[], name: string, fallback: number): number {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : fallback;
}

function row(label: string, r: LoadResult): (string | number)[] {
  const l = r.latenciesMs;
  return [
    label,
    r.rps,
    percentile(Array.from(l), 50),
    percentile(Array.from(l), 95),
    percentile(Array.from(l), 99),
    r.errors,
  ];
}

/**
 * With --pin (Linux, taskset): the load generator (this process) on CPU 0, the gateway and
 * the worker on CPU 1, so the client's own work does not preempt the serving path.
 */
function pinProcesses(workerUrl: string): void {
  const pids = (pattern: string): string[] =>
    spawnSync('pgrep', ['-f', pattern], { encoding: 'utf8' })
      .stdout.split('\n')
      .filter((l) => l.trim() !== '');
  spawnSync('taskset', ['-cp', '0', String(process.pid)]);
  const port = new URL(workerUrl).port;
  for (const pid of [...pids('gateway/main.ts'), ...pids('worker/main.ts')])
    spawnSync('taskset', ['-cp', '1', pid]);
  console.log(`pinned: load generator → CPU 0; gateway and worker (port ${port}) → CPU 1`);
}

/**
 * The fixed-concurrency method, with wrk: sweep the number of connections on both paths;
 * the gateway's maximum throughput is the best of the sweep; the goal is read at the
 * concurrency whose gateway throughput is nearest half of that maximum.
 */
function withWrk(gatewayUrl: string, workerUrl: string, body: string, seconds: number): void {
  const path = '/v2/models/bench/infer';
  const levels = [1, 2, 4, 8, 16, 32];
  const rows: (string | number)[][] = [];
  const results = new Map<number, { gateway: WrkResult; direct: WrkResult }>();
  console.log(`\nwrk, one thread, fixed concurrency, ${seconds} s per point`);
  for (const c of levels) {
    const g = runWrk(gatewayUrl + path, body, c, seconds);
    const d = runWrk(workerUrl + path, body, c, seconds);
    results.set(c, { gateway: g, direct: d });
    rows.push([
      String(c),
      g.rps,
      g.p50Ms,
      g.p99Ms,
      d.rps,
      d.p50Ms,
      d.p99Ms,
      g.p99Ms - d.p99Ms,
      g.errors + d.errors,
    ]);
  }
  console.log(
    table(
      [
        'conns',
        'gw req/s',
        'gw p50',
        'gw p99',
        'direct req/s',
        'direct p50',
        'direct p99',
        'added p99',
        'errors',
      ],
      rows,
    ),
  );
  const max = Math.max(...[...results.values()].map((r) => r.gateway.rps));
  const best = [...results.entries()].reduce((a, b) =>
    Math.abs(b[1].gateway.rps - max / 2) < Math.abs(a[1].gateway.rps - max / 2) ? b : a,
  );
  const c = best[0];
  console.log(
    `\ngateway maximum ${Math.round(max)} req/s; half is ${Math.round(max / 2)}: nearest at ${c} connections`,
  );
  const g = runWrk(gatewayUrl + path, body, c, seconds * 2);
  const d = runWrk(workerUrl + path, body, c, seconds * 2);
  console.log(
    table(
      ['path', 'req/s', 'p50 ms', 'p90 ms', 'p99 ms', 'errors'],
      [
        ['gateway → worker', g.rps, g.p50Ms, g.p90Ms, g.p99Ms, g.errors],
        ['worker directly', d.rps, d.p50Ms, d.p90Ms, d.p99Ms, d.errors],
      ],
    ),
  );
  const added = g.p99Ms - d.p99Ms;
  console.log(
    `gateway added latency at ${c} connections (${Math.round(g.rps)} req/s through the gateway): p50 ${(g.p50Ms - d.p50Ms).toFixed(3)} ms, p99 ${added.toFixed(3)} ms`,
  );
  console.log("(wrk, gateway and worker share this machine's 2 cores)");
  goal('e2e', 'gateway_added_p99_ms', added, '<=', 1);
}

async function withJsClient(
  gateway: LoadTarget,
  direct: LoadTarget,
  concurrency: number,
  seconds: number,
  sweep: boolean,
): Promise<void> {
  console.log(`\nmaximum throughput, closed loop, concurrency ${concurrency}, ${seconds} s each`);
  const maxGateway = await closedLoop(gateway, concurrency, seconds * 1000);
  const maxDirect = await closedLoop(direct, concurrency, seconds * 1000);
  console.log(
    table(
      ['path', 'req/s', 'p50 ms', 'p95 ms', 'p99 ms', 'errors'],
      [row('gateway → worker', maxGateway), row('worker directly', maxDirect)],
    ),
  );
  const rate = Math.max(50, Math.floor(maxGateway.rps / 2));
  console.log(`\nhalf of the gateway's maximum: open loop at ${rate} req/s, ${seconds * 2} s each`);
  const halfGateway = await openLoop(gateway, rate, seconds * 2000);
  const halfDirect = await openLoop(direct, rate, seconds * 2000);
  console.log(
    table(
      ['path', 'req/s', 'p50 ms', 'p95 ms', 'p99 ms', 'errors'],
      [row('gateway → worker', halfGateway), row('worker directly', halfDirect)],
    ),
  );
  const addedP99 =
    percentile(Array.from(halfGateway.latenciesMs), 99) -
    percentile(Array.from(halfDirect.latenciesMs), 99);
  if (sweep) {
    const rows: (string | number)[][] = [];
    for (const fraction of [0.1, 0.2, 0.3, 0.4]) {
      const r = Math.floor(maxGateway.rps * fraction);
      const g = await openLoop(gateway, r, seconds * 1000);
      const d = await openLoop(direct, r, seconds * 1000);
      const p99g = percentile(Array.from(g.latenciesMs), 99);
      const p99d = percentile(Array.from(d.latenciesMs), 99);
      rows.push([`${Math.round(fraction * 100)}% (${r}/s)`, p99g, p99d, p99g - p99d]);
    }
    console.log(table(['load', 'gateway p99', 'direct p99', 'added p99 ms'], rows));
  }
  console.log("(the JavaScript client, gateway and worker share this machine's 2 cores)");
  goal('e2e', 'gateway_added_p99_ms', addedP99, '<=', 1);
}

export async function run(args: readonly string[]): Promise<void> {
  const concurrency = option(args, 'concurrency', 16);
  const seconds = option(args, 'seconds', 5);
  const bench = await startBenchPlatform({ tempPrefix: 'kiln-bench-e2e-' });
  const { platform, modelPath, workerUrl } = bench;
  try {
    const metadata = (await (await fetch(`${workerUrl}/v2/models/bench`)).json()) as {
      inputs: { name: string; shape: number[] }[];
    };
    const input = metadata.inputs[0];
    const features = input?.shape[1] ?? 5;
    const rowValues = Array.from({ length: features }, (_, i) => (i % 3 === 0 ? 0.5 : -0.25 * i));
    const body = JSON.stringify({
      inputs: [
        { name: input?.name ?? 'input', shape: [1, features], datatype: 'FP32', data: rowValues },
      ],
    });
    const gateway: LoadTarget = {
      origin: platform.gatewayUrl,
      path: '/v2/models/bench/infer',
      body,
    };
    const direct: LoadTarget = { origin: workerUrl, path: '/v2/models/bench/infer', body };

    if (args.includes('--pin')) pinProcesses(workerUrl);
    console.log(`model ${modelPath.replace(root, '')}: ${features} features; one row per request`);
    console.log('warming up…');
    await closedLoop(gateway, concurrency, 1000);
    await closedLoop(direct, concurrency, 1000);
    if (wrkAvailable()) withWrk(platform.gatewayUrl, workerUrl, body, seconds);
    else {
      console.log(
        'wrk is not installed (apt-get install wrk): measuring with the JavaScript client instead',
      );
      await withJsClient(gateway, direct, concurrency, seconds, args.includes('--sweep'));
    }
  } finally {
    await bench.close();
  }
}
