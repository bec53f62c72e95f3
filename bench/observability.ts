// `npm run bench -- observability [--seconds 3] [--rounds 5] [--concurrency 16]`: what
// observability costs the serving path. The tree endpoint `bench` (fixtures/trees/
// bench-fraud.ubj, one row per request, its slice in `parameters.country`) is served through
// the gateway by two platforms side by side:
//
//   plain    started without an OTLP collector: no tracing SDK is loaded anywhere
//   traced   started with `otlpUrl` pointing at a local OTLP/HTTP receiver in this process
//            (it answers 200 and counts what it gets, so the export's cost is in the figures)
//
// and each case puts the endpoint's observability settings in force through
// `PUT /api/v1/endpoints/bench/observability` (no restart), then runs a closed loop:
//
//   off                    plain, no settings                      the baseline
//   off (A/A)              the baseline again: its loss is the noise of the measurement
//   otlp on, trace 0%      traced, tracing.sampleRate 0: the tracing SDK loaded, nothing sampled
//   sketches               plain, drift on (input/output sketches on the workers, by slice;
//                          the gateway marks at most drift.maxRequestsPerSecond, default 200)
//   sketches, every request  the same without that bound: every request sketched
//   sketches + trace 1%    traced, drift on, tracing.sampleRate 0.01   the GOAL case
//   trace 100%             traced, tracing.sampleRate 1
//   sketches + trace 100%  traced, both
//
// Each round runs a baseline, a case, the baseline, the next case, …, in another order each
// round: a case is compared with runs of its baseline either side of it, so a machine whose
// speed drifts (2 shared cores here) weighs on both alike. The baseline is on the case's own
// platform (the same processes): `off` for plain cases and for `otlp on, trace 0%`, which is
// the traced cases' baseline; a traced case's loss against `off` chains the two. A loss is
// 1 - the median over rounds of req/s over the neighbours' mean; latency percentiles pool
// every round.
//
// Beside throughput, each case's CPU per request: the user + system time of the platform's
// gateway and worker processes (/proc/PID/stat) over the measured loop, divided by its
// answers. On a shared machine throughput swings with the neighbours' load; CPU per request
// barely does, and when serving is CPU-bound throughput lost = 1 - cpu(off) / cpu(case).
//
// With two or more CPUs (and taskset), the gateway and worker processes of both platforms run
// on CPUs 1..n-1 and this process (the load generator, the control planes and the OTLP
// receiver) on CPU 0 (`--no-pin`: no pinning): the clients then never take the servers' CPU,
// so a case's throughput is what the serving processes manage on the CPU they have, and a
// 5 % difference stands out of the noise (unpinned on 2 cores, an A/A run swung 5-15 %).
//
// GOAL observability.overhead_fraction <= 0.05: 1 - rps(sketches + trace 1%) / rps(off).
// The 100 %-sampling cost is printed beside it (no goal: it is the price of full tracing).

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync, readdirSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { call } from '../test/helpers/platform.ts';
import { closedLoop, type LoadResult, type LoadTarget } from './_load.ts';
import { startBenchPlatform, type BenchPlatform } from './_platform.ts';
import { failureProblem, goal, percentile, table } from './_report.ts';
import {
  sketchRecordMicros,
  sliceFromBodyMicros,
  traceRequestMicros,
} from './_observability-costs.ts';

const root = new URL('../', import.meta.url).pathname;

function option(args: readonly string[], name: string, fallback: number): number {
  const at = args.indexOf(`--${name}`);
  const value = at >= 0 ? Number(args[at + 1]) : fallback;
  return Number.isFinite(value) && value > 0 ? value : fallback;
}

interface Case {
  readonly name: string;
  readonly platform: 'plain' | 'traced';
  readonly settings: Record<string, unknown>;
}

const drift = {
  enabled: true,
  sliceKey: 'country',
  slicePath: '$.parameters.country',
  windowMs: 60_000,
};

