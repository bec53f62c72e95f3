// An open-loop load generator, wrk2-style: requests leave on a fixed-rate timetable whatever
// the server does, and each latency is measured from the request's INTENDED send time, so a
// stall (the server's or the generator's own) shows up in the percentiles instead of hiding
// behind requests that were never sent (coordinated omission). It runs in its own process, so
// the bench process that holds the platform does not share an event loop with the client:
//
//   c     bench/peers/openloop.c, compiled with the system's cc on first use into the bench
//         cache (~/.cache/kiln-bench or $KILN_BENCH_CACHE; never a project dependency). The
//         default: ~0.15 ms of CPU a request against a server that closes every connection
//         (gunicorn's sync workers), nearly all of it the kernel's connect and close.
//   node  bench/_open-loop-child.ts (undici): where no C compiler is installed. It costs
//         ~0.85 ms of CPU a request against such a server (measured on 2 cores, 2026-12-02),
//         which at Flask's rates takes a core from the server it measures.
//
// The scheduling core of the node generator (runOpenLoop) takes its clock and sleep as
// arguments: the tests drive it with a fake clock. The C generator follows the same rules and
// reports the same summary (its tests run it against local servers).

import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { percentile } from './_report.ts';

export interface OpenLoopClock {
  /** Milliseconds, monotonic. */
  now(): number;
  /** Resolves no earlier than `ms` from now (a real timer may be late; that is measured). */
  sleep(ms: number): Promise<void>;
}

export interface OpenLoopOptions {
  readonly ratePerS: number;
  readonly durationMs: number;
  /** Sends request number `i`; resolves to its HTTP status. A rejection is a failed request. */
  readonly send: (i: number) => Promise<number>;
  readonly clock: OpenLoopClock;
  /** How long to wait for answers after the last send; those still out then count as failed. */
  readonly drainMs?: number;
  /** At most this many sends in one burst before yielding (when the generator runs late). */
  readonly maxBurst?: number;
}

export interface OpenLoopResult {
  readonly targetRatePerS: number;
  /** Requests on the timetable: floor(duration × rate). */
  readonly planned: number;
  readonly sent: number;
  /** 2xx answers. */
  readonly successes: number;
  /** Non-2xx answers, transport errors and answers still missing when the drain ended. */
  readonly failed: number;
  /** Of `failed`: requests still unanswered when the drain ended. */
  readonly unanswered: number;
  readonly statuses: Readonly<Record<string, number>>;
  /** Sends per second over the send window (first intended send to last actual send + 1 gap). */
  readonly sentRatePerS: number;
  /** 2xx answers per second, over max(duration, start → last answer). */
  readonly successRatePerS: number;
  /** Largest delay of an actual send behind its intended time, ms. */
  readonly maxSendLagMs: number;
  /** Latencies of the 2xx answers from their intended send time, ms, ascending. */
  readonly latenciesMs: readonly number[];
  /**
   * The same answers' latencies from their ACTUAL send time, ms, ascending: what a client that
   * ignores its own lateness would report. Where it is much below `latenciesMs`, the generator
   * itself ran late (a starved CPU), not the server.
   */
  readonly fromSendLatenciesMs: readonly number[];
}

