// An endpoint's autoscaling policy (issue 14): how many replicas it may run, on which signal
// it scales and how fast. Stored in the endpoint's config (`config.autoscale`, like KServe's
// minReplicas / maxReplicas / scaleMetric on the InferenceService spec); the gateway and the
// workers never see it (it is not part of the worker revision).
//
// The decision algorithm (autoscaler.ts) is Knative's KPA in shape: desired replicas =
// ceil(signal / target) averaged over a stable window, or over a short panic window while
// demand is at least `panicThreshold` × current capacity; in panic it never scales down.

import type { LatencyObjective } from './slo-sizing.ts';

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
  | 'custom'
  /**
   * A latency objective (`slo`): the fewest replicas that keep `slo.objective` of requests
   * within `slo.latencyMs`, by a queueing model over the measured arrival rate and service
   * time (slo-sizing.ts); no per-replica target.
   */
  | 'slo';

export const scaleSignals: readonly ScaleSignal[] = [
  'concurrency',
  'qps',
  'queue-depth',
  'cpu',
  'accelerator',
  'custom',
  'slo',
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
  /**
   * Target value of the signal per replica, > 0 (utilizations: in (0, 1]). Signal `slo` has
   * none (1, unused): the objective sizes the count.
   */
  readonly target: number;
  /** With signal `slo` (and only then): the latency objective the count is sized to. */
  readonly slo?: LatencyObjective;
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
  /**
   * Replicas of margin before a scale-down: the stable window's count goes down only once the
   * signal is at most (current - 1 - this) × target, i.e. it would fit one replica fewer with
   * this many to spare (up: as soon as it exceeds current × target). Against flapping on noisy
   * load around a boundary. In [0, 10]. Default 0.5; absent (a policy built by hand): 0.5.
   */
  readonly scaleDownHysteresis?: number;
  /** Applies when minReplicas is 0. */
  readonly scaleToZero?: ScaleToZeroPolicy;
  /** Absent: reactive only. */
  readonly predictive?: PredictivePolicy;
}

/** What a user may leave out (filled with the defaults above by `resolveAutoscalePolicy`). */
export type AutoscalePolicyInput = Partial<
  Omit<AutoscalePolicy, 'scaleToZero' | 'predictive' | 'slo'>
> & {
  readonly minReplicas: number;
  readonly maxReplicas: number;
  readonly signal?: ScaleSignal;
  readonly slo?: Partial<LatencyObjective>;
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
  slo: 1,
};

export type AutoscalePolicyCheck =
  | { readonly ok: true; readonly policy: AutoscalePolicy }
  | { readonly ok: false; readonly reason: string };

/** The defaults `resolveAutoscalePolicy` fills in (targets: `defaultTargets`, by signal). */
export const autoscaleDefaults = {
  signal: 'concurrency',
  stableWindowMs: 60_000,
  panicWindowMs: 6_000,
  panicThreshold: 2,
  maxScaleUpRate: 1000,
  maxScaleDownRate: 2,
  scaleDownDelayMs: 30_000,
  scaleDownHysteresis: 0.5,
  scaleToZero: { idleMs: 300_000, queueLimit: 100, timeoutMs: 30_000, coldStartBudgetMs: 10_000 },
  predictive: { historyDays: 14, bucketMs: 600_000 },
} as const satisfies {
  signal: ScaleSignal;
  scaleToZero: ScaleToZeroPolicy;
  predictive: PredictivePolicy;
} & Omit<
  AutoscalePolicy,
  'minReplicas' | 'maxReplicas' | 'signal' | 'target' | 'scaleToZero' | 'predictive'
>;

/** What `slo` fills in when left out. */
export const sloDefaults = { objective: 0.999 } as const;

/** Samples arrive once a second: a window or idle period shorter than that sees nothing. */
const minWindowMs = 1000;
/** An hour, Knative's bound on the stable window; also bounds the scale-down delay. */
const maxWindowMs = 3_600_000;
const dayMs = 86_400_000;
/** Utilizations are fractions of one replica's capacity; a target above 1 is never reached. */
const utilizationSignals: ReadonlySet<ScaleSignal> = new Set(['cpu', 'accelerator']);