const cases: readonly Case[] = [
  { name: 'off', platform: 'plain', settings: {} },
  // The baseline measured as a case: its "lost" is the noise floor of this machine.
  { name: 'off (A/A)', platform: 'plain', settings: {} },
  // The traced platform with nothing sampled for the endpoint: the SDK loaded, no span made.
  // (Explicitly 0: an endpoint without tracing settings is sampled at the default rate.)
  { name: 'otlp on, trace 0%', platform: 'traced', settings: { tracing: { sampleRate: 0 } } },
  { name: 'sketches', platform: 'plain', settings: { drift } },
  // Drift's bound on marked requests off: every request sketched.
  {
    name: 'sketches, every request',
    platform: 'plain',
    settings: { drift: { ...drift, maxRequestsPerSecond: null } },
  },
  {
    name: 'sketches + trace 1%',
    platform: 'traced',
    settings: { drift, tracing: { sampleRate: 0.01 } },
  },
  {
    name: 'trace 100%',
    platform: 'traced',
    settings: { tracing: { sampleRate: 1 } },
  },
  {
    name: 'sketches + trace 100%',
    platform: 'traced',
    settings: { drift, tracing: { sampleRate: 1 } },
  },
];

/**
 * Resolves once the receiver has had no export for `quietMs` (the SDK exports queued spans
 * every second), or after `maxMs` at most: a condition, not a fixed pause.
 */
async function exportsSettled(
  receiver: { readonly exports: number },
  quietMs = 1_500,
  maxMs = 30_000,
): Promise<void> {
  const started = performance.now();
  let seen = receiver.exports;
  let quietSince = performance.now();
  while (performance.now() - quietSince < quietMs && performance.now() - started < maxMs) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    if (receiver.exports !== seen) {
      seen = receiver.exports;
      quietSince = performance.now();
    }
  }
}

/** An OTLP/HTTP collector stand-in: answers every export 200 and counts them. */
class OtlpReceiver {
  exports = 0;
  bytes = 0;
  private readonly server = createServer((request: IncomingMessage, response: ServerResponse) => {
    let size = 0;
    request.on('data', (chunk: Buffer) => (size += chunk.length));
    request.on('end', () => {
      if (request.url?.startsWith('/v1/traces') === true) {
        this.exports += 1;
        this.bytes += size;
      }
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end('{}');
    });
  });

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

const ticksPerSecond = 100; // CLK_TCK on Linux

/**
 * The serving processes on CPUs 1..n-1, this process on CPU 0 (every thread of each, with
 * util-linux's taskset); says what it did, or why it did not.
 */
function pinServing(pids: readonly number[]): string {
  const cpus = availableParallelism();
  if (cpus < 2) return 'CPUs: not pinned (one CPU)';
  const serving = cpus === 2 ? '1' : `1-${cpus - 1}`;
  try {
    for (const pid of pids) {
      execFileSync('taskset', ['-a', '-p', '-c', serving, String(pid)], { stdio: 'ignore' });
    }
    execFileSync('taskset', ['-a', '-p', '-c', '0', String(process.pid)], { stdio: 'ignore' });
  } catch (error) {
    return `CPUs: not pinned (taskset failed: ${(error as Error).message.split('\n')[0]})`;
  }
  return `CPUs: gateway and worker processes (${pids.length}) pinned to CPU ${serving}; clients, control planes and the OTLP receiver to CPU 0`;
}

/** CPU time (user + system, ms) of `pids` so far; a pid gone counts 0. */
function cpuMs(pids: readonly number[]): number {
  let ticks = 0;
  for (const pid of pids) {
    try {
      // Fields after the command (which may hold spaces): state is 3rd, utime 14th, stime 15th.
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // gone
    }
  }
  return (ticks * 1000) / ticksPerSecond;
}

/** The platform's gateway (its command line names the home) and its replicas' workers. */
async function servingPids(bench: BenchPlatform): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const command = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      if (command.includes('--state-dir') && command.includes(bench.home)) pids.push(Number(entry));
    } catch {
      // gone
    }
  }
  const status = (await call(bench.platform.url, 'GET', '/api/v1/endpoints/bench')).body as {
    status: { replicas: { pid: number | null }[] };
  };
  for (const replica of status.status.replicas) if (replica.pid !== null) pids.push(replica.pid);
  return pids;
}

