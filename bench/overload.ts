// `npm run bench -- overload [--seconds N] [--factor F] [--pin]`: twice the capacity (`--factor`, default
// 2) offered as an open loop; does
// the platform keep serving its capacity at a bounded latency and shed the rest with 429?
//
// The model: the XGBoost bench model (fixtures/trees/bench-fraud.ubj), batching off (the
// trees default), one replica, one row per request. The guard: the gateway's per-endpoint
// `maxConcurrency`. Why this and not the MLP with a bounded batching queue: the gateway
// refuses past `maxConcurrency` before reading a byte of the body (429 KILN_ENDPOINT_BUSY,
// Retry-After: 1), so a shed request costs almost nothing; a full batching queue answers 429
// only in the worker, after the gateway has read, checked and forwarded the body, so under 2×
// overload every shed request costs nearly what a served one does, on the same cores.
//
// 1. Capacity: the endpoint without a limit, closed loop at 4, 8, 16 and 32 connections, 3 s
//    each, with the JavaScript client (bench/_load.ts), the same client as the open loop, so
//    the client's own CPU cost per request is the same on both sides. Capacity = the best.
// 2. maxConcurrency = the fewest connections that reached 90 % of capacity (the knee: more
//    in flight only adds queueing, Little's law), deployed as the endpoint `guarded`.
// 3. A burst of 4 × maxConcurrency requests at once, to show the 429s and their Retry-After.
// 4. Open loop at 2 × capacity for `--seconds` (default 20): goodput (200s per second) vs
//    capacity, the p99 of the admitted (200) requests from their scheduled send time, and
//    the 429s.

import { spawnSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';

import { call } from '../test/helpers/platform.ts';
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

export async function run(args: readonly string[]): Promise<void> {
  const seconds = option(args, 'seconds', 20);
  const factorAt = args.indexOf('--factor');
  const factor = factorAt >= 0 ? Number(args[factorAt + 1]) || 2 : 2;
  const bench = await startBenchPlatform({ tempPrefix: 'kiln-bench-overload-' });
  const { platform, modelPath } = bench;
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
    const body = JSON.stringify({
      inputs: [{ name: inputName, shape: [1, row.length], datatype: 'FP32', data: row }],
    });
    console.log(`model ${modelPath.replace(root, '')}, batching off, one row per request`);
    const pin = args.includes('--pin');
    if (pin) pinProcesses();

    // 1. capacity
    const open: LoadTarget = { origin: platform.gatewayUrl, path: '/v2/models/bench/infer', body };
    await closedLoop(open, 8, 1000);
    const sweep: { connections: number; rps: number; p50: number; p99: number }[] = [];
    for (const connections of capacityLevels) {
      const r = await closedLoop(open, connections, 3000);
      const l = Array.from(r.latenciesMs);
      sweep.push({ connections, rps: r.rps, p50: percentile(l, 50), p99: percentile(l, 99) });
    }
    const capacity = Math.max(...sweep.map((s) => s.rps));
    const knee = sweep.find((s) => s.rps >= 0.9 * capacity)?.connections ?? 8;
    console.log('\ncapacity: closed loop, JavaScript client, no limit, 3 s per point');
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
    await deployEndpoint(platform.url, platform.gatewayUrl, 'guarded', 'bench', {
      batching: null,
      maxConcurrency: knee,
    });
    await call(platform.url, 'DELETE', '/api/v1/endpoints/bench');
    if (pin) pinProcesses();
    const guarded: LoadTarget = { ...open, path: '/v2/models/guarded/infer' };
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
      `\nburst of ${burst.length} at once: ${burst.length - refused.length} served, ${refused.length} × 429` +
        (refused[0] === undefined
          ? ''
          : ` (Retry-After: ${refused[0].retryAfter ?? 'missing'}; ${refused[0].text.slice(0, 120)})`),
    );

    // 4. twice the capacity, open loop
    const rate = Math.round(factor * capacity);
    const connections = Math.max(64, knee * 4);
    console.log(
      `\nopen loop at ${rate} req/s (${factor} × capacity) for ${seconds} s, ${connections} client connections`,
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
      `${served} served, ${shed} shed with 429 (${((100 * shed) / Math.max(1, r.requests)).toFixed(1)} %) in ${r.seconds.toFixed(1)} s\n`,
    );
    goal('overload', 'goodput_fraction', goodput / capacity, '>=', 0.9);
    goal('overload', 'admitted_p99_ms', p99, '<=', sloMs);
  } finally {
    await bench.close();
  }
}
