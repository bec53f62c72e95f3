// `npm run bench -- tail [--seconds N] [--rounds N] [--connections N] [--variants a,b] [--no-flask]`:
// where the p99 at saturation comes from (issue 16). The status-quo saturation case — the
// XGBoost demo model (fixtures/trees/bench-fraud.ubj), 1 row per request, 64 connections,
// closed loop, wrk with one thread — run against one Kiln platform per variant and against
// gunicorn (2 sync workers, as in status-quo), the runs interleaved round by round so the
// machine's other load falls on every side alike. Beside each run's p50/p99:
//
//   per process (gateway, worker, wrk, this bench process with the control plane, gunicorn's
//   workers): CPU in cores, run-queue wait (ms per second runnable but not running, from
//   /proc/<pid>/task/*/schedstat), voluntary / involuntary context switches per second;
//   the machine's busy CPU, so what other tenants took shows;
//   from the Kiln processes themselves (KILN_DIAGNOSTICS_DIR, src/observability/
//   process-diagnostics.ts): event-loop delay (the worst second's p99, and the max), GC
//   pauses (count, ms per second, the longest; minor vs major).
//
// Variants (one platform each, started side by side; --variants picks and orders them):
//   base       the platform as it ships
//   semi4/16/64  gateway and workers with --max-semi-space-size=4 / 16 / 64 (MB; V8 grows
//              the young generation under a high allocation rate: the gateway's reaches 16)
//   serialgc   KILN_V8_FLAGS=--no-parallel-scavenge: a minor GC on the main thread alone, not
//              waiting for helper threads that must first get a CPU
//   pool1      NODE_OPTIONS=--v8-pool-size=1: one V8 helper thread instead of four
//   niced      base, with this session's autogroup (bench, gateway, worker, wrk) at nice -10
//              during its windows: a probe (root only) of how much of the tail is other
//              tenants' work on the run queue
//   cpuprof    base, with a CPU profile of the gateway and worker written at exit (the folder
//              is printed; Node 20 refuses --cpu-prof in NODE_OPTIONS, so the in-process
//              inspector records it: KILN_DIAGNOSTICS_CPU_PROFILE=1)
// Needs Linux (/proc) and wrk; without wrk it says so and stops.

import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { startBenchPlatform, type BenchPlatform } from './_platform.ts';
import { table } from './_report.ts';
import { parseWrkOutput, wrkScript, type WrkResult } from './_wrk.ts';
import {
  childPids,
  machineBusyMs,
  procDelta,
  sampleProc,
  type ProcRates,
  type ProcSample,
} from './_proc-stats.ts';
import type {
  DiagnosticsHeader,
  DiagnosticsSecond,
} from '../src/observability/process-diagnostics.ts';
import { diagnosticsDirEnv } from '../src/observability/process-diagnostics.ts';

const root = new URL('../', import.meta.url).pathname;
const inferPath = '/v2/models/bench/infer';

/**
 * Variants run at a higher scheduling priority (this session's autogroup — the bench, the
 * gateway, the worker and wrk — reniced during their windows): not a fix but a probe — if
 * the tail shrinks when other tenants' work can no longer delay Kiln's processes, the tail
 * was the run queue. Root (CAP_SYS_NICE) only; a short window.
 */
const variantNice: Record<string, number> = { niced: -10 };

const variantEnv: Record<string, Record<string, string>> = {
  niced: {},
  base: {},
  semi4: { NODE_OPTIONS: '--max-semi-space-size=4' },
  semi16: { NODE_OPTIONS: '--max-semi-space-size=16' },
  semi64: { NODE_OPTIONS: '--max-semi-space-size=64' },
  serialgc: { KILN_V8_FLAGS: '--no-parallel-scavenge' },
  pool1: { NODE_OPTIONS: '--v8-pool-size=1' },
  // CPU profiles of the gateway and worker, written when they exit, left in the folder
  // printed at the end (process-diagnostics.ts).
  cpuprof: { KILN_DIAGNOSTICS_CPU_PROFILE: '1' },
};

function option(args: readonly string[], name: string, fallback: number): number {
  const i = args.indexOf(`--${name}`);
  const value = i >= 0 ? Number(args[i + 1]) : fallback;
  return Number.isFinite(value) && value > 0 ? Math.floor(value) : fallback;
}

// ── wrk, run asynchronously so its own process can be sampled ─────────────────────────────

