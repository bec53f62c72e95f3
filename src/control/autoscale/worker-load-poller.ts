// Polls the workers' own load (GET /kiln/v1/load, protocol/scaling/worker-load-report.ts) for
// the autoscale controller: once a second, every ready replica of each endpoint the controller
// watches (those whose signal is queue-depth, cpu, accelerator, custom or slo — only they pay for
// it), all replicas at once, and keeps the sums per endpoint for `latest`:
//
//   controller tick ─ watch({a, b}) ─┐               ┌─ latest(a) → sums of round N
//                                    ▼               │
//   poll loop:  round N: a: r1 r2 r3 ─► sum ─► store ┘   b: r4 … (each GET ≤ timeoutMs)
//               wait out the interval, round N+1 …
//
// A worker reports CPU in cores (0..threads) and its threads; the sums carry utilizations
// 0..1 per replica, what a cpu target in (0, 1] is compared with. A replica that does not
// answer in time, or answers something that is not a report, is left out of that round's
// sums (`replicas` says how many are in); sums older than staleAfterMs are not given out, so
// a stalled poll never holds a count up.

import type { Clock } from '../../core/clock.ts';
import {
  parseWorkerLoadReport,
  workerLoadPath,
  type WorkerLoadReport,
} from '../../protocol/scaling/worker-load-report.ts';
import { fetchJson, PollingLoop } from '../polling-loop.ts';
import type { EndpointWorkerLoad, WorkerLoadSource } from './worker-load-source.ts';

/** A replica to poll: ready, with its worker's base URL. */
export interface PolledReplica {
  readonly id: string;
  readonly url: string;
}

export interface WorkerLoadPollerOptions {
  /** The endpoint's ready replicas now (the reconciler's view). */
  readonly readyReplicas: (endpoint: string) => readonly PolledReplica[];
  readonly clock: Clock;
  /** Time between the starts of two rounds. Default 1000. */
  readonly intervalMs?: number;
  /** Longest wait for one worker's answer. Default 800. */
  readonly timeoutMs?: number;
  /** Sums older than this are stale (latest → null). Default 3 × intervalMs. */
  readonly staleAfterMs?: number;
  /** GETs a worker's load and returns its parsed JSON body (tests give fakes). */
  readonly fetchLoad?: (url: string, signal: AbortSignal) => Promise<unknown>;
}

/** Sums replicas' reports: utilizations per replica (each at most 1), counts as they are. */
export function sumWorkerLoads(
  reports: readonly WorkerLoadReport[],
  atMs: number,
): EndpointWorkerLoad {
  if (reports.length === 0)
    return {
      atMs,
      replicas: 0,
      queueDepth: null,
      cpu: null,
      threads: null,
      accelerator: null,
      custom: {},
    };
  let queueDepth = 0;
  let cpu = 0;
  let threads = 0;
  let accelerator: number | null = null;
  const custom: Record<string, number> = {};
  for (const report of reports) {
    queueDepth += report.queueDepth;
    // GC and I/O threads can take a worker past its compute threads: busy is busy, not more.
    cpu += Math.min(1, report.cpu / report.threads);
    threads += report.threads;
    if (report.accelerator !== null)
      accelerator = (accelerator ?? 0) + Math.min(1, report.accelerator);
    for (const [name, value] of Object.entries(report.custom))
      custom[name] = (custom[name] ?? 0) + value;
  }
  return {
    atMs,
    replicas: reports.length,
    queueDepth,
    cpu,
    threads: threads / reports.length,
    accelerator,
    custom,
  };
}

export class WorkerLoadPoller implements WorkerLoadSource {
  private watched: ReadonlySet<string> = new Set();
  private readonly sums = new Map<string, EndpointWorkerLoad>();
  private readonly intervalMs: number;
  private readonly timeoutMs: number;
  private readonly staleAfterMs: number;
  private readonly fetchLoad: (url: string, signal: AbortSignal) => Promise<unknown>;
  /** Rounds one at a time; its signal aborts the GETs of the round in progress at close. */
  private readonly loop: PollingLoop;

  constructor(private readonly options: WorkerLoadPollerOptions) {
    this.intervalMs = options.intervalMs ?? 1000;
    this.timeoutMs = options.timeoutMs ?? 800;
    this.staleAfterMs = options.staleAfterMs ?? 3 * this.intervalMs;
    this.fetchLoad = options.fetchLoad ?? fetchJson;
    this.loop = new PollingLoop(() => this.pollAll(), this.intervalMs, options.clock);
  }

  watch(endpoints: ReadonlySet<string>): void {
    this.watched = new Set(endpoints);
    for (const name of this.sums.keys()) if (!endpoints.has(name)) this.sums.delete(name);
  }

  latest(endpoint: string): EndpointWorkerLoad | null {
    const sums = this.sums.get(endpoint);
    if (sums === undefined) return null;
    return this.options.clock.now() - sums.atMs > this.staleAfterMs ? null : sums;
  }

  /** Polls every intervalMs until close(); rounds never overlap. */
  start(): void {
    this.loop.start();
  }

  /** One round over the watched endpoints (a round in progress is joined, not doubled). */
  pollOnce(): Promise<void> {
    return this.loop.once();
  }

  close(): Promise<void> {
    return this.loop.close();
  }

  private async pollAll(): Promise<void> {
    const endpoints = [...this.watched];
    const rounds = await Promise.all(
      endpoints.map(async (endpoint) => {
        const replicas = this.options.readyReplicas(endpoint);
        const reports = await Promise.all(replicas.map((replica) => this.pollReplica(replica)));
        return { endpoint, reports: reports.filter((r): r is WorkerLoadReport => r !== null) };
      }),
    );
    if (this.loop.closed) return;
    const atMs = this.options.clock.now();
    for (const { endpoint, reports } of rounds) {
      // Unwatched while the round ran: its sums are not wanted any more.
      if (this.watched.has(endpoint)) this.sums.set(endpoint, sumWorkerLoads(reports, atMs));
    }
  }

  private async pollReplica(replica: PolledReplica): Promise<WorkerLoadReport | null> {
    // A timer of our own, not AbortSignal.timeout: that one keeps nothing alive, and a round
    // waiting on a hung worker must still end.
    const timeout = new AbortController();
    const timer = setTimeout(() => timeout.abort(), this.timeoutMs);
    const signal = AbortSignal.any([this.loop.signal, timeout.signal]);
    try {
      return parseWorkerLoadReport(await this.fetchLoad(`${replica.url}${workerLoadPath}`, signal));
    } catch {
      return null; // gone, refused, too slow, not JSON: not in this round's sums
    } finally {
      clearTimeout(timer);
    }
  }
}