/**
 * Checks a policy as a user wrote it (JSON from the API, a file, CLI flags) and fills in the
 * defaults. Bad input is a reason naming the field: "minReplicas (5) > maxReplicas (2)",
 * "unknown signal 'latency' (one of: …)", "target must be > 0, got 0" … Every problem found is
 * named, joined by "; ", so one round trip fixes them all.
 */
export function resolveAutoscalePolicy(input: unknown): AutoscalePolicyCheck {
  if (!isRecord(input)) {
    return { ok: false, reason: `the policy must be a JSON object, got ${describe(input)}` };
  }
  const problems: string[] = [];
  unknownFields(input, policyFields, '', problems);

  const minReplicas = requiredIntegerField(input, 'minReplicas', 0, problems);
  const maxReplicas = requiredIntegerField(input, 'maxReplicas', 1, problems);
  if (minReplicas !== undefined && maxReplicas !== undefined && minReplicas > maxReplicas) {
    problems.push(`minReplicas (${minReplicas}) > maxReplicas (${maxReplicas})`);
  }

  let signal: ScaleSignal = autoscaleDefaults.signal;
  if (input.signal !== undefined) {
    if (typeof input.signal === 'string' && isScaleSignal(input.signal)) signal = input.signal;
    else {
      problems.push(
        `unknown signal ${describe(input.signal)} (one of: ${scaleSignals.join(', ')})`,
      );
    }
  }

  let customMetric: string | undefined;
  if (input.customMetric !== undefined) {
    if (
      typeof input.customMetric !== 'string' ||
      !/^[A-Za-z_][A-Za-z0-9_.:-]{0,127}$/.test(input.customMetric)
    ) {
      problems.push(
        `customMetric must be a metric name (letters, digits, _ . : -; at most 128), got ${describe(input.customMetric)}`,
      );
    } else customMetric = input.customMetric;
  }
  if (signal === 'custom' && input.customMetric === undefined) {
    problems.push(
      "signal 'custom' needs customMetric (the worker metric's name, e.g. tokens_per_second)",
    );
  }
  if (signal !== 'custom' && input.customMetric !== undefined) {
    problems.push(`customMetric applies only to signal 'custom' (signal is '${signal}')`);
  }

  let target = defaultTargets[signal];
  const slo = resolveSlo(input.slo, signal, problems);
  if (signal === 'slo' && input.target !== undefined) {
    problems.push(
      "target does not apply to signal 'slo' (the count is sized to slo.latencyMs and slo.objective)",
    );
  } else if (input.target !== undefined) {
    if (!isFiniteNumber(input.target) || input.target <= 0) {
      problems.push(`target must be > 0, got ${describe(input.target)}`);
    } else if (utilizationSignals.has(signal) && input.target > 1) {
      problems.push(
        `target of signal '${signal}' is a utilization in (0, 1], got ${String(input.target)}`,
      );
    } else target = input.target;
  }

  const stableWindowMs =
    numberField(input, 'stableWindowMs', minWindowMs, maxWindowMs, problems) ??
    autoscaleDefaults.stableWindowMs;
  const panicWindowMs =
    numberField(input, 'panicWindowMs', minWindowMs, maxWindowMs, problems) ??
    autoscaleDefaults.panicWindowMs;
  if (panicWindowMs >= stableWindowMs) {
    problems.push(`panicWindowMs (${panicWindowMs}) must be < stableWindowMs (${stableWindowMs})`);
  }
  const panicThreshold =
    numberField(input, 'panicThreshold', 1, 100, problems) ?? autoscaleDefaults.panicThreshold;
  const maxScaleUpRate =
    numberField(input, 'maxScaleUpRate', 1, undefined, problems) ??
    autoscaleDefaults.maxScaleUpRate;
  const maxScaleDownRate =
    numberField(input, 'maxScaleDownRate', 1, undefined, problems) ??
    autoscaleDefaults.maxScaleDownRate;
  const scaleDownDelayMs =
    numberField(input, 'scaleDownDelayMs', 0, maxWindowMs, problems) ??
    autoscaleDefaults.scaleDownDelayMs;

  const scaleDownHysteresis =
    numberField(input, 'scaleDownHysteresis', 0, 10, problems) ??
    autoscaleDefaults.scaleDownHysteresis;

  const scaleToZero = resolveScaleToZero(input.scaleToZero, minReplicas, problems);
  const predictive = resolvePredictive(input.predictive, problems);
  if (predictive !== undefined && signal !== 'concurrency' && signal !== 'qps') {
    // The demand history the profile learns from is the gateways' (arrivals, concurrency).
    problems.push(
      `predictive needs signal concurrency or qps (the demand history), not '${signal}'`,
    );
  }

  if (problems.length > 0 || minReplicas === undefined || maxReplicas === undefined) {
    return { ok: false, reason: problems.join('; ') };
  }
  const policy: AutoscalePolicy = {
    minReplicas,
    maxReplicas,
    signal,
    ...(customMetric !== undefined ? { customMetric } : {}),
    target,
    ...(slo !== undefined ? { slo } : {}),
    stableWindowMs,
    panicWindowMs,
    panicThreshold,
    maxScaleUpRate,
    maxScaleDownRate,
    scaleDownDelayMs,
    scaleDownHysteresis,
    ...(scaleToZero !== undefined ? { scaleToZero } : {}),
    ...(predictive !== undefined ? { predictive } : {}),
  };
  return { ok: true, policy };
}

