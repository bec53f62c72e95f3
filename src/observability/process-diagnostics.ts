// Opt-in diagnostics of a data-plane process (issue 16, "a short tail at saturation"): with
// KILN_DIAGNOSTICS_DIR set in its environment, a gateway or worker records, second by second,
// its event-loop delay (perf_hooks.monitorEventLoopDelay, 1 ms resolution), its GC pauses
// (PerformanceObserver 'gc' entries: count, total and longest, by kind) and its CPU time
// (process.cpuUsage), and appends one JSON line per second to `<dir>/<role>-<pid>.jsonl`
// (the first line names the process). A reader (bench/tail.ts) picks the seconds of its own
// window, so no signal or route is needed and a process killed outright still leaves its
// record. One short line a second: the recording must not itself stall the loop it measures.
//
// Unset (the default), nothing here runs: no histogram, no observer, no timer.

import { appendFileSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { join } from 'node:path';
import { getHeapSpaceStatistics } from 'node:v8';
import { constants, monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';

export const diagnosticsDirEnv = 'KILN_DIAGNOSTICS_DIR';
/** Set to 1 (with the folder): a CPU profile of the process's whole life, written at exit. */
export const diagnosticsCpuProfileEnv = 'KILN_DIAGNOSTICS_CPU_PROFILE';

/** One second of one process. Times in ms unless the name says otherwise. */
export interface DiagnosticsSecond {
  /** Wall clock (ms since the epoch) at the end of the second. */
  readonly atMs: number;
  /** Event-loop delay beyond the timer's own 1 ms: percentiles and max of the second. */
  readonly loopDelay: {
    readonly p50Ms: number;
    readonly p99Ms: number;
    readonly maxMs: number;
    readonly meanMs: number;
  };
  /** GC pauses ended in the second, by kind (minor, major, incremental, weakcb). */
  readonly gc: Readonly<Record<string, { count: number; totalMs: number; maxMs: number }>>;
  /** CPU the process used in the second (all its threads). */
  readonly cpuUserMs: number;
  readonly cpuSystemMs: number;
  /** Heap in use at the end of the second. */
  readonly heapUsedBytes: number;
  /** The young generation's size then (V8 grows it, up to --max-semi-space-size, under load). */
  readonly newSpaceBytes: number;
}

/** The first line of a process's file. */
export interface DiagnosticsHeader {
  readonly role: string;
  readonly pid: number;
  readonly execArgv: readonly string[];
}

const gcKinds: Record<number, string> = {
  [constants.NODE_PERFORMANCE_GC_MINOR]: 'minor',
  [constants.NODE_PERFORMANCE_GC_MAJOR]: 'major',
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental',
  [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weakcb',
};

/**
 * Starts recording when KILN_DIAGNOSTICS_DIR is set; returns a stop function (a no-op when
 * it is not). The timers are unref'd: they never keep the process alive.
 */
export function startProcessDiagnostics(
  role: string,
  env: NodeJS.ProcessEnv = process.env,
): () => void {
  const dir = env[diagnosticsDirEnv];
  if (dir === undefined || dir === '') return () => undefined;
  const file = join(dir, `${role}-${process.pid}.jsonl`);
  const write = (line: object): void => {
    try {
      appendFileSync(file, `${JSON.stringify(line)}\n`);
    } catch {
      // the folder is gone (the reader cleaned up): diagnostics are best effort
    }
  };
  const header: DiagnosticsHeader = { role, pid: process.pid, execArgv: process.execArgv };
  write(header);
  const loop = monitorEventLoopDelay({ resolution: 1 });
  loop.enable();
  let gc: Record<string, { count: number; totalMs: number; maxMs: number }> = {};
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const kind = gcKinds[(entry as { detail?: { kind?: number } }).detail?.kind ?? -1] ?? 'other';
      const slot = (gc[kind] ??= { count: 0, totalMs: 0, maxMs: 0 });
      slot.count += 1;
      slot.totalMs += entry.duration;
      slot.maxMs = Math.max(slot.maxMs, entry.duration);
    }
  });
  observer.observe({ entryTypes: ['gc'] });
  let cpu = process.cpuUsage();
  const ms = (ns: number): number => (Number.isFinite(ns) ? ns / 1e6 : 0);
  const tick = (): void => {
    const used = process.cpuUsage(cpu);
    cpu = process.cpuUsage();
    // The histogram counts from the timer's due time: subtract its 1 ms resolution.
    const delay = (ns: number): number => Math.max(0, ms(ns) - 1);
    const second: DiagnosticsSecond = {
      atMs: Date.now(),
      loopDelay: {
        p50Ms: delay(loop.percentile(50)),
        p99Ms: delay(loop.percentile(99)),
        maxMs: delay(loop.max),
        meanMs: delay(loop.mean),
      },
      gc,
      cpuUserMs: used.user / 1000,
      cpuSystemMs: used.system / 1000,
      heapUsedBytes: process.memoryUsage().heapUsed,
      newSpaceBytes:
        getHeapSpaceStatistics().find((space) => space.space_name === 'new_space')?.space_size ?? 0,
    };
    loop.reset();
    gc = {};
    write(second);
  };
  if (env[diagnosticsCpuProfileEnv] === '1')
    profileUntilExit(join(dir, `${role}-${process.pid}.cpuprofile`));
  const timer = setInterval(tick, 1000);
  timer.unref();
  return () => {
    clearInterval(timer);
    observer.disconnect();
    loop.disable();
  };
}

/**
 * Node 20 refuses --cpu-prof in NODE_OPTIONS: the in-process inspector records instead, and
 * the profile is taken at 'exit' (an in-process session answers synchronously, as an exit
 * handler needs). Opened in Chrome DevTools or summed by function.
 */
function profileUntilExit(file: string): void {
  const session = new Session();
  session.connect();
  session.post('Profiler.enable');
  session.post('Profiler.start');
  process.once('exit', () => {
    session.post('Profiler.stop', (error, result) => {
      if (error === null) writeFileSync(file, JSON.stringify(result.profile));
    });
  });
}
