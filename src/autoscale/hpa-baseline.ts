// The baseline Kiln's policy is compared with (issue 14's bench and the simulator): a plain
// reactive scaler shaped like the Kubernetes HorizontalPodAutoscaler (autoscaling/v2 with its
// default behavior). Every sync period (15 s) it takes the metric's mean since the previous
// sync, and:
//
//   ratio   = (signal per ready replica) / target
//   desired = current                      when |ratio - 1| <= tolerance (0.1)
//           = ceil(ready × ratio)          otherwise  (= ceil(signal / target))
//   up      : at most max(2 × current, current + 4) per sync (the default scale-up policies)
//   down    : the max of the recommendations over the last 5 min (scale-down stabilization)
//   bounds  : [minReplicas >= 1, maxReplicas]; no panic mode, no scale to zero, no forecast.
//
// Pure like the Autoscaler: no clock reads, the same samples, the same ScalingPolicyRunner.

import {
  defaultTargets,
  isScaleSignal,
  scaleSignals,
  type ScaleSignal,
} from './autoscale-policy.ts';
import type { ScaleDecision, ScalingPolicyRunner } from './autoscaler.ts';
import type { ScaleSample } from './scale-signals.ts';
import { signalValue } from './signal-value.ts';

export interface HpaPolicy {
  /** >= 1: the HPA never scales to zero. */
  readonly minReplicas: number;
  readonly maxReplicas: number;
  readonly signal: ScaleSignal;
  /** When signal is 'custom'. */
  readonly customMetric?: string;
  /** Target value per replica (utilizations in (0, 1], e.g. targetAverageUtilization 70 % → 0.7). */
  readonly target: number;
  /** --horizontal-pod-autoscaler-sync-period. Default 15 000. */
  readonly syncPeriodMs: number;
  /** --horizontal-pod-autoscaler-tolerance. Default 0.1. */
  readonly tolerance: number;
  /** behavior.scaleDown.stabilizationWindowSeconds. Default 300 000. */
  readonly scaleDownStabilizationMs: number;
}

export const hpaDefaults = {
  signal: 'cpu',
  syncPeriodMs: 15_000,
  tolerance: 0.1,
  scaleDownStabilizationMs: 300_000,
} as const;

export type HpaPolicyCheck =
  | { readonly ok: true; readonly policy: HpaPolicy }
  | { readonly ok: false; readonly reason: string };

const hpaFields = [
  'minReplicas',
  'maxReplicas',
  'signal',
  'customMetric',
  'target',
  'syncPeriodMs',
  'tolerance',
  'scaleDownStabilizationMs',
] as const satisfies readonly (keyof HpaPolicy)[];

/** Checks an HPA policy as written (a simulator policy file of kind 'hpa'), filling defaults. */
export function resolveHpaPolicy(input: unknown): HpaPolicyCheck {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    return { ok: false, reason: 'the hpa policy must be a JSON object' };
  }
  const value = input as Record<string, unknown>;
  const problems: string[] = [];
  for (const key of Object.keys(value)) {
    if (!(hpaFields as readonly string[]).includes(key)) problems.push(`unknown field '${key}'`);
  }
  const integer = (field: string, min: number): number | undefined => {
    const raw = value[field];
    if (typeof raw === 'number' && Number.isInteger(raw) && raw >= min) return raw;
    problems.push(`${field} must be an integer >= ${min}, got ${JSON.stringify(raw) ?? 'nothing'}`);
    return undefined;
  };
  const number = (field: string, fallback: number, good: (n: number) => boolean, rule: string) => {
    const raw = value[field];
    if (raw === undefined) return fallback;
    if (typeof raw === 'number' && Number.isFinite(raw) && good(raw)) return raw;
    problems.push(`${field} must be ${rule}, got ${JSON.stringify(raw)}`);
    return fallback;
  };
  const minReplicas = integer('minReplicas', 1);
  const maxReplicas = integer('maxReplicas', 1);
  if (minReplicas !== undefined && maxReplicas !== undefined && minReplicas > maxReplicas) {
    problems.push(`minReplicas (${minReplicas}) > maxReplicas (${maxReplicas})`);
  }
  let signal: ScaleSignal = hpaDefaults.signal;
  // HPA has no queueing model: Kiln's `slo` signal is not one it scales on.
  const hpaSignals = scaleSignals.filter((name) => name !== 'slo');
  if (value.signal !== undefined) {
    if (typeof value.signal === 'string' && isScaleSignal(value.signal) && value.signal !== 'slo')
      signal = value.signal;
    else {
      problems.push(
        `unknown signal ${JSON.stringify(value.signal)} (one of: ${hpaSignals.join(', ')})`,
      );
    }
  }
  const customMetric = value.customMetric;
  if (signal === 'custom' && (typeof customMetric !== 'string' || customMetric === '')) {
    problems.push("signal 'custom' needs customMetric (the worker metric's name)");
  }
  if (signal !== 'custom' && customMetric !== undefined) {
    problems.push(`customMetric applies only to signal 'custom' (signal is '${signal}')`);
  }
  const utilization = signal === 'cpu' || signal === 'accelerator';
  const target = number(
    'target',
    defaultTargets[signal],
    (n) => n > 0 && (!utilization || n <= 1),
    utilization ? 'a utilization in (0, 1]' : '> 0',
  );
  const syncPeriodMs = number(
    'syncPeriodMs',
    hpaDefaults.syncPeriodMs,
    (n) => n >= 1000,
    '>= 1000',
  );
  const tolerance = number('tolerance', hpaDefaults.tolerance, (n) => n >= 0 && n < 1, 'in [0, 1)');
  const scaleDownStabilizationMs = number(
    'scaleDownStabilizationMs',
    hpaDefaults.scaleDownStabilizationMs,
    (n) => n >= 0,
    '>= 0',
  );
  if (problems.length > 0 || minReplicas === undefined || maxReplicas === undefined) {
    return { ok: false, reason: problems.join('; ') };
  }
  return {
    ok: true,
    policy: {
      minReplicas,
      maxReplicas,
      signal,
      ...(signal === 'custom' && typeof customMetric === 'string' ? { customMetric } : {}),
      target,
      syncPeriodMs,
      tolerance,
      scaleDownStabilizationMs,
    },
  };
}