export function isScaleSignal(value: string): value is ScaleSignal {
  return (scaleSignals as readonly string[]).includes(value);
}

const policyFields = [
  'minReplicas',
  'maxReplicas',
  'signal',
  'customMetric',
  'target',
  'slo',
  'stableWindowMs',
  'panicWindowMs',
  'panicThreshold',
  'maxScaleUpRate',
  'maxScaleDownRate',
  'scaleDownDelayMs',
  'scaleDownHysteresis',
  'scaleToZero',
  'predictive',
] as const satisfies readonly (keyof AutoscalePolicy)[];
const scaleToZeroFields = [
  'idleMs',
  'queueLimit',
  'timeoutMs',
  'coldStartBudgetMs',
] as const satisfies readonly (keyof ScaleToZeroPolicy)[];
const sloFields = ['latencyMs', 'objective'] as const satisfies readonly (keyof LatencyObjective)[];
const predictiveFields = [
  'startupMs',
  'historyDays',
  'bucketMs',
] as const satisfies readonly (keyof PredictivePolicy)[];

function resolveScaleToZero(
  value: unknown,
  minReplicas: number | undefined,
  problems: string[],
): ScaleToZeroPolicy | undefined {
  if (value !== undefined && minReplicas !== undefined && minReplicas > 0) {
    problems.push(`scaleToZero applies only when minReplicas is 0 (minReplicas is ${minReplicas})`);
    return undefined;
  }
  if (minReplicas !== 0) return undefined;
  const defaults = autoscaleDefaults.scaleToZero;
  if (value === undefined) return { ...defaults };
  if (!isRecord(value)) {
    problems.push(`scaleToZero must be an object, got ${describe(value)}`);
    return undefined;
  }
  unknownFields(value, scaleToZeroFields, 'scaleToZero.', problems);
  const at = (field: string): string => `scaleToZero.${field}`;
  return {
    idleMs: numberField(value, 'idleMs', minWindowMs, undefined, problems, at) ?? defaults.idleMs,
    queueLimit: integerField(value, 'queueLimit', 1, 100_000, problems, at) ?? defaults.queueLimit,
    timeoutMs: numberField(value, 'timeoutMs', 1, undefined, problems, at) ?? defaults.timeoutMs,
    coldStartBudgetMs:
      numberField(value, 'coldStartBudgetMs', 1, undefined, problems, at) ??
      defaults.coldStartBudgetMs,
  };
}