/** Puts `settings` in force on the endpoint `bench` (PUT replaces them whole). */
async function applySettings(
  bench: BenchPlatform,
  settings: Record<string, unknown>,
): Promise<void> {
  const response = await call(
    bench.platform.url,
    'PUT',
    '/api/v1/endpoints/bench/observability',
    settings,
  );
  if (response.status !== 200) {
    throw new Error(`observability settings refused: ${JSON.stringify(response.body)}`);
  }
}

function requestBody(): string {
  const fixture = JSON.parse(
    readFileSync(`${root}fixtures/trees/bench-fraud.rows.json`, 'utf8'),
  ) as { rows: (number | null)[][] };
  const row = fixture.rows.find((r) => r.every((v) => v !== null)) ?? fixture.rows[0] ?? [];
  return JSON.stringify({
    parameters: { country: 'de' },
    inputs: [{ name: 'input', shape: [1, row.length], datatype: 'FP32', data: row }],
  });
}

interface CaseFigures {
  /** Per round: this case's req/s over the mean of the baseline runs either side of it. */
  readonly rpsRatios: number[];
  /** Per round: this case's CPU per request over the baseline's either side. */
  readonly cpuRatios: number[];
  readonly rps: number[];
  readonly latencies: number[];
  errors: number;
  exports: number;
  cpuMs: number;
  answers: number;
}

interface Run {
  readonly rps: number;
  readonly cpuUsPerRequest: number;
}

function median(values: readonly number[]): number {
  return percentile(
    [...values].sort((a, b) => a - b),
    50,
  );
}