interface Window {
  readonly wrk: WrkResult;
  /** Per process label: rates over the sampled window. */
  readonly procs: Map<string, ProcRates | null>;
  /** The whole machine's busy CPU over the window, in cores. */
  readonly machineCores: number;
  /** The window, wall clock (ms since the epoch). */
  readonly fromMs: number;
  readonly toMs: number;
}

/**
 * Runs wrk for `seconds`; samples every process in `pids` (and wrk) 0.5 s in and 0.3 s
 * before the end, so the window holds steady load only.
 */
async function runWindow(
  url: string,
  script: string,
  connections: number,
  seconds: number,
  pids: () => Map<string, number[]>,
  nice: number | null = null,
): Promise<Window> {
  const child = spawn(
    'wrk',
    ['-t1', `-c${connections}`, `-d${seconds}s`, '--latency', '-s', script, url],
    { stdio: ['ignore', 'pipe', 'ignore'] },
  );
  // With autogroup scheduling (Linux's default for desktop-like setups, on here) nice only
  // ranks processes within one session: the probe renices this session's autogroup, which
  // holds the platform's gateway and worker and wrk, for the window only.
  if (nice !== null) writeFileSync('/proc/self/autogroup', String(nice));
  let out = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (c: string) => (out += c));
  const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
  const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
  const sampleAll = (): Map<string, (ProcSample | null)[]> => {
    const all = new Map<string, (ProcSample | null)[]>();
    for (const [label, list] of pids()) all.set(label, list.map(sampleProc));
    all.set('wrk', [child.pid === undefined ? null : sampleProc(child.pid)]);
    return all;
  };
  await sleep(500);
  const fromMs = Date.now();
  const busyA = machineBusyMs();
  const a = sampleAll();
  const t0 = performance.now();
  await sleep(seconds * 1000 - 800);
  const b = sampleAll();
  const busyB = machineBusyMs();
  const elapsedS = (performance.now() - t0) / 1000;
  const toMs = Date.now();
  await exited;
  if (nice !== null) writeFileSync('/proc/self/autogroup', '0');
  const procs = new Map<string, ProcRates | null>();
  for (const [label, before] of a) {
    const after = b.get(label) ?? [];
    // Several processes under one label (gunicorn's workers): summed.
    const rates = before.map((s, i) => procDelta(s, after[i] ?? null));
    const known = rates.filter((r): r is ProcRates => r !== null);
    procs.set(
      label,
      known.length === 0
        ? null
        : known.reduce((x, y) => ({
            cpuCores: x.cpuCores + y.cpuCores,
            runQueueMsPerS: x.runQueueMsPerS + y.runQueueMsPerS,
            voluntaryPerS: x.voluntaryPerS + y.voluntaryPerS,
            involuntaryPerS: x.involuntaryPerS + y.involuntaryPerS,
            threads: x.threads + y.threads,
            helperCores: x.helperCores + y.helperCores,
          })),
    );
  }
  const machineCores =
    busyA === null || busyB === null ? Number.NaN : (busyB - busyA) / 1000 / elapsedS;
  return { wrk: parseWrkOutput(out), procs, machineCores, fromMs, toMs };
}

// ── the Kiln processes' own diagnostics ─────────────────────────────────────────────────

interface ProcessDiagnostics {
  readonly role: string;
  readonly pid: number;
  readonly seconds: DiagnosticsSecond[];
}

function readDiagnostics(dir: string): ProcessDiagnostics[] {
  const found: ProcessDiagnostics[] = [];
  for (const name of readdirSync(dir)) {
    if (!name.endsWith('.jsonl')) continue;
    const lines = readFileSync(join(dir, name), 'utf8').split('\n').filter(Boolean);
    const header = JSON.parse(lines[0] ?? '{}') as DiagnosticsHeader;
    const seconds: DiagnosticsSecond[] = [];
    for (const line of lines.slice(1)) {
      try {
        seconds.push(JSON.parse(line) as DiagnosticsSecond);
      } catch {
        // a line being written
      }
    }
    found.push({ role: header.role, pid: header.pid, seconds });
  }
  return found;
}

interface LoopAndGc {
  readonly loopP99Ms: number;
  readonly loopMaxMs: number;
  readonly gcCountPerS: number;
  readonly gcMsPerS: number;
  readonly gcMaxMs: number;
  readonly majorCount: number;
  readonly cpuCores: number;
  /** The young generation's largest size in the window, MB. */
  readonly newSpaceMb: number;
}

