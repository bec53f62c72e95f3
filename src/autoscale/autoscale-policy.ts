// An endpoint's autoscaling policy (issue 14): how many replicas it may run, on which signal
// it scales and how fast. Stored in the endpoint's config (`config.autoscale`, like KServe's
// minReplicas / maxReplicas / scaleMetric on the InferenceService spec); the gateway and the
// workers never see it (it is not part of the worker revision).
//
// The decision algorithm (autoscaler.ts) is Knative's KPA in shape: desired replicas =
// ceil(signal / target) averaged over a stable window, or over a short panic window while
// demand is at least `panicThreshold` × current capacity; in panic it never scales down.

/** What an endpoint scales on. Each is a per-replica quantity compared with `target`. */
export type ScaleSignal =
  /** Requests in flight at the gateways (time-averaged over the window), per replica. */
  | 'concurrency'
  /** Requests per second arriving at the gateways, per replica. */
  | 'qps'
  /** Requests waiting in the workers' queues (batcher / engine waiting), per replica. */
  | 'queue-depth'
  /** Worker process CPU utilization, 0..1 of one core × the worker's threads, per replica. */
  | 'cpu'
  /** Accelerator utilization 0..1 as the worker reports it (null where it has none). */
  | 'accelerator'
  /** A worker-reported custom metric, by name (e.g. `tokens_per_second`), per replica. */
  | 'custom';

export const scaleSignals: readonly ScaleSignal[] = [
  'concurrency',
  'qps',
  'queue-depth',
  'cpu',
  'accelerator',
  'custom',
];

export interface ScaleToZeroPolicy {
  /** Idle this long (no request arrived, none in flight) → zero replicas. Default 300 000. */
  readonly idleMs: number;
  /** Most requests one gateway holds for the endpoint while it wakes (beyond: 503). Default 100. */
  readonly queueLimit: number;
  /** How long one held request waits for a first replica before 503. Default 30 000. */
  readonly timeoutMs: number;
  /**
   * The cold start the owner accepts (wake → first answer). Reported against: a cold start
   * over budget is counted (`kiln_cold_start_over_budget_total`) and shown in status.
   * Default 10 000.
   */
  readonly coldStartBudgetMs: number;
}

export interface PredictivePolicy {
  /**
   * How far ahead replicas are added: a replica's start-up time. Absent: measured (the
   * endpoint's recent replica start durations, p90), else 30 000.
   */
  readonly startupMs?: number;
  /** Learn the profile from this much stored history. Default 14 days. */
  readonly historyDays: number;
  /** Profile bucket width (time of day × day of week). Default 600 000 (10 min). */
  readonly bucketMs: number;
}

export interface AutoscalePolicy {
  /** >= 0; 0 allows scale-to-zero (then `scaleToZero` applies, with its defaults). */
  readonly minReplicas: number;
  /** >= max(1, minReplicas). */
  readonly maxReplicas: number;
  readonly signal: ScaleSignal;
  /** Name of the worker metric when `signal` is 'custom' (else absent). */
  readonly customMetric?: string;
  /** Target value of the signal per replica, > 0 (utilizations: in (0, 1]). */
  readonly target: number;
  /** Default 60 000. */
  readonly stableWindowMs: number;
  /** Default 6 000; < stableWindowMs. */
  readonly panicWindowMs: number;
  /** Panic when panic-window demand >= this × current ready capacity. Default 2. */
  readonly panicThreshold: number;
  /** Most the replica count may grow per decision: × factor (>= 1). Default 1000 (Knative). */
  readonly maxScaleUpRate: number;
  /** Most it may shrink per decision: ÷ factor (>= 1). Default 2. */
  readonly maxScaleDownRate: number;
  /** A scale-down happens only after the lower target held this long. Default 30 000. */
  readonly scaleDownDelayMs: number;
  /** Applies when minReplicas is 0. */
  readonly scaleToZero?: ScaleToZeroPolicy;
  /** Absent: reactive only. */
  readonly predictive?: PredictivePolicy;
}

/** What a user may leave out (filled with the defaults above by `resolveAutoscalePolicy`). */
export type AutoscalePolicyInput = Partial<Omit<AutoscalePolicy, 'scaleToZero' | 'predictive'>> & {
  readonly minReplicas: number;
  readonly maxReplicas: number;
  readonly signal?: ScaleSignal;
  readonly scaleToZero?: Partial<ScaleToZeroPolicy>;
  readonly predictive?: Partial<PredictivePolicy> | boolean;
};

export const defaultTargets: Readonly<Record<ScaleSignal, number>> = {
  concurrency: 1,
  qps: 100,
  'queue-depth': 4,
  cpu: 0.7,
  accelerator: 0.7,
  custom: 1,
};

export type AutoscalePolicyCheck =
  | { readonly ok: true; readonly policy: AutoscalePolicy }
  | { readonly ok: false; readonly reason: string };

/**
 * Checks a policy as a user wrote it (JSON from the API, a file, CLI flags) and fills in the
 * defaults. Bad input is a reason naming the field: "minReplicas (5) > maxReplicas (2)",
 * "unknown signal 'latency' (one of: …)", "target must be > 0, got 0" …
 */
export function resolveAutoscalePolicy(input: unknown): AutoscalePolicyCheck {
  void input;
  throw new Error('resolveAutoscalePolicy: not implemented yet (issue 14, helper A)');
}