export async function run(args: readonly string[]): Promise<void> {
  const seconds = option(args, 'seconds', 3);
  const rounds = Math.floor(option(args, 'rounds', 5));
  const concurrency = Math.floor(option(args, 'concurrency', 16));
  const receiver = new OtlpReceiver();
  const otlpUrl = await receiver.start();
  const plain = await startBenchPlatform({ tempPrefix: 'kiln-bench-obs-plain-' });
  let traced: BenchPlatform | undefined;
  try {
    // The platform's OTLP option (issue 15 tracing: `kiln up --otlp URL`); a platform that
    // does not know it starts untraced, and the export counts below say so.
    traced = await startBenchPlatform({
      tempPrefix: 'kiln-bench-obs-traced-',
      platform: { otlpUrl },
    });
    const platforms = { plain, traced };
    const pids = { plain: await servingPids(plain), traced: await servingPids(traced) };
    console.log(
      args.includes('--no-pin')
        ? 'CPUs: not pinned (--no-pin): clients and servers share every CPU'
        : pinServing([...pids.plain, ...pids.traced]),
    );
    const body = requestBody();
    const target = (bench: BenchPlatform): LoadTarget => ({
      origin: bench.gatewayUrl,
      path: '/v2/models/bench/infer',
      body,
    });
    console.log(
      `observability: ${concurrency} closed-loop clients, ${rounds} rounds of ${seconds} s per run, ` +
        'the tree endpoint through the gateway (one row per request); each case runs between two baseline runs',
    );
    console.log('warming up…');
    for (const bench of [plain, traced, plain, traced]) {
      await closedLoop(target(bench), concurrency, 2000);
    }

    const figures = new Map<string, CaseFigures>(
      cases.map((c) => [
        c.name,
        {
          rpsRatios: [],
          cpuRatios: [],
          rps: [],
          latencies: [],
          errors: 0,
          exports: 0,
          cpuMs: 0,
          answers: 0,
        },
      ]),
    );
    let current: Record<'plain' | 'traced', string> = { plain: '', traced: '' };
    let lastRunTraced = true; // the warm-up ran traced load
    const measure = async (c: Case, label: string): Promise<Run> => {
      const bench = platforms[c.platform];
      const key = JSON.stringify(c.settings);
      if (current[c.platform] !== key) {
        await applySettings(bench, c.settings);
        current = { ...current, [c.platform]: key };
        // The gateway picks the settings up from its next snapshot; a short load lets it
        // (and the JIT) settle before the measured one.
        await closedLoop(target(bench), concurrency, 500);
      }
      // A traced run leaves spans queued in the gateway's and worker's export queues (exported
      // every second, 512 at a time): let them go out before the next window, or their export
      // CPU lands in whichever case runs next (the 'otlp on, trace 0%' baseline showed dozens of
      // exports of the 100 % cases' backlog and "lost" 6.5 %, chained into the goal's figure).
      if (lastRunTraced) await exportsSettled(receiver);
      const exportsBefore = receiver.exports;
      const cpuBefore = cpuMs(pids[c.platform]);
      const result: LoadResult = await closedLoop(target(bench), concurrency, seconds * 1000);
      const cpuUsed = cpuMs(pids[c.platform]) - cpuBefore;
      lastRunTraced = c.platform === 'traced';
      const answers = result.latenciesMs.length;
      const entry = figures.get(c.name);
      if (entry !== undefined) {
        entry.rps.push(result.rps);
        for (const ms of result.latenciesMs) entry.latencies.push(ms);
        entry.errors += result.errors;
        entry.exports += receiver.exports - exportsBefore;
        entry.cpuMs += cpuUsed;
        entry.answers += answers;
      }
      const cpuUsPerRequest = (1000 * cpuUsed) / Math.max(1, answers);
      console.log(
        `  ${label.padEnd(30)} ${result.rps.toFixed(0).padStart(6)} req/s, ${cpuUsPerRequest.toFixed(0).padStart(4)} µs CPU/req` +
          (result.errors > 0 ? `, ${result.errors} errors ${JSON.stringify(result.statuses)}` : ''),
      );
      return { rps: result.rps, cpuUsPerRequest };
    };

    const baseline = cases[0] as Case;
    // Each case is compared with a baseline on its own platform (the same processes): on the
    // traced one that is `otlp on, trace 0%`, itself compared with `off` on the plain one (the
    // SDK's own cost); a traced case's loss against `off` chains the two.
    const tracedBaseline = cases.find((c) => c.name === 'otlp on, trace 0%') as Case;
    const baselineOf = (c: Case): Case =>
      c.platform === 'plain' || c === tracedBaseline ? baseline : tracedBaseline;
    const others = cases.slice(1);
    for (let round = 0; round < rounds; round++) {
      // base, A, base, B, base, …: each case between two runs of its baseline, in another
      // order each round (rotated, reversed every other round).
      const order = others.map((_, i) => others[(i + round) % others.length] as Case);
      if (round % 2 === 1) order.reverse();
      let last: { readonly of: Case; readonly run: Run } | null = null;
      for (const c of order) {
        const base = baselineOf(c);
        const before =
          last !== null && last.of === base
            ? last.run
            : await measure(base, `round ${round + 1}: ${base.name}`);
        const run = await measure(c, `round ${round + 1}: ${c.name}`);
        const after = await measure(base, `round ${round + 1}: ${base.name}`);
        last = { of: base, run: after };
        const entry = figures.get(c.name);
        entry?.rpsRatios.push(run.rps / ((before.rps + after.rps) / 2));
        entry?.cpuRatios.push(
          run.cpuUsPerRequest / ((before.cpuUsPerRequest + after.cpuUsPerRequest) / 2),
        );
      }
    }

    /** Throughput lost against `off`: a traced case chains its loss with the SDK's. */
    const lost = (name: string): number => {
      if (name === baseline.name) return 0;
      const own = median(figures.get(name)?.rpsRatios ?? []);
      const c = cases.find((x) => x.name === name);
      if (c === undefined || baselineOf(c) === baseline) return 1 - own;
      return 1 - own * median(figures.get(tracedBaseline.name)?.rpsRatios ?? []);
    };
    const lostByCpu = (name: string): number => {
      if (name === baseline.name) return 0;
      const own = median(figures.get(name)?.cpuRatios ?? []);
      const c = cases.find((x) => x.name === name);
      if (c === undefined || baselineOf(c) === baseline) return 1 - 1 / own;
      return 1 - 1 / (own * median(figures.get(tracedBaseline.name)?.cpuRatios ?? []));
    };
    const rows = cases.map((c) => {
      const entry = figures.get(c.name);
      const sorted = [...(entry?.latencies ?? [])].sort((a, b) => a - b);
      return [
        c.name,
        median(entry?.rps ?? []),
        lost(c.name),
        percentile(sorted, 50),
        percentile(sorted, 95),
        percentile(sorted, 99),
        Math.round((1000 * (entry?.cpuMs ?? 0)) / Math.max(1, entry?.answers ?? 0)),
        lostByCpu(c.name),
        String(entry?.errors ?? 0),
        c.platform === 'traced' ? String(entry?.exports ?? 0) : '-',
      ] as (string | number)[];
    });
    console.log('');
    console.log(
      table(
        [
          'case',
          'req/s',
          'lost',
          'p50 ms',
          'p95 ms',
          'p99 ms',
          'CPU µs/req',
          'lost by CPU',
          'errors',
          'OTLP exports',
        ],
        rows,
      ),
    );
    console.log(
      "lost: 1 - the median over rounds of the case's req/s / its neighbouring baseline runs' mean",
    );
    console.log(
      "(traced cases: against 'otlp on, trace 0%', chained with its loss against 'off');",
    );
    console.log(
      'lost by CPU: 1 - 1 / the same ratio of CPU per request (gateway + worker processes)',
    );
    if ((figures.get('trace 100%')?.exports ?? 0) === 0) {
      console.log(
        'no OTLP export reached the receiver at 100 % sampling: tracing is not wired on this build',
      );
    }
    console.log('(client, gateway, workers and the OTLP receiver share this machine)');
    console.log(
      `100 % sampling costs ${(100 * lost('trace 100%')).toFixed(1)} % of the throughput alone ` +
        `(${(100 * lostByCpu('trace 100%')).toFixed(1)} % by CPU), ` +
        `${(100 * lost('sketches + trace 100%')).toFixed(1)} % with sketches ` +
        `(${(100 * lostByCpu('sketches + trace 100%')).toFixed(1)} % by CPU)`,
    );
    // Were the sketches on? The worker answers what it sketched since the last take.
    await applySettings(plain, { drift });
    await closedLoop(target(plain), concurrency, 500);
    const sketched = (await (await fetch(`${plain.workerUrl}/kiln/v1/sketches`)).json()) as {
      overall?: { rows?: number } | null;
    };
    console.log(
      `sketches on: the worker had sketched ${sketched.overall?.rows ?? 0} rows since its last take`,
    );
    // In isolation (bench/_observability-costs.ts): steadier than the end-to-end figures.
    const sketchMicros = sketchRecordMicros();
    const sliceMicros = sliceFromBodyMicros(body, drift.slicePath);
    const tracedCost = await traceRequestMicros(otlpUrl);
    const cpuBaseline =
      (1000 * (figures.get(baseline.name)?.cpuMs ?? 0)) /
      Math.max(1, figures.get(baseline.name)?.answers ?? 0);
    const share = (micros: number): string => `${((100 * micros) / cpuBaseline).toFixed(1)} %`;
    console.log(
      `in isolation, against the ${cpuBaseline.toFixed(0)} µs of gateway + worker CPU a request takes with observability off:`,
    );
    console.log(
      table(
        ['cost per request', 'µs', 'share'],
        [
          ['sketches (ServingSketches.record)', sketchMicros, share(sketchMicros)],
          [
            'the slice from the body path (gateway; body parsed once)',
            sliceMicros,
            share(sliceMicros),
          ],
          [
            `a traced request (7 spans, OTLP export; ${tracedCost.exported} spans exported, ${tracedCost.dropped} dropped)`,
            tracedCost.micros,
            share(tracedCost.micros),
          ],
          ['tracing at 1 %', tracedCost.micros / 100, share(tracedCost.micros / 100)],
          [
            'sketches + slice + tracing at 1 %',
            sketchMicros + sliceMicros + tracedCost.micros / 100,
            share(sketchMicros + sliceMicros + tracedCost.micros / 100),
          ],
        ],
      ),
    );
    // A throughput goal: it does not count when more than 0.1 % of the compared runs' requests
    // failed (the baselines' and the goal case's).
    const failed = failureProblem(
      [...new Set([baseline.name, tracedBaseline.name, 'sketches + trace 1%'])].map((name) => {
        const f = figures.get(name);
        return {
          label: name,
          requests: (f?.answers ?? 0) + (f?.errors ?? 0),
          errors: f?.errors ?? 0,
        };
      }),
    );
    goal('observability', 'overhead_fraction', lost('sketches + trace 1%'), '<=', 0.05, failed);
  } finally {
    await traced?.close();
    await plain.close();
    await receiver.close();
  }
}