/** Over the seconds wholly inside [fromMs, toMs]: the worst second's p99, GC sums. */
function summarize(
  seconds: readonly DiagnosticsSecond[],
  fromMs: number,
  toMs: number,
): LoopAndGc | null {
  const inside = seconds.filter((s) => s.atMs - 1000 >= fromMs - 50 && s.atMs <= toMs + 50);
  if (inside.length === 0) return null;
  let gcCount = 0;
  let gcMs = 0;
  let gcMax = 0;
  let major = 0;
  for (const s of inside)
    for (const [kind, g] of Object.entries(s.gc)) {
      gcCount += g.count;
      gcMs += g.totalMs;
      gcMax = Math.max(gcMax, g.maxMs);
      if (kind !== 'minor') major += g.count;
    }
  return {
    loopP99Ms: Math.max(...inside.map((s) => s.loopDelay.p99Ms)),
    loopMaxMs: Math.max(...inside.map((s) => s.loopDelay.maxMs)),
    gcCountPerS: gcCount / inside.length,
    gcMsPerS: gcMs / inside.length,
    gcMaxMs: gcMax,
    majorCount: major,
    cpuCores: inside.reduce((t, s) => t + s.cpuUserMs + s.cpuSystemMs, 0) / 1000 / inside.length,
    newSpaceMb: Math.max(...inside.map((s) => (s.newSpaceBytes ?? 0) / 2 ** 20)),
  };
}

// ── sides ───────────────────────────────────────────────────────────────────────────────

interface Side {
  readonly name: string;
  readonly url: string;
  /** Labelled pids to sample (resolved per run: a worker may be replaced). */
  readonly pids: () => Map<string, number[]>;
  /** The Kiln side's diagnostics folder; null for gunicorn. */
  readonly diagnosticsDir: string | null;
  /** A priority (nice) to run gateway, worker and wrk at; null = as started. */
  readonly nice: number | null;
  close(): Promise<void>;
}

async function kilnSide(variant: string, name: string): Promise<Side> {
  const env = variantEnv[variant];
  if (env === undefined)
    throw new Error(`unknown variant ${variant} (${Object.keys(variantEnv).join(', ')})`);
  const dir = mkdtempSync(join(tmpdir(), 'kiln-tail-diag-'));
  // The gateway and workers inherit this process's environment when they are spawned.
  const saved = { ...process.env };
  Object.assign(process.env, env, { [diagnosticsDirEnv]: dir });
  let bench: BenchPlatform;
  try {
    bench = await startBenchPlatform({ tempPrefix: `kiln-bench-tail-${variant}-` });
  } finally {
    for (const key of Object.keys(process.env)) if (!(key in saved)) delete process.env[key];
    Object.assign(process.env, saved);
  }
  const pids = (): Map<string, number[]> => {
    const found = readDiagnostics(dir);
    const gateway = found.filter((d) => d.role === 'gateway').map((d) => d.pid);
    // The serving worker, not the standby that idles beside it: the one that used the most
    // CPU in its last seconds.
    const workers = found
      .filter((d) => d.role === 'worker')
      .map((d) => ({ pid: d.pid, cpu: d.seconds.slice(-3).reduce((t, s) => t + s.cpuUserMs, 0) }))
      .sort((x, y) => y.cpu - x.cpu);
    return new Map([
      ['gateway', gateway],
      ['worker', workers.slice(0, 1).map((w) => w.pid)],
      ['bench', [process.pid]],
    ]);
  };
  return {
    name,
    url: bench.gatewayUrl,
    pids,
    diagnosticsDir: dir,
    nice: variantNice[variant] ?? null,
    close: async () => {
      await bench.close();
      // Profiles (the cpuprof variant) are kept for reading; the rest goes.
      if (env.KILN_DIAGNOSTICS_CPU_PROFILE === '1') console.log(`cpu profiles: ${dir}`);
      else rmSync(dir, { recursive: true, force: true });
    },
  };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

async function flaskSide(modelPath: string): Promise<Side | string> {
  const imports = spawnSync('/usr/bin/python3', ['-c', 'import flask, numpy, xgboost'], {
    encoding: 'utf8',
  });
  if (imports.error !== undefined || imports.status !== 0) return 'flask/xgboost missing';
  const port = await freePort();
  let child: ChildProcess;
  try {
    child = spawn('gunicorn', ['-w', '2', '-b', `127.0.0.1:${port}`, 'flask_xgboost:app'], {
      cwd: join(root, 'bench/peers'),
      env: { ...process.env, MODEL_PATH: modelPath, OMP_NUM_THREADS: '1' },
      detached: true,
      stdio: 'ignore',
    });
  } catch (error) {
    return String(error);
  }
  child.once('error', () => undefined);
  const kill = (): void => {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
    } catch {
      // gone
    }
  };
  process.once('exit', kill);
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 600; i++) {
    try {
      const r = await fetch(`${url}/v2/health/ready`);
      await r.arrayBuffer();
      if (r.status === 200) break;
    } catch {
      // not yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  const master = child.pid ?? 0;
  return {
    name: 'gunicorn',
    url,
    pids: () => new Map([['gunicorn workers', childPids(master)]]),
    diagnosticsDir: null,
    nice: null,
    close: () => {
      process.removeListener('exit', kill);
      kill();
      return Promise.resolve();
    },
  };
}

// ── the run ─────────────────────────────────────────────────────────────────────────────

interface RunRow {
  readonly side: string;
  readonly round: number;
  readonly window: Window;
  readonly diag: Map<string, LoopAndGc | null>;
}

const median = (values: number[]): number => {
  const s = values.filter(Number.isFinite).sort((a, b) => a - b);
  if (s.length === 0) return Number.NaN;
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[mid] ?? Number.NaN) : ((s[mid - 1] ?? 0) + (s[mid] ?? 0)) / 2;
};

