// What the gateway knows of one hf-llm replica's load: the last report the worker gave
// (`GET /kiln/v1/load`, polled while its endpoint has traffic, and the `kiln-load` header
// of every OpenAI answer, taken when the answer starts) plus the requests this gateway has
// sent it since that report was taken, which the report cannot contain yet.
//
// Requests are numbered as they are sent (`sentTotal`); a report carries the number of the
// last request it can include (`baseline`): a poll's is the count when the poll left, an
// answer's is its own request's number (the worker took the report after that request
// arrived). So `sentTotal - reportBaseline` is what the report misses, and a report older
// than the one held (a lower baseline, e.g. a slow poll overtaken by an answer) is dropped.

import type { LlmLoadReport } from '../protocol/llm/llm-load-report.ts';

export type { LlmLoadReport };

/** Reads a report (the JSON body of `/kiln/v1/load`, or a `kiln-load` header); null if it is none. */
export function parseLlmLoadReport(text: string): LlmLoadReport | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return null;
  const record = value as Record<string, unknown>;
  const running = count(record.running);
  const waiting = count(record.waiting);
  // A report without the queue counts tells nothing a router can use.
  if (running === null || waiting === null) return null;
  const kvBlocksUsed = count(record.kvBlocksUsed) ?? 0;
  const kvBlocksTotal = count(record.kvBlocksTotal) ?? 0;
  const reported = record.kvUtilization;
  const kvUtilization =
    typeof reported === 'number' && Number.isFinite(reported)
      ? Math.min(1, Math.max(0, reported))
      : kvBlocksTotal > 0
        ? Math.min(1, kvBlocksUsed / kvBlocksTotal)
        : 0;
  return {
    running,
    waiting,
    paused: count(record.paused) ?? 0,
    kvBlocksUsed,
    kvBlocksTotal,
    kvUtilization,
    inflight: count(record.inflight) ?? running + waiting,
  };
}

function count(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : null;
}

export class LlmReplicaLoad {
  /** The newest report, or null before the first. */
  report: LlmLoadReport | null = null;
  /** When `report` arrived (monotonic ms). */
  reportAtMs = 0;
  /** Requests this gateway has sent the replica, ever: the number of the latest. */
  sentTotal = 0;
  /** The number of the last request `report` can include. */
  reportBaseline = 0;
  /** When a request was last routed among this replica's endpoint (monotonic ms). */
  lastTrafficMs = 0;
  /** Whether a poll loop runs for this replica (llm-load-monitor.ts). */
  polling = false;
  /**
   * Body bytes of the requests sent here whose answer has not yet begun its body: prompts
   * still in prefill (a stream's first byte follows its first token), which no report
   * weighs by size. A long prompt there is a long wait for whoever comes next.
   */
  awaitingFirstByteBytes = 0;

  /** Counts a request sent to the replica; returns its number (the baseline of its answer's report). */
  noteSent(): number {
    this.sentTotal += 1;
    return this.sentTotal;
  }

  /** Takes a report that includes requests up to number `baseline`, unless a newer one is held. */
  applyReport(report: LlmLoadReport, baseline: number, nowMs: number): void {
    if (this.report !== null && baseline < this.reportBaseline) return;
    this.report = report;
    this.reportBaseline = baseline;
    this.reportAtMs = nowMs;
  }

  /** Requests sent after the held report was taken (not in it). */
  get sentSinceReport(): number {
    return this.sentTotal - this.reportBaseline;
  }
}
