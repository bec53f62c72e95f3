// What a simulation reports (issue 14): per policy, the figures a person compares side by side
// (simulation-table.ts) and a downsampled timeline for the plot (simulation-plot.ts). Plain
// data: `kiln simulate --json` prints it as is.

export interface SimulationReport {
  readonly sloMs: number;
  readonly seed: number;
  /** Trace start → end, seconds. */
  readonly durationSeconds: number;
  /** Requests the trace produced (the same for every policy: one arrival stream). */
  readonly requests: number;
  readonly concurrencyPerReplica: number;
  /** Mean service time of the model, ms. */
  readonly meanServiceMs: number;
  readonly policies: readonly PolicyReport[];
}

export interface PolicyReport {
  readonly name: string;
  readonly instanceType: string;
  readonly startupMs: number;
  readonly requests: number;
  /** Answered within sloMs (arrival → answer, held time included). */
  readonly withinSlo: number;
  /** withinSlo / requests (1 with no requests). */
  readonly sloAttainment: number;
  /** Latency quantiles (ms, within 1 %); null with no requests. */
  readonly p50Ms: number | null;
  readonly p95Ms: number | null;
  readonly p99Ms: number | null;
  readonly maxMs: number | null;
  readonly meanLatencyMs: number | null;
  /** Mean time from arrival to the start of service (held + queued), ms. */
  readonly meanWaitMs: number | null;
  /** Share of requests that waited at all (held or queued). */
  readonly waitedShare: number;
  /** Replicas billed (starting, ready and draining) × seconds, over the trace. */
  readonly replicaSeconds: number;
  /** replicaSeconds / durationSeconds. */
  readonly meanReplicas: number;
  /** Ready replicas × seconds / durationSeconds. */
  readonly meanReadyReplicas: number;
  readonly maxReplicas: number;
  /** replicaSeconds / 3600 × the instance type's price. */
  readonly costUsd: number;
  /** Changes of the wanted count, up and down (a wake from zero is an up). */
  readonly scaleUps: number;
  readonly scaleDowns: number;
  /** Wakes from zero replicas (a request arrived with none wanted). */
  readonly coldStarts: number;
  /** Requests held because no replica was ready. */
  readonly heldRequests: number;
  /** Seconds the policy decided in panic mode. */
  readonly panicSeconds: number;
  readonly timeline: Timeline;
}

/**
 * One point per bucket of the trace (at most the requested number of points), means over the
 * bucket: demand and capacity in requests per second, replicas as counts.
 */
export interface Timeline {
  readonly bucketSeconds: number;
  /** Bucket start, seconds from the trace's start. */
  readonly tSeconds: readonly number[];
  /** Arrivals per second. */
  readonly demandRps: readonly number[];
  /** Ready replicas × slots × 1000 / mean service ms: what they can answer per second. */
  readonly capacityRps: readonly number[];
  /** Replicas wanted (the policy's count). */
  readonly replicas: readonly number[];
  readonly readyReplicas: readonly number[];
}
