// What a gateway measures of demand and reports to the control plane every second, for the
// autoscaler (issue 14): POST /api/v1/scaling/reports with the gateway's token. One report
// covers [windowStart, windowEnd) and lists every endpoint that had a request arrive, in
// flight or held during it (an endpoint not listed had none: idle). Reports of several
// gateways are summed by the control plane. A report that fails is dropped (the next one
// carries the next window): demand is a rate, not a ledger.
//
// A gateway holding requests for an endpoint at zero replicas also asks it awake at once
// (POST /api/v1/endpoints/{endpoint}/wake, gateway role) instead of waiting for its next
// report: the cold start starts with the first request.

import type { HistogramSketchSnapshot } from '../../traffic/histogram-sketch.ts';

export const loadReportsPath = '/api/v1/scaling/reports';

/** Path of the wake call for one endpoint. */
export function wakePath(endpoint: string): string {
  return `/api/v1/endpoints/${encodeURIComponent(endpoint)}/wake`;
}

export interface LoadReport {
  /** The reporting gateway (host and process id), for logs. */
  readonly gateway: string;
  /** ISO 8601; [windowStart, windowEnd). */
  readonly windowStart: string;
  readonly windowEnd: string;
  readonly endpoints: readonly EndpointLoad[];
}

export interface EndpointLoad {
  readonly endpoint: string;
  /** Infer requests that arrived in the window (refused at the door included). */
  readonly arrivals: number;
  /** Requests answered in the window (any status). */
  readonly completed: number;
  /** Requests in flight, time-averaged over the window (held ones included). */
  readonly concurrencyMean: number;
  /** Most in flight at once during the window. */
  readonly concurrencyMax: number;
  /** Requests held by the activator at windowEnd (endpoint at zero replicas or waking). */
  readonly held: number;
  /** Latency of requests answered 200 in the window, arrival → answer, ms (service times). */
  readonly latencyMs: HistogramSketchSnapshot;
  /** LLM tokens of the answers in the window (issue 15, cost); absent: none. */
  readonly promptTokens?: number;
  readonly completionTokens?: number;
}
