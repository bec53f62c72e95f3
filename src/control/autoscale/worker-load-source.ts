// Where the autoscale controller reads what the workers report of their own load (issue 14):
// GET /kiln/v1/load of each ready replica, summed per endpoint. The controller only reads the
// latest sums once per tick (synchronously, never waiting on a worker); the poller
// (worker-load-poller.ts) polls on its own loop. Gateways measure demand (concurrency, qps,
// held); workers measure what only they see (queue depth, CPU, accelerator, custom metrics).

/** One endpoint's worker load, summed over its ready replicas that answered the last poll. */
export interface EndpointWorkerLoad {
  /** When the poll these sums come from finished (ms since the epoch, the platform clock). */
  readonly atMs: number;
  /** Ready replicas whose answer is in the sums. */
  readonly replicas: number;
  /** Requests waiting in the workers' queues; null: no replica reported it. */
  readonly queueDepth: number | null;
  /** CPU utilization summed over replicas (each 0..1 of its threads); null: not reported. */
  readonly cpu: number | null;
  /** Threads per replica (mean over those reporting): cpu × this is cores busy; null: none. */
  readonly threads: number | null;
  /** Accelerator utilization summed (each 0..1); null: no replica has one. */
  readonly accelerator: number | null;
  /** Custom metrics by name, summed over the replicas that reported each. */
  readonly custom: Readonly<Record<string, number>>;
}

export interface WorkerLoadSource {
  /**
   * The endpoints whose policy scales on worker load (queue-depth, cpu, accelerator, custom,
   * slo: its service time is busy CPU per answer).
   * Called by the controller every tick with the full set: the source polls these and may stop
   * polling any other.
   */
  watch(endpoints: ReadonlySet<string>): void;
  /**
   * The latest sums for an endpoint; null when there are none or they are stale (older than a
   * few polls: a worker that stopped answering must not hold a count up for ever).
   */
  latest(endpoint: string): EndpointWorkerLoad | null;
}

/** No worker load known (no poller): samples carry nulls and an empty custom map. */
export const noWorkerLoad: WorkerLoadSource = {
  watch: () => undefined,
  latest: () => null,
};