export async function run(args: readonly string[]): Promise<void> {
  if (spawnSync('wrk', ['--version']).error !== undefined) {
    console.log('tail: wrk is not installed (apt-get install wrk); nothing measured');
    return;
  }
  const seconds = Math.max(3, option(args, 'seconds', 5));
  const rounds = option(args, 'rounds', 3);
  const connections = option(args, 'connections', 64);
  const variantsArg = args.indexOf('--variants');
  const variants = variantsArg >= 0 ? (args[variantsArg + 1] ?? 'base').split(',') : ['base'];
  const fixture = JSON.parse(
    readFileSync(join(root, 'fixtures/trees/bench-fraud.rows.json'), 'utf8'),
  ) as { rows: (number | null)[][] };
  const row = fixture.rows[2] ?? [];

  const sides: Side[] = [];
  const scratch = mkdtempSync(join(tmpdir(), 'kiln-tail-'));
  try {
    // A variant named twice runs on two platforms (an A/A pair shows the noise between them).
    for (const [i, variant] of variants.entries()) {
      const twice = variants.filter((v) => v === variant).length > 1;
      const nth = variants.slice(0, i).filter((v) => v === variant).length + 1;
      sides.push(await kilnSide(variant, `kiln ${variant}${twice ? `#${nth}` : ''}`));
    }
    if (!args.includes('--no-flask')) {
      const modelPath = join(root, 'fixtures/trees/bench-fraud.ubj');
      const flask = await flaskSide(modelPath);
      if (typeof flask === 'string') console.log(`gunicorn side skipped: ${flask}`);
      else sides.push(flask);
    }
    const first = sides[0];
    if (first === undefined) return;
    const metadata = (await (await fetch(`${first.url}/v2/models/bench`)).json()) as {
      inputs: { name: string }[];
    };
    const body = JSON.stringify({
      inputs: [
        {
          name: metadata.inputs[0]?.name ?? 'input',
          shape: [1, row.length],
          datatype: 'FP32',
          data: row,
        },
      ],
    });
    const script = wrkScript(scratch, body);
    console.log(
      `tail: bench-fraud (200 trees), 1 row, ${connections} connections, wrk -t1 closed loop, ${seconds} s per run, ${rounds} rounds, sides interleaved (order rotates per round): ${sides.map((s) => s.name).join(', ')}`,
    );
    // Warm every side (JIT, connections) before anything counts.
    for (const side of sides)
      await runWindow(side.url + inferPath, script, connections, 3, side.pids);

    const rows: RunRow[] = [];
    for (let round = 1; round <= rounds; round++) {
      const order = sides.map((_, i) => sides[(i + round - 1) % sides.length] as Side);
      for (const side of order) {
        const window = await runWindow(
          side.url + inferPath,
          script,
          connections,
          seconds,
          side.pids,
          side.nice,
        );
        const diag = new Map<string, LoopAndGc | null>();
        if (side.diagnosticsDir !== null) {
          // The last second of the window is written up to a second after it ends.
          await new Promise((r) => setTimeout(r, 1200));
          const found = readDiagnostics(side.diagnosticsDir);
          for (const [label, pids] of side.pids()) {
            const d = found.find((f) => f.pid === pids[0]);
            if (d !== undefined) diag.set(label, summarize(d.seconds, window.fromMs, window.toMs));
          }
        }
        rows.push({ side: side.name, round, window, diag });
        const w = window.wrk;
        console.log(
          `  round ${round} ${side.name.padEnd(12)} ${Math.round(w.rps)} req/s  p50 ${w.p50Ms.toFixed(2)}  p99 ${w.p99Ms.toFixed(2)} ms  (p99/p50 ${(w.p99Ms / w.p50Ms).toFixed(2)})  errors ${w.errors}`,
        );
      }
    }

    const f = (n: number | undefined, digits = 2): string =>
      n === undefined || !Number.isFinite(n) ? '-' : n.toFixed(digits);
    console.log(
      '\nper run: latency and the scheduler view (cores = CPU used; helpers = of which threads other than the main one; rq = run-queue wait ms/s; vol/inv = voluntary/involuntary switches/s)',
    );
    const labels = ['gateway', 'worker', 'gunicorn workers', 'wrk', 'bench'];
    console.log(
      table(
        [
          'side',
          'round',
          'req/s',
          'p50',
          'p99',
          'p99/p50',
          'machine cores',
          ...labels.flatMap((l) => [
            `${l} cores`,
            `${l} helpers`,
            `${l} rq`,
            `${l} vol`,
            `${l} inv`,
          ]),
        ],
        rows.map((r) => [
          r.side,
          String(r.round),
          r.window.wrk.rps,
          r.window.wrk.p50Ms,
          r.window.wrk.p99Ms,
          r.window.wrk.p99Ms / r.window.wrk.p50Ms,
          r.window.machineCores,
          ...labels.flatMap((l) => {
            const p = r.window.procs.get(l);
            return p === undefined || p === null
              ? ['-', '-', '-', '-', '-']
              : [
                  f(p.cpuCores),
                  f(p.helperCores),
                  f(p.runQueueMsPerS, 0),
                  f(p.voluntaryPerS, 0),
                  f(p.involuntaryPerS, 0),
                ];
          }),
        ]),
      ),
    );
    console.log(
      "\nper run: the Kiln processes from inside (loop = event-loop delay ms: worst second's p99 / max; gc = pauses per s, ms per s, longest ms, major+incremental count)",
    );
    console.log(
      table(
        [
          'side',
          'round',
          'p99',
          'gw loop p99',
          'gw loop max',
          'gw gc/s',
          'gw gc ms/s',
          'gw gc max',
          'gw major',
          'gw young MB',
          'wk loop p99',
          'wk loop max',
          'wk gc/s',
          'wk gc ms/s',
          'wk gc max',
          'wk major',
          'wk young MB',
        ],
        rows
          .filter((r) => r.diag.size > 0)
          .map((r) => {
            const g = r.diag.get('gateway') ?? null;
            const w = r.diag.get('worker') ?? null;
            const cols = (d: LoopAndGc | null): string[] =>
              d === null
                ? ['-', '-', '-', '-', '-', '-', '-']
                : [
                    f(d.loopP99Ms),
                    f(d.loopMaxMs),
                    f(d.gcCountPerS, 1),
                    f(d.gcMsPerS),
                    f(d.gcMaxMs),
                    String(d.majorCount),
                    f(d.newSpaceMb, 1),
                  ];
            return [r.side, String(r.round), r.window.wrk.p99Ms, ...cols(g), ...cols(w)];
          }),
      ),
    );
    console.log('\nmedians over rounds');
    console.log(
      table(
        ['side', 'req/s', 'p50 ms', 'p99 ms', 'p99/p50'],
        sides.map((s) => {
          const mine = rows.filter((r) => r.side === s.name);
          return [
            s.name,
            median(mine.map((r) => r.window.wrk.rps)),
            median(mine.map((r) => r.window.wrk.p50Ms)),
            median(mine.map((r) => r.window.wrk.p99Ms)),
            median(mine.map((r) => r.window.wrk.p99Ms / r.window.wrk.p50Ms)),
          ];
        }),
      ),
    );
    console.log(
      "(wrk, Kiln's processes, gunicorn and whatever else runs on this machine share its cores; machine cores shows the total)",
    );
  } finally {
    for (const side of sides) await side.close();
    rmSync(scratch, { recursive: true, force: true });
  }
}