/** Runs the timetable; resolves when every answer is in or the drain time is over. */
export async function runOpenLoop(options: OpenLoopOptions): Promise<OpenLoopResult> {
  const { ratePerS, durationMs, send, clock } = options;
  const drainMs = options.drainMs ?? 10_000;
  const maxBurst = options.maxBurst ?? 64;
  const intervalMs = 1000 / ratePerS;
  const planned = Math.floor((durationMs / 1000) * ratePerS);
  const latencies: number[] = [];
  const fromSend: number[] = [];
  const statuses: Record<string, number> = {};
  let successes = 0;
  let answeredFailures = 0;
  let outstanding = 0;
  let lastAnswerMs = 0;
  let lastSendMs = 0;
  let maxSendLagMs = 0;
  let allAnswered: (() => void) | null = null;

  const start = clock.now();
  const answered = (intendedMs: number, sentMs: number, status: number | null): void => {
    const at = clock.now();
    lastAnswerMs = Math.max(lastAnswerMs, at);
    const key = status === null ? 'error' : String(status);
    statuses[key] = (statuses[key] ?? 0) + 1;
    if (status !== null && status >= 200 && status < 300) {
      successes++;
      latencies.push(at - intendedMs);
      fromSend.push(at - sentMs);
    } else answeredFailures++;
    outstanding--;
    if (outstanding === 0) allAnswered?.();
  };

  let i = 0;
  while (i < planned) {
    const now = clock.now();
    let burst = 0;
    while (i < planned && start + i * intervalMs <= now && burst < maxBurst) {
      const intendedMs = start + i * intervalMs;
      maxSendLagMs = Math.max(maxSendLagMs, now - intendedMs);
      lastSendMs = now;
      outstanding++;
      send(i).then(
        (status) => answered(intendedMs, now, status),
        () => answered(intendedMs, now, null),
      );
      i++;
      burst++;
    }
    if (i < planned) await clock.sleep(Math.max(0, start + i * intervalMs - clock.now()));
  }
  if (outstanding > 0) {
    const done = new Promise<void>((resolve) => (allAnswered = resolve));
    await Promise.race([done, clock.sleep(drainMs)]);
  }
  const unanswered = outstanding;
  const sendWindowS = (lastSendMs - start + intervalMs) / 1000;
  const answerWindowS = Math.max(durationMs, lastAnswerMs - start) / 1000;
  return {
    targetRatePerS: ratePerS,
    planned,
    sent: i,
    successes,
    failed: answeredFailures + unanswered,
    unanswered,
    statuses,
    sentRatePerS: planned === 0 ? 0 : i / sendWindowS,
    successRatePerS: successes / answerWindowS,
    maxSendLagMs,
    latenciesMs: latencies.sort((a, b) => a - b),
    fromSendLatenciesMs: fromSend.sort((a, b) => a - b),
  };
}

/** What a run reports back from the child process: counts, rates and percentiles. */
export interface OpenLoopSummary extends Omit<
  OpenLoopResult,
  'latenciesMs' | 'fromSendLatenciesMs'
> {
  /** Which generator ran it: 'c' (bench/peers/openloop.c) or 'node'. */
  readonly generator: OpenLoopGenerator;
  readonly connections: number;
  readonly p50Ms: number;
  readonly p90Ms: number;
  readonly p99Ms: number;
  readonly p999Ms: number;
  readonly maxMs: number;
  /** p99 from the actual send time (see fromSendLatenciesMs). */
  readonly p99FromSendMs: number;
}

export function summarize(
  result: OpenLoopResult,
  connections: number,
  generator: OpenLoopGenerator = 'node',
): OpenLoopSummary {
  const { latenciesMs, fromSendLatenciesMs, ...rest } = result;
  return {
    ...rest,
    generator,
    connections,
    p50Ms: percentile(latenciesMs, 50),
    p90Ms: percentile(latenciesMs, 90),
    p99Ms: percentile(latenciesMs, 99),
    p999Ms: percentile(latenciesMs, 99.9),
    maxMs: latenciesMs.at(-1) ?? Number.NaN,
    p99FromSendMs: percentile(fromSendLatenciesMs, 99),
  };
}

/** Achieved rates below this fraction of the target make a run not count for a goal. */
export const minAchievedFraction = 0.95;

/**
 * Why a run at a fixed rate does not stand for that rate (the generator could not send on
 * time, or the server did not answer at the rate), or null when it held the rate.
 */
export function rateProblem(label: string, summary: OpenLoopSummary): string | null {
  const achieved = Math.min(summary.sentRatePerS, summary.successRatePerS);
  if (achieved >= minAchievedFraction * summary.targetRatePerS) return null;
  return `${label}: achieved ${Math.round(achieved)} req/s (sent ${Math.round(summary.sentRatePerS)}/s, answered 2xx ${Math.round(summary.successRatePerS)}/s) against a target of ${Math.round(summary.targetRatePerS)} req/s, short by more than ${Math.round((1 - minAchievedFraction) * 100)} %`;
}

