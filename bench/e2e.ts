// `npm run bench -- e2e [--seconds N] [--pin]`: Open Inference Protocol v2 infer on an
// XGBoost endpoint (one row per request), through the gateway vs straight to the worker, on
// this machine's loopback.
//
// 1. The gateway's maximum req/s (2xx answers), closed loop at a few connection counts, the
//    best point: wrk (Debian's `wrk`, a C client) when installed, else the JavaScript client
//    (bench/_load.ts). Measured twice, on a platform with 1 gateway process and on one with N
//    (`platform: { gatewayProcesses: N }`, N = os.availableParallelism(), the default of
//    `kiln up`). On a 2-core machine the load generator competes with the gateways and the
//    worker for the same cores, so N processes gain less than they would with the client on
//    another machine.
// 2. The gateway's added latency at equal OFFERED RATE: on the N-process platform, an open
//    loop (bench/_open-loop.ts: a generator in its own process — the C one, built on first
//    use, where a C compiler is installed — a fixed-rate timetable, latency from each
//    request's intended send time) at half the gateway's maximum from
//    step 1, once through the gateway and once straight to the worker. Added p99 = gateway
//    p99 − direct p99 at the same rate. (At equal connections instead, a closed loop gives the
//    faster direct path more load, and the difference went negative.) A run whose achieved
//    rate fell short of the target by more than 5 %, or with more than 0.1 % failed requests,
//    is printed as such and the goal reads met=no.
// --pin (Linux): this process and its load generators on CPU 0, gateways and worker on CPU 1.

import { readdirSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { spawnSync } from 'node:child_process';

import { closedLoop, type LoadTarget } from './_load.ts';
import {
  failedBreakdown,
  openLoopGenerator,
  openLoopInChild,
  rateProblem,
  type OpenLoopSummary,
} from './_open-loop.ts';
import { startBenchPlatform, type BenchPlatform } from './_platform.ts';
import { failureProblem, goal, percentile, table } from './_report.ts';
import { runWrk, wrkAvailable } from './_wrk.ts';

const root = new URL('../', import.meta.url).pathname;
const inferPath = '/v2/models/bench/infer';
const maxConnectionLevels = [8, 32, 64] as const;
const gatewayEntry = /gateway\/main\.(ts|js)\b/;

function option(args: readonly string[], name: string, fallback: number): number {
  const i = args.indexOf(`--${name}`);
  const value = i >= 0 ? Number(args[i + 1]) : fallback;
  return Number.isFinite(value) && value > 0 ? value : fallback;
}

/** Pids of this process's serving gateway processes (descendants); null off Linux. */
function gatewayPids(): number[] | null {
  let entries: string[];
  try {
    entries = readdirSync('/proc').filter((e) => /^\d+$/.test(e));
  } catch {
    return null;
  }
  const parent = new Map<number, number>();
  const command = new Map<number, string>();
  for (const e of entries) {
    try {
      const stat = readFileSync(`/proc/${e}/stat`, 'utf8');
      // pid (comm) state ppid …: comm may hold spaces, so read after the last ')'.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parent.set(Number(e), ppid);
      command.set(Number(e), readFileSync(`/proc/${e}/cmdline`, 'utf8').replaceAll('\0', ' '));
    } catch {
      // gone meanwhile
    }
  }
  const descends = (pid: number): boolean => {
    for (let p = parent.get(pid), hops = 0; p !== undefined && p > 1 && hops < 64; hops++) {
      if (p === process.pid) return true;
      p = parent.get(p);
    }
    return false;
  };
  const all = [...command.entries()]
    .filter(([pid, cmd]) => gatewayEntry.test(cmd) && descends(pid))
    .map(([pid]) => pid);
  // With N > 1 the gateway entry is a node:cluster supervisor that serves nothing, and its
  // children run the same entry: count those.
  const members = all.filter((pid) => all.includes(parent.get(pid) ?? -1));
  return members.length > 0 ? members : all;
}

/** With --pin: this process (and so its load generators) on CPU 0, gateways and worker on 1. */
function pinProcesses(): void {
  const pids = (pattern: string): string[] =>
    spawnSync('pgrep', ['-f', pattern], { encoding: 'utf8' })
      .stdout.split('\n')
      .filter((l) => l.trim() !== '');
  spawnSync('taskset', ['-cp', '0', String(process.pid)]);
  for (const pid of [...(gatewayPids() ?? []).map(String), ...pids('worker/main\\.(ts|js)')])
    spawnSync('taskset', ['-cp', '1', pid]);
  console.log('pinned: load generators → CPU 0; gateway(s) and worker → CPU 1');
}

interface MaxPoint {
  readonly connections: number;
  readonly rps: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly requests: number;
  readonly errors: number;
}

async function closedPoint(
  useWrk: boolean,
  target: LoadTarget,
  connections: number,
  seconds: number,
): Promise<MaxPoint> {
  if (useWrk) {
    const r = runWrk(target.origin + target.path, target.body, connections, seconds);
    return { connections, ...r };
  }
  const r = await closedLoop(target, connections, seconds * 1000);
  const l = Array.from(r.latenciesMs);
  return {
    connections,
    rps: r.rps,
    p50Ms: percentile(l, 50),
    p99Ms: percentile(l, 99),
    requests: r.requests,
    errors: r.errors,
  };
}

interface Platform {
  readonly bench: BenchPlatform;
  readonly gateway: LoadTarget;
  readonly direct: LoadTarget;
  /** Gateway processes seen running (null: could not count here). */
  readonly gatewayProcesses: number | null;
}

async function startPlatform(processes: number): Promise<Platform> {
  const bench = await startBenchPlatform({
    tempPrefix: 'kiln-bench-e2e-',
    platform: { gatewayProcesses: processes },
  });
  try {
    const metadata = (await (await fetch(`${bench.workerUrl}/v2/models/bench`)).json()) as {
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
    const counted = gatewayPids();
    return {
      bench,
      gateway: { origin: bench.gatewayUrl, path: inferPath, body },
      direct: { origin: bench.workerUrl, path: inferPath, body },
      gatewayProcesses: counted === null ? null : counted.length,
    };
  } catch (error) {
    await bench.close();
    throw error;
  }
}

/** The gateway's maximum 2xx req/s over the connection levels; prints its points. */
async function measureMaximum(
  label: string,
  p: Platform,
  useWrk: boolean,
  seconds: number,
  rows: (string | number)[][],
): Promise<MaxPoint> {
  await closedLoop(p.gateway, 16, 1000); // warm-up
  let best: MaxPoint | null = null;
  for (const c of maxConnectionLevels) {
    const point = await closedPoint(useWrk, p.gateway, c, seconds);
    rows.push([label, String(c), point.rps, point.p50Ms, point.p99Ms, point.errors]);
    if (best === null || point.rps > best.rps) best = point;
  }
  if (best === null) throw new Error('no connection levels');
  return best;
}

export async function run(args: readonly string[]): Promise<void> {
  const seconds = option(args, 'seconds', 5);
  const pin = args.includes('--pin');
  const useWrk = wrkAvailable();
  const n = availableParallelism();
  console.log(
    `e2e: one row per request, gateway → worker vs worker directly; ${n} CPUs here; load: ${useWrk ? 'wrk, one thread' : 'the JavaScript client (wrk is not installed: apt-get install wrk)'} for the maximum, ${seconds} s per point`,
  );

  // 1. Maximum with 1 gateway process.
  const maxRows: (string | number)[][] = [];
  const notes: string[] = [];
  const one = await startPlatform(1);
  let max1: MaxPoint;
  try {
    if (pin) pinProcesses();
    console.log(
      `model ${one.bench.modelPath.replace(root, '')}; gateway processes asked 1, running ${one.gatewayProcesses ?? 'unknown'}`,
    );
    max1 = await measureMaximum('1', one, useWrk, seconds, maxRows);
  } catch (error) {
    await one.bench.close();
    throw error;
  }

  // 2. Maximum with N gateway processes (the default); the goal is read on this platform.
  let goalPlatform: Platform = one;
  let maxGoal = max1;
  let goalProcesses = '1';
  if (n > 1) {
    await one.bench.close();
    const many = await startPlatform(n);
    goalPlatform = many;
    if (pin) pinProcesses();
    try {
      if (many.gatewayProcesses !== null && many.gatewayProcesses < 2) {
        notes.push(
          `${n} processes: not available in this build (asked for ${n} gateway processes, ${many.gatewayProcesses} running); the goal is read with 1`,
        );
        maxRows.push([String(n), 'n/a', 'not available in this build', '', '', '']);
      } else {
        maxGoal = await measureMaximum(String(n), many, useWrk, seconds, maxRows);
        goalProcesses = String(n);
        if (many.gatewayProcesses === null)
          notes.push(`${n} processes asked; could not count them here (no /proc)`);
      }
    } catch (error) {
      await many.bench.close();
      throw error;
    }
  }

  try {
    const direct = await closedPoint(useWrk, goalPlatform.direct, 32, seconds);
    console.log(`\nthe gateway's maximum (2xx answers per second), closed loop`);
    console.log(
      table(['gateway processes', 'conns', 'req/s', 'p50 ms', 'p99 ms', 'errors'], maxRows),
    );
    for (const note of notes) console.log(note);
    console.log(
      `maximum: 1 process ${Math.round(max1.rps)} req/s${goalProcesses === '1' ? '' : `, ${goalProcesses} processes ${Math.round(maxGoal.rps)} req/s (× ${(maxGoal.rps / max1.rps).toFixed(2)})`}; worker directly at 32 connections ${Math.round(direct.rps)} req/s`,
    );
    console.log(
      `(on ${n} cores the load generator competes with the gateway process(es) and the worker for the same cores: the maximum is this machine's, client included)`,
    );

    // 3. Equal offered rate, open loop, both paths.
    const rate = Math.max(50, Math.round(maxGoal.rps / 2));
    console.log(
      `\nequal offered rate: open loop at ${rate} req/s (half the ${goalProcesses}-process gateway's maximum) on both paths, ${seconds * 2} s each, latency from the intended send time; ${openLoopGenerator().note}`,
    );
    const runs: [string, OpenLoopSummary][] = [];
    for (const [label, target] of [
      ['gateway → worker', goalPlatform.gateway],
      ['worker directly', goalPlatform.direct],
    ] as const) {
      const summary = await openLoopInChild(
        { origin: target.origin, path: target.path, bodies: [target.body] },
        rate,
        seconds * 2000,
      );
      runs.push([label, summary]);
    }
    console.log(
      table(
        [
          'path',
          'sent/s',
          '2xx/s',
          'p50 ms',
          'p90 ms',
          'p99 ms',
          'p99.9 ms',
          'p99 from send',
          'max lag ms',
          'failed',
        ],
        runs.map(([label, s]) => [
          label,
          s.sentRatePerS,
          s.successRatePerS,
          s.p50Ms,
          s.p90Ms,
          s.p99Ms,
          s.p999Ms,
          s.p99FromSendMs,
          s.maxSendLagMs,
          s.failed,
        ]),
      ),
    );
    const problems: string[] = [];
    for (const [label, s] of runs) {
      const short = rateProblem(label, s);
      if (short !== null) problems.push(short);
    }
    const failed = failureProblem(
      runs.map(([label, s]) => ({
        label: `${label} [${failedBreakdown(s)}]`,
        requests: s.successes + s.failed,
        errors: s.failed,
      })),
    );
    if (failed !== null) problems.push(failed);
    for (const problem of problems) console.log(`short: ${problem}`);
    const g = runs[0]?.[1];
    const d = runs[1]?.[1];
    const addedP99 = g !== undefined && d !== undefined ? g.p99Ms - d.p99Ms : Number.NaN;
    const addedP50 = g !== undefined && d !== undefined ? g.p50Ms - d.p50Ms : Number.NaN;
    console.log(
      `gateway added latency at ${rate} req/s offered to both: p50 ${addedP50.toFixed(3)} ms, p99 ${addedP99.toFixed(3)} ms`,
    );
    console.log("(load generator, gateway(s) and worker share this machine's cores)");
    goal(
      'e2e',
      'gateway_added_p99_ms',
      addedP99,
      '<=',
      0.3,
      problems.length === 0 ? null : problems.join('; '),
    );
  } finally {
    await goalPlatform.bench.close();
  }
}
