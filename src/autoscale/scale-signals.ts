// What the autoscaler sees of an endpoint, once per tick: demand measured at the gateways
// (summed over gateways) and load measured at the workers (summed over ready replicas). The
// controller (src/control/autoscale/autoscale-controller.ts) builds one sample per endpoint per second from the
// gateways' load reports (protocol/scaling/load-report.ts) and the workers' GET /kiln/v1/load;
// the simulator builds them from its queueing model. The autoscaler itself reads no clock.

export interface ScaleSample {
  /** When the sample was taken (ms since the epoch, or the simulator's clock). */
  readonly atMs: number;
  /** Replicas ready to serve at atMs (of the endpoint's stable revision). */
  readonly readyReplicas: number;
  /** Replicas started but not ready yet. */
  readonly startingReplicas: number;
  /** Requests in flight at the gateways, time-averaged over the last second; held ones count. */
  readonly concurrency: number;
  /** Requests that arrived per second over the last second (held ones included). */
  readonly qps: number;
  /** Requests answered per second over the last second (what the workers got through). */
  readonly completed: number;
  /** Requests held by gateways' activators now (the endpoint at zero or waking). */
  readonly held: number;
  /** Requests waiting in the workers' queues, summed; null: not reported. */
  readonly queueDepth: number | null;
  /** Sum over ready replicas of CPU utilization (0..1 each); null: not reported. */
  readonly cpu: number | null;
  /**
   * Compute slots per replica (a worker's threads; the simulator's concurrencyPerReplica):
   * cpu × this is the slots busy. Null: not reported.
   */
  readonly slotsPerReplica: number | null;
  /** Sum over ready replicas of accelerator utilization (0..1 each); null: none. */
  readonly accelerator: number | null;
  /** Worker-reported custom metrics, summed over ready replicas, by name. */
  readonly custom: Readonly<Record<string, number>>;
}