/** The failed requests by kind ("503 ×12, error ×3, unanswered ×1"), or '' when none failed. */
export function failedBreakdown(summary: OpenLoopSummary): string {
  const parts = Object.entries(summary.statuses)
    .filter(([status]) => !/^2\d\d$/.test(status))
    .map(([status, n]) => `${status} ×${n}`);
  if (summary.unanswered > 0) parts.push(`unanswered ×${summary.unanswered}`);
  return parts.join(', ');
}

export interface OpenLoopTarget {
  readonly origin: string;
  readonly path: string;
  /** POSTed as JSON, in turn. */
  readonly bodies: readonly string[];
}

export interface OpenLoopChildConfig extends OpenLoopTarget {
  readonly ratePerS: number;
  readonly durationMs: number;
  readonly connections: number;
}

export type OpenLoopGenerator = 'c' | 'node';

const childEntry = fileURLToPath(new URL('./_open-loop-child.ts', import.meta.url));
const nativeSource = fileURLToPath(new URL('./peers/openloop.c', import.meta.url));
const benchCache = process.env['KILN_BENCH_CACHE'] ?? join(homedir(), '.cache', 'kiln-bench');

export type NativeGeneratorBuild =
  { readonly ok: true; readonly bin: string } | { readonly ok: false; readonly why: string };

let nativeBuild: NativeGeneratorBuild | null = null;

/**
 * The C generator's binary: compiled with `cc -O2` on first use into the bench cache, under a
 * name keyed by the source's hash (an edited source builds anew), or why it cannot be.
 */
export function nativeGenerator(): NativeGeneratorBuild {
  if (nativeBuild !== null) return nativeBuild;
  const source = readFileSync(nativeSource);
  const key = createHash('sha256').update(source).digest('hex').slice(0, 12);
  const bin = join(benchCache, `openloop-${key}`);
  const probe = spawnSync(bin, [], { stdio: 'ignore' });
  if (probe.error === undefined) return (nativeBuild = { ok: true, bin });
  mkdirSync(benchCache, { recursive: true });
  const partial = `${bin}.${process.pid}.partial`;
  const built = spawnSync('cc', ['-O2', '-o', partial, nativeSource], { encoding: 'utf8' });
  if (built.error !== undefined || built.status !== 0) {
    rmSync(partial, { force: true });
    const why =
      built.error !== undefined
        ? `no C compiler (cc: ${built.error.message}; apt-get install -y gcc)`
        : `cc failed: ${built.stderr.trim().slice(-300)}`;
    return (nativeBuild = { ok: false, why });
  }
  renameSync(partial, bin);
  return (nativeBuild = { ok: true, bin });
}

/** The generator openLoopInChild uses, and why when it is not the C one. */
export function openLoopGenerator(): { generator: OpenLoopGenerator; note: string } {
  const native = nativeGenerator();
  return native.ok
    ? { generator: 'c', note: `the C generator (bench/peers/openloop.c, ${native.bin})` }
    : {
        generator: 'node',
        note: `the node generator (undici; ${native.why}): it costs the machine more CPU a request`,
      };
}

/**
 * Runs the open loop in a process of its own with `connections` connections (enough that the
 * client never waits for a free one at the rate: requests queue in the client only when the
 * server is behind, and then the wait counts): the C generator where it builds, else the node
 * one (same loader flags as this process). `generator` forces one.
 */
