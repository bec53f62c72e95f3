// Keeps hf-llm replicas' load reports fresh while their endpoint has traffic: one poll loop
// per replica (`GET /kiln/v1/load` every `intervalMs`), started by the first request routed
// among its endpoint's replicas and ended once none has been routed for `idleAfterMs` (an
// idle endpoint costs no polls), or when the replica leaves the routing. Answers also carry
// a report (`kiln-load`), so a busy replica's load is often fresher than the last poll.
//
// A failed poll changes nothing: the report ages out (llm-replica-picker.ts stops trusting
// it) and failures on the request path eject the replica as for any other.

import { setTimeout as sleep } from 'node:timers/promises';
import type { Pool } from 'undici';
import { parseLlmLoadReport, type LlmReplicaLoad } from './llm-replica-load.ts';

/** The worker's load route. */
export const llmLoadPath = '/kiln/v1/load';

/** What the monitor needs of a replica (ReplicaState provides it). */
export interface LoadPollTarget {
  readonly pool: Pool;
  readonly pathPrefix: string;
  readonly llmLoad: LlmReplicaLoad;
  readonly retired: boolean;
}

export interface LlmLoadMonitorOptions {
  /** Between two polls of one replica, ms. */
  readonly intervalMs: number;
  /** Polling stops after this long without a request for the endpoint, ms. */
  readonly idleAfterMs: number;
  /** A poll not answered within this is abandoned, ms. */
  readonly timeoutMs: number;
  readonly now: () => number;
}

export class LlmLoadMonitor {
  private readonly stopping = new AbortController();

  constructor(private readonly options: LlmLoadMonitorOptions) {}

  /** A request is being routed among `replicas`: keep their reports fresh for a while. */
  noteTraffic(replicas: readonly LoadPollTarget[]): void {
    if (this.stopping.signal.aborted) return;
    const nowMs = this.options.now();
    for (const replica of replicas) {
      const load = replica.llmLoad;
      load.lastTrafficMs = nowMs;
      if (!load.polling && !replica.retired) {
        load.polling = true;
        this.pollWhileBusy(replica).catch(() => {
          load.polling = false;
        });
      }
    }
  }

  /** Stops every poll loop (the gateway is closing). */
  close(): void {
    this.stopping.abort();
  }

  private async pollWhileBusy(replica: LoadPollTarget): Promise<void> {
    const { intervalMs, idleAfterMs, now } = this.options;
    const signal = this.stopping.signal;
    const load = replica.llmLoad;
    try {
      while (!signal.aborted && !replica.retired && now() - load.lastTrafficMs < idleAfterMs) {
        await this.pollOnce(replica);
        await sleep(intervalMs, undefined, { signal, ref: false });
      }
    } finally {
      load.polling = false;
    }
  }

  private async pollOnce(replica: LoadPollTarget): Promise<void> {
    const load = replica.llmLoad;
    // Requests sent up to now can be in the report this poll brings back.
    const baseline = load.sentTotal;
    const { timeoutMs, now } = this.options;
    try {
      const response = await replica.pool.request({
        path: replica.pathPrefix + llmLoadPath,
        method: 'GET',
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
        signal: this.stopping.signal,
      });
      const text = await response.body.text();
      if (response.statusCode !== 200) return;
      const report = parseLlmLoadReport(text);
      if (report !== null) load.applyReport(report, baseline, now());
    } catch {
      // Unreachable, closed or slow: the report ages out (see the top of this file).
    }
  }
}
