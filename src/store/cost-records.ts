// Usage the cost reports are built from (issue 15, migration 10): replica time per endpoint,
// team, hour and instance shape, sampled by the control plane from its replicas, and LLM
// tokens per endpoint, team and hour from the gateways' reports. Requests come from the
// demand history (scaling-records.ts: DemandRow.arrivals), which every gateway reports.

/** Replica time of one endpoint and shape in one hour. Rows with the same key add up. */
export interface UsageRow {
  readonly endpoint: string;
  /** The endpoint's team when the time was sampled (chargeback follows the team then). */
  readonly team: string;
  /** ISO time on a whole hour. */
  readonly hourStart: string;
  /** The shape (price-table.ts: ReplicaShape): what one replica holds. */
  readonly cpu: number;
  readonly memoryGiB: number;
  /** '' when it holds no accelerator. */
  readonly acceleratorType: string;
  readonly accelerators: number;
  readonly capacity: 'spot' | 'on-demand';
  /** Seconds of replicas of this shape running (2 replicas for 10 s: 20). */
  readonly replicaSeconds: number;
  /**
   * Of those, the seconds a worker load reading covered, and the CPU busy seconds they showed
   * (utilization 0..1 of the worker's threads × seconds): mean utilization = busy / observed.
   */
  readonly observedSeconds: number;
  readonly cpuBusySeconds: number;
}

/** LLM tokens an endpoint answered in one hour. */
export interface TokenUsageRow {
  readonly endpoint: string;
  readonly team: string;
  /** ISO time on a whole hour. */
  readonly hourStart: string;
  readonly promptTokens: number;
  readonly completionTokens: number;
}

export interface UsageQuery {
  /** Rows whose hourStart is in [since, until). */
  readonly since: string;
  readonly until?: string;
  readonly endpoint?: string;
}

/** Usage rows are per hour: hourStart must be an ISO time on a multiple of this. */
export const usageHourMs = 3_600_000;