export class HpaBaseline implements ScalingPolicyRunner {
  /** Samples of the last sync period, oldest first. */
  private readonly samples: ScaleSample[] = [];
  /** Recommendations of the last stabilization window, oldest first. */
  private readonly recommendations: { atMs: number; replicas: number }[] = [];
  private lastSync: { atMs: number; decision: ScaleDecision } | undefined;

  constructor(readonly policy: HpaPolicy) {}

  observe(sample: ScaleSample): void {
    this.samples.push(sample);
    const oldestKept = sample.atMs - this.policy.syncPeriodMs;
    while (this.samples.length > 0 && this.samples[0]!.atMs <= oldestKept) this.samples.shift();
  }

  decide(nowMs: number, current: number): ScaleDecision {
    const p = this.policy;
    const clamp = (n: number): number => Math.min(p.maxReplicas, Math.max(p.minReplicas, n));
    const last = this.lastSync;
    if (last !== undefined && nowMs === last.atMs) return last.decision;
    if (last !== undefined && nowMs - last.atMs < p.syncPeriodMs) {
      return {
        replicas: clamp(current),
        mode: 'stable',
        reactive: last.decision.reactive,
        predictive: 0,
        reason: `between syncs (every ${p.syncPeriodMs / 1000} s)`,
      };
    }
    const decision = this.sync(nowMs, current, clamp);
    this.lastSync = { atMs: nowMs, decision };
    return decision;
  }

  private sync(nowMs: number, current: number, clamp: (n: number) => number): ScaleDecision {
    const p = this.policy;
    let sum = 0;
    let count = 0;
    let ready = 0;
    for (const sample of this.samples) {
      if (sample.atMs <= nowMs - p.syncPeriodMs || sample.atMs > nowMs) continue;
      ready = sample.readyReplicas;
      const value = signalValue(p, sample);
      if (value === null || !Number.isFinite(value)) continue;
      sum += Math.max(0, value);
      count += 1;
    }
    const hold = (why: string): ScaleDecision => ({
      replicas: clamp(current),
      mode: 'stable',
      reactive: current,
      predictive: 0,
      reason: why,
    });
    if (count === 0) return hold(`no ${p.signal} measured; holding ${clamp(current)}`);
    if (ready === 0) return hold(`no ready replica to average over; holding ${clamp(current)}`);
    const mean = sum / count;
    const ratio = mean / ready / p.target;
    const desired = Math.abs(ratio - 1) <= p.tolerance ? current : Math.ceil(ready * ratio - 1e-9);

    this.recommendations.push({ atMs: nowMs, replicas: desired });
    while (
      this.recommendations.length > 0 &&
      this.recommendations[0]!.atMs <= nowMs - p.scaleDownStabilizationMs
    ) {
      this.recommendations.shift();
    }
    const downFloor = this.recommendations.reduce((most, r) => Math.max(most, r.replicas), 0);
    let replicas = current;
    if (desired > current) replicas = Math.min(desired, Math.max(2 * current, current + 4));
    else if (downFloor < current) replicas = downFloor;
    replicas = clamp(replicas);
    const reason =
      `${p.signal} ${mean.toFixed(2)} over ${ready} ready / target ${p.target}: ratio ` +
      `${ratio.toFixed(2)} → ${desired}` +
      (desired < current && replicas > desired
        ? `; stabilized at ${replicas} (max over ${p.scaleDownStabilizationMs / 1000} s)`
        : '');
    return { replicas, mode: 'stable', reactive: desired, predictive: 0, reason };
  }
}