/** Signal `slo` needs `slo: {latencyMs, objective?}`; any other signal takes none. */
function resolveSlo(
  value: unknown,
  signal: ScaleSignal,
  problems: string[],
): LatencyObjective | undefined {
  if (signal !== 'slo') {
    if (value !== undefined)
      problems.push(`slo applies only to signal 'slo' (signal is '${signal}')`);
    return undefined;
  }
  if (value === undefined) {
    problems.push("signal 'slo' needs slo: {latencyMs, objective} (e.g. {latencyMs: 200})");
    return undefined;
  }
  if (!isRecord(value)) {
    problems.push(`slo must be an object {latencyMs, objective}, got ${describe(value)}`);
    return undefined;
  }
  unknownFields(value, sloFields, 'slo.', problems);
  const at = (field: string): string => `slo.${field}`;
  let latencyMs: number | undefined;
  if (value.latencyMs === undefined) problems.push('slo.latencyMs is required (ms, > 0)');
  else if (!isFiniteNumber(value.latencyMs) || value.latencyMs <= 0) {
    problems.push(`slo.latencyMs must be a number > 0 (ms), got ${describe(value.latencyMs)}`);
  } else latencyMs = value.latencyMs;
  let objective: number = sloDefaults.objective;
  if (value.objective !== undefined) {
    if (!isFiniteNumber(value.objective) || value.objective <= 0 || value.objective >= 1) {
      problems.push(
        `${at('objective')} must be a share in (0, 1) (e.g. 0.999), got ${describe(value.objective)}`,
      );
    } else objective = value.objective;
  }
  return latencyMs === undefined ? undefined : { latencyMs, objective };
}

function resolvePredictive(value: unknown, problems: string[]): PredictivePolicy | undefined {
  if (value === undefined || value === false) return undefined;
  const defaults = autoscaleDefaults.predictive;
  if (value === true) return { ...defaults };
  if (!isRecord(value)) {
    problems.push(`predictive must be true, false or an object, got ${describe(value)}`);
    return undefined;
  }
  unknownFields(value, predictiveFields, 'predictive.', problems);
  const at = (field: string): string => `predictive.${field}`;
  const startupMs = numberField(value, 'startupMs', 1, undefined, problems, at);
  const historyDays =
    integerField(value, 'historyDays', 1, 366, problems, at) ?? defaults.historyDays;
  const bucketMs =
    integerField(value, 'bucketMs', 60_000, dayMs, problems, at) ?? defaults.bucketMs;
  if (dayMs % bucketMs !== 0) {
    problems.push(`predictive.bucketMs (${bucketMs}) must divide a day (86400000 ms) evenly`);
  }
  return { ...(startupMs !== undefined ? { startupMs } : {}), historyDays, bucketMs };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isFiniteNumber(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value);
}

function describe(value: unknown): string {
  if (typeof value === 'string') return `'${value}'`;
  if (value === null || typeof value === 'number' || typeof value === 'boolean') {
    return String(value);
  }
  return Array.isArray(value) ? 'an array' : typeof value;
}

function unknownFields(
  value: Record<string, unknown>,
  known: readonly string[],
  prefix: string,
  problems: string[],
): void {
  for (const key of Object.keys(value)) {
    if (!known.includes(key)) problems.push(`unknown field '${prefix}${key}'`);
  }
}

const plain = (field: string): string => field;

/** A number field in [min, max]; absent → undefined, bad → a problem and undefined. */
function numberField(
  value: Record<string, unknown>,
  field: string,
  min: number,
  max: number | undefined,
  problems: string[],
  name: (field: string) => string = plain,
): number | undefined {
  const raw = value[field];
  if (raw === undefined) return undefined;
  if (!isFiniteNumber(raw) || raw < min || (max !== undefined && raw > max)) {
    const range = max === undefined ? `>= ${min}` : `in [${min}, ${max}]`;
    problems.push(`${name(field)} must be a number ${range}, got ${describe(raw)}`);
    return undefined;
  }
  return raw;
}

/** An integer field in [min, max]; absent → undefined, bad → a problem and undefined. */
function integerField(
  value: Record<string, unknown>,
  field: string,
  min: number,
  max: number | undefined,
  problems: string[],
  name: (field: string) => string = plain,
): number | undefined {
  const raw = value[field];
  if (raw === undefined) return undefined;
  if (
    typeof raw !== 'number' ||
    !Number.isInteger(raw) ||
    raw < min ||
    (max !== undefined && raw > max)
  ) {
    const range = max === undefined ? `>= ${min}` : `in [${min}, ${max}]`;
    problems.push(`${name(field)} must be an integer ${range}, got ${describe(raw)}`);
    return undefined;
  }
  return raw;
}

function requiredIntegerField(
  value: Record<string, unknown>,
  field: string,
  min: number,
  problems: string[],
): number | undefined {
  if (value[field] === undefined) {
    problems.push(`${field} is required (an integer >= ${min})`);
    return undefined;
  }
  return integerField(value, field, min, undefined, problems);
}
