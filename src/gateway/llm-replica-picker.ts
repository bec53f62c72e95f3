// LLM replica choice, the cache-aware policy of SGLang's router in a simple form. Pure: the
// caller passes the replicas with what is known of their load, the replica that last served
// the request's prompt prefix, a rotating start index and the monotonic time.
//
// Each replica gets a load score, in queued-request units:
//
//   score = queued + kvWeight × kvUtilization + prefill
//   queued = max(running + waiting, inflight − paused)      from its last report
//          + requests this gateway sent after that report  (the report cannot hold them)
//   prefill = body bytes of requests sent there whose answer has not started its body
//             ÷ prefillBytesPerRequest
//
// The prefill term is the gateway's own knowledge: counts cannot tell a replica busy with a
// 4 000-token prompt from one with a 10-token prompt, and a request sent behind the long
// one waits for all of its prefill (the time to first token that routing exists to keep
// low). A stream's first byte follows its first token, so prefill is over then.
//
// A report older than `reportMaxAgeMs` (no traffic lately, so no polling) is not trusted:
// the gateway's own count of requests in flight there stands in, with no KV term.
//
//   load-prefix: the replica that served the prefix last (its prefix cache holds those
//                blocks) unless its score passes the least-loaded one's by more than
//                `affinitySlack`: then the least loaded (ties in rotation order).
//   round-robin: the next replica in rotation order, load ignored (to measure against).
//
// Ejected replicas (a connection to them failed recently) are skipped while any other is
// available; when every candidate is ejected the least loaded of them is still tried, as
// the v2 picker does (replica-picker.ts).

import type { LlmLoadReport } from './llm-replica-load.ts';

export type LlmRoutingPolicy = 'load-prefix' | 'round-robin';

export const llmRoutingPolicies: readonly LlmRoutingPolicy[] = ['load-prefix', 'round-robin'];

/** What the picker reads of a replica (ReplicaState provides it). */
export interface LlmReplicaView {
  readonly id: string;
  /** Requests this gateway has sent the replica that have not completed. */
  readonly outstanding: number;
  /** Monotonic ms until which the replica is skipped; 0 = not ejected. */
  readonly ejectedUntilMs: number;
  readonly llmLoad: {
    readonly report: LlmLoadReport | null;
    readonly reportAtMs: number;
    readonly sentSinceReport: number;
    readonly awaitingFirstByteBytes: number;
  };
}

export interface LlmPickSettings {
  /** How far (score units) the prefix's replica may be above the least loaded and keep it. */
  readonly affinitySlack: number;
  /** A full KV cache counts as this many queued requests (it is close to preempting). */
  readonly kvWeight: number;
  /** Reports older than this (ms) are not trusted. */
  readonly reportMaxAgeMs: number;
  /** Request body bytes awaiting their first answer byte that count as one queued request. */
  readonly prefillBytesPerRequest: number;
}

export const defaultLlmPickSettings: LlmPickSettings = {
  affinitySlack: 2,
  kvWeight: 4,
  reportMaxAgeMs: 1_000,
  prefillBytesPerRequest: 1_024,
};

export type LlmPickReason = 'affinity' | 'least_loaded' | 'round_robin';

export interface LlmPick<R> {
  readonly replica: R;
  readonly reason: LlmPickReason;
}

export interface LlmPickRequest<R> {
  readonly policy: LlmRoutingPolicy;
  /** Rotation start (the endpoint's cursor): ties, and round-robin, go in this order. */
  readonly start: number;
  readonly nowMs: number;
  /** A replica to skip (the one a retry is moving away from). */
  readonly exclude: R | null;
  /** Id of the replica that last served the request's prompt prefix; null: none known. */
  readonly affinityId: string | null;
  readonly settings: LlmPickSettings;
}

/** A replica's load score (see the top of this file). */
export function llmLoadScore(
  replica: LlmReplicaView,
  nowMs: number,
  settings: LlmPickSettings,
): number {
  const load = replica.llmLoad;
  const prefill = load.awaitingFirstByteBytes / settings.prefillBytesPerRequest;
  const report = load.report;
  if (report === null || nowMs - load.reportAtMs > settings.reportMaxAgeMs) {
    return replica.outstanding + prefill;
  }
  const queued =
    Math.max(report.running + report.waiting, report.inflight - report.paused) +
    load.sentSinceReport;
  return queued + settings.kvWeight * report.kvUtilization + prefill;
}

export function pickLlmReplica<R extends LlmReplicaView>(
  replicas: readonly R[],
  request: LlmPickRequest<R>,
): LlmPick<R> | null {
  const { nowMs, exclude, settings } = request;
  const n = replicas.length;
  // Candidates in rotation order: the healthy ones, else (panic) the ejected ones.
  const healthy: R[] = [];
  const ejected: R[] = [];
  for (let i = 0; i < n; i++) {
    const replica = replicas[((request.start % n) + n + i) % n]!;
    if (replica === exclude) continue;
    if (replica.ejectedUntilMs > nowMs) ejected.push(replica);
    else healthy.push(replica);
  }
  const candidates = healthy.length > 0 ? healthy : ejected;
  if (candidates.length === 0) return null;
  if (request.policy === 'round-robin') return { replica: candidates[0]!, reason: 'round_robin' };

  let best = candidates[0]!;
  let bestScore = Infinity;
  let affinity: R | null = null;
  let affinityScore = Infinity;
  for (const replica of candidates) {
    const score = llmLoadScore(replica, nowMs, settings);
    if (score < bestScore) {
      best = replica;
      bestScore = score;
    }
    if (replica.id === request.affinityId) {
      affinity = replica;
      affinityScore = score;
    }
  }
  if (affinity !== null && affinityScore - bestScore <= settings.affinitySlack) {
    return { replica: affinity, reason: 'affinity' };
  }
  return { replica: best, reason: 'least_loaded' };
}
