// The scheduler's view of a process, from /proc (Linux): CPU time, time spent runnable but
// waiting for a CPU (the run queue), and context switches, summed over all its threads.
// Two samples make a window; `procDelta` turns them into rates. Missing /proc (not Linux, a
// process gone) reads as null, and the bench prints a dash.

import { readdirSync, readFileSync } from 'node:fs';

export interface ProcSample {
  readonly atMs: number;
  /** utime + stime, ms (from /proc/<pid>/stat, all threads). */
  readonly cpuMs: number;
  /** Time runnable on a run queue, not running, ms (/proc/<pid>/task/<tid>/schedstat). */
  readonly runQueueMs: number;
  readonly voluntarySwitches: number;
  readonly involuntarySwitches: number;
  readonly threads: number;
  /** CPU of the threads other than the main one (V8's GC and compiler helpers, libuv's pool), ms. */
  readonly helperCpuMs: number;
}

const ticksPerSecond = 100; // USER_HZ on every Linux this runs on

function read(path: string): string | null {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return null;
  }
}

export function sampleProc(pid: number): ProcSample | null {
  const stat = read(`/proc/${pid}/stat`);
  if (stat === null) return null;
  // The command name (field 2) may hold spaces: count fields after its closing parenthesis.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const cpuMs = ((Number(fields[11]) + Number(fields[12])) * 1000) / ticksPerSecond;
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return null;
  }
  let runQueueNs = 0;
  let voluntary = 0;
  let involuntary = 0;
  let helperCpuMs = 0;
  for (const tid of tids) {
    if (tid !== String(pid)) {
      const taskStat = read(`/proc/${pid}/task/${tid}/stat`);
      if (taskStat !== null) {
        const f = taskStat.slice(taskStat.lastIndexOf(')') + 2).split(' ');
        helperCpuMs += ((Number(f[11]) + Number(f[12])) * 1000) / ticksPerSecond;
      }
    }
    const schedstat = read(`/proc/${pid}/task/${tid}/schedstat`);
    if (schedstat !== null) runQueueNs += Number(schedstat.split(' ')[1] ?? 0);
    const status = read(`/proc/${pid}/task/${tid}/status`) ?? '';
    voluntary += Number(/voluntary_ctxt_switches:\s+(\d+)/.exec(status)?.[1] ?? 0);
    involuntary += Number(/nonvoluntary_ctxt_switches:\s+(\d+)/.exec(status)?.[1] ?? 0);
  }
  return {
    atMs: performance.now(),
    cpuMs,
    runQueueMs: runQueueNs / 1e6,
    voluntarySwitches: voluntary,
    involuntarySwitches: involuntary,
    threads: tids.length,
    helperCpuMs,
  };
}

/** Per second of the window: CPU share (1 = one core), run-queue ms/s, switches/s. */
export interface ProcRates {
  readonly cpuCores: number;
  readonly runQueueMsPerS: number;
  readonly voluntaryPerS: number;
  readonly involuntaryPerS: number;
  readonly threads: number;
  /** Of cpuCores, what threads other than the main one used. */
  readonly helperCores: number;
}

export function procDelta(a: ProcSample | null, b: ProcSample | null): ProcRates | null {
  if (a === null || b === null) return null;
  const s = (b.atMs - a.atMs) / 1000;
  if (s <= 0) return null;
  return {
    cpuCores: (b.cpuMs - a.cpuMs) / 1000 / s,
    runQueueMsPerS: (b.runQueueMs - a.runQueueMs) / s,
    voluntaryPerS: (b.voluntarySwitches - a.voluntarySwitches) / s,
    involuntaryPerS: (b.involuntarySwitches - a.involuntarySwitches) / s,
    threads: b.threads,
    helperCores: (b.helperCpuMs - a.helperCpuMs) / 1000 / s,
  };
}

/** The whole machine: busy CPU time (all cores, ms) from /proc/stat's first line. */
export function machineBusyMs(): number | null {
  const line = read('/proc/stat')?.split('\n')[0];
  if (line === undefined) return null;
  const [, user, nice, system, , , irq, softirq, steal] = line.trim().split(/\s+/).map(Number);
  return (
    (((user ?? 0) + (nice ?? 0) + (system ?? 0) + (irq ?? 0) + (softirq ?? 0) + (steal ?? 0)) *
      1000) /
    ticksPerSecond
  );
}

/** The pids of a process's children (gunicorn's workers), from /proc/<pid>/task/<pid>/children. */
export function childPids(pid: number): number[] {
  const text = read(`/proc/${pid}/task/${pid}/children`);
  return text === null
    ? []
    : text
        .trim()
        .split(/\s+/)
        .filter((s) => s !== '')
        .map(Number);
}
