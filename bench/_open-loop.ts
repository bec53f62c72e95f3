// An open-loop load generator, wrk2-style: requests leave on a fixed-rate timetable whatever
// the server does, and each latency is measured from the request's INTENDED send time, so a
// stall (the server's or the generator's own) shows up in the percentiles instead of hiding
// behind requests that were never sent (coordinated omission). It runs in its own process
// (bench/_open-loop-child.ts, started by openLoopInChild), so the bench process that holds the
// platform does not share an event loop with the client.
//
// The scheduling core (runOpenLoop) takes its clock and sleep as arguments: the tests drive it
// with a fake clock.

import { spawn } from 'node:child_process';
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
  readonly connections: number;
  readonly p50Ms: number;
  readonly p90Ms: number;
  readonly p99Ms: number;
  readonly p999Ms: number;
  readonly maxMs: number;
  /** p99 from the actual send time (see fromSendLatenciesMs). */
  readonly p99FromSendMs: number;
}

export function summarize(result: OpenLoopResult, connections: number): OpenLoopSummary {
  const { latenciesMs, fromSendLatenciesMs, ...rest } = result;
  return {
    ...rest,
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

const childEntry = fileURLToPath(new URL('./_open-loop-child.ts', import.meta.url));

/**
 * Runs the open loop in a child node process (same loader flags as this one) with
 * `connections` connections (enough that the client never waits for a free one at the rate:
 * requests queue in the client only when the server is behind, and then the wait counts).
 */
export function openLoopInChild(
  target: OpenLoopTarget,
  ratePerS: number,
  durationMs: number,
  connections = 256,
): Promise<OpenLoopSummary> {
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