export function openLoopInChild(
  target: OpenLoopTarget,
  ratePerS: number,
  durationMs: number,
  connections = 256,
  generator: OpenLoopGenerator = openLoopGenerator().generator,
): Promise<OpenLoopSummary> {
  if (generator === 'c') return openLoopNative(target, ratePerS, durationMs, connections);
  const config: OpenLoopChildConfig = { ...target, ratePerS, durationMs, connections };
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...process.execArgv, childEntry], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => (stdout += chunk));
    child.stderr.on('data', (chunk: string) => (stderr += chunk));
    child.once('error', reject);
    child.once('exit', (code) => {
      if (code !== 0) {
        reject(new Error(`open-loop generator exited ${code}: ${stderr.trim().slice(-500)}`));
        return;
      }
      try {
        // JSON has no NaN: a percentile of no answers comes back as null.
        const revive = (key: string, value: unknown): unknown =>
          value === null && key.endsWith('Ms') ? Number.NaN : value;
        resolve(JSON.parse(stdout, revive) as OpenLoopSummary);
      } catch (error) {
        reject(error instanceof Error ? error : new Error(String(error)));
      }
    });
    child.stdin.end(JSON.stringify(config));
  });
}

/** What bench/peers/openloop.c writes on stdout. */
interface NativeOutput {
  readonly planned: number;
  readonly sent: number;
  readonly successes: number;
  readonly failed: number;
  readonly unanswered: number;
  readonly statuses: Record<string, number>;
  readonly sendWindowMs: number;
  readonly answerWindowMs: number;
  readonly maxSendLagMs: number;
  readonly latenciesUs: readonly number[];
  readonly fromSendUs: readonly number[];
}

/** The C generator's output as the node generator's result (rates and latencies in ms). */
export function nativeResult(output: NativeOutput, ratePerS: number): OpenLoopResult {
  const ms = (us: readonly number[]): number[] => us.map((u) => u / 1000).sort((a, b) => a - b);
  return {
    targetRatePerS: ratePerS,
    planned: output.planned,
    sent: output.sent,
    successes: output.successes,
    failed: output.failed,
    unanswered: output.unanswered,
    statuses: output.statuses,
    sentRatePerS: output.planned === 0 ? 0 : output.sent / (output.sendWindowMs / 1000),
    successRatePerS: output.successes / (output.answerWindowMs / 1000),
    maxSendLagMs: output.maxSendLagMs,
    latenciesMs: ms(output.latenciesUs),
    fromSendLatenciesMs: ms(output.fromSendUs),
  };
}

async function openLoopNative(
  target: OpenLoopTarget,
  ratePerS: number,
  durationMs: number,
  connections: number,
): Promise<OpenLoopSummary> {
  const native = nativeGenerator();
  if (!native.ok) throw new Error(`the C open-loop generator is not available: ${native.why}`);
  const url = new URL(target.origin);
  const host = url.hostname === 'localhost' ? '127.0.0.1' : url.hostname;
  const port = url.port === '' ? '80' : url.port;
  const dir = mkdtempSync(join(tmpdir(), 'kiln-openloop-'));
  const bodiesFile = join(dir, 'bodies.txt');
  // One body a line: JSON.stringify output has no raw newline, but a caller's string might.
  for (const body of target.bodies)
    if (/[\r\n]/.test(body)) throw new Error('the C generator takes bodies without newlines');
  writeFileSync(bodiesFile, target.bodies.join('\n') + '\n');
  const drainMs = 10_000;
  try {
    const output = await new Promise<string>((resolve, reject) => {
      const child = spawn(
        native.bin,
        [
          host,
          port,
          target.path,
          String(ratePerS),
          String(durationMs),
          String(connections),
          String(drainMs),
          bodiesFile,
        ],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      const out: Buffer[] = [];
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
      child.stderr.setEncoding('utf8');
      child.stderr.on('data', (chunk: string) => (stderr += chunk));
      child.once('error', reject);
      child.once('exit', (code) => {
        if (code === 0) resolve(Buffer.concat(out).toString('utf8'));
        else reject(new Error(`openloop exited ${code}: ${stderr.trim().slice(-500)}`));
      });
    });
    return summarize(nativeResult(JSON.parse(output) as NativeOutput, ratePerS), connections, 'c');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
