// Judges one canary step (issue 13): the canary against the baseline over one window, overall
// and per value of the configured slice key, so a regression that lives in one slice (one
// country's inputs) is caught while the whole-traffic figures stay within bounds.
//
//   per scope (overall, slice k=v1, slice k=v2, ...):
//     requests < min on either side          -> insufficient-data
//     error rate  canary > maxErrorRate AND canary significantly > baseline
//                 (one-sided two-proportion z-test, p < alpha)             -> breach
//     p99         canary latency sketch p99 > maxP99Ms                     -> breach
//     PSI         canary outputs vs baseline outputs (baseline deciles) > maxPsi -> breach
//   decision: any breach -> rollback; else any insufficient-data / invalid-input -> wait;
//             else promote-step
//
// The error rate alone is not enough to roll back: when the baseline fails as often (a bad
// input stream, a downstream outage) the canary is not the cause. Rollback beats wait: a slice
// that already breaches is not excused because another slice lacks data. Pure: no clock, no
// I/O; the same observations give the same verdict.

import type {
  CanaryReason,
  CanaryScope,
  CanaryVerdict,
  ErrorRateReason,
  OutputPsiReason,
  P99LatencyReason,
} from './canary-reason.ts';
import { resolveCanaryThresholds, type CanaryThresholds } from './canary-thresholds.ts';
import type { ResolvedCanaryThresholds } from './canary-thresholds.ts';
import type { HistogramSketch } from './histogram-sketch.ts';
import { normalSurvival } from './normal-cdf.ts';
import { sketchStabilityIndex } from './sketch-stability-index.ts';
import { checkProportionGroup } from './two-proportion-test.ts';

/** One version's observations in one scope over the window (merged gateway reports). */
export interface CanaryWindow {
  readonly requests: number;
  /** Requests that failed (5xx, timeouts); 0 <= errors <= requests. */
  readonly errors: number;
  /** Request latencies in milliseconds. */
  readonly latencyMs: HistogramSketch;
  /** Model outputs (a score, a regression value) of the successful requests. */
  readonly outputs: HistogramSketch;
}

export interface VersionObservations {
  readonly overall: CanaryWindow;
  /** Per value of the slice key ('de' for country=de); absent or empty with no slice key. */
  readonly slices?: Readonly<Record<string, CanaryWindow>>;
}

export interface CanaryAnalysisInput {
  readonly thresholds: CanaryThresholds;
  /** The configured slice key (e.g. 'country'); names slice scopes ('slice country=de'). */
  readonly sliceKey?: string;
  readonly baseline: VersionObservations;
  readonly canary: VersionObservations;
}

export function analyzeCanaryStep(input: CanaryAnalysisInput): CanaryVerdict {
  const resolved = resolveCanaryThresholds(input.thresholds);
  if (!resolved.ok) {
    const reasons = resolved.problems.map((problem): CanaryReason => ({
      check: 'input',
      outcome: 'invalid-input',
      problem: 'invalid-thresholds',
      scope: 'overall',
      message: `thresholds: ${problem.message}`,
    }));
    return { decision: 'wait', reasons, checks: reasons };
  }
  const thresholds = resolved.thresholds;
  const checks: CanaryReason[] = judgeScope(
    'overall',
    input.baseline.overall,
    input.canary.overall,
    thresholds.minRequests,
    thresholds,
  );
  const baselineSlices = input.baseline.slices ?? {};
  const canarySlices = input.canary.slices ?? {};
  const sliceValues = [
    ...new Set([...Object.keys(baselineSlices), ...Object.keys(canarySlices)]),
  ].sort();
  for (const value of sliceValues) {
    const scope =
      input.sliceKey === undefined ? `slice ${value}` : `slice ${input.sliceKey}=${value}`;
    const baseline = Object.hasOwn(baselineSlices, value) ? baselineSlices[value] : undefined;
    const canary = Object.hasOwn(canarySlices, value) ? canarySlices[value] : undefined;
    if (baseline === undefined || canary === undefined) {
      // A slice reported for one version only cannot be compared; a new value seen first on
      // the canary (or a gateway that dropped it) is a reason to wait, not to guess.
      const side = baseline === undefined ? 'canary' : 'baseline';
      const requests = (baseline ?? canary)?.requests ?? 0;
      checks.push({
        check: 'input',
        outcome: 'invalid-input',
        problem: 'slice-on-one-side',
        scope,
        message: `${scope}: reported by the ${side} only (${requests} requests), nothing to compare with`,
      });
      continue;
    }
    checks.push(...judgeScope(scope, baseline, canary, thresholds.minSliceRequests, thresholds));
  }
  const breaches = checks.filter((check) => check.outcome === 'breach');
  if (breaches.length > 0) return { decision: 'rollback', reasons: breaches, checks };
  const pending = checks.filter(
    (check) => check.outcome === 'insufficient-data' || check.outcome === 'invalid-input',
  );
  if (pending.length > 0) return { decision: 'wait', reasons: pending, checks };
  return { decision: 'promote-step', reasons: checks, checks };
}

function judgeScope(
  scope: CanaryScope,
  baseline: CanaryWindow,
  canary: CanaryWindow,
  minRequests: number,
  thresholds: ResolvedCanaryThresholds,
): CanaryReason[] {
  // An empty side is merely too little data; anything else (errors > requests, NaN) is bad input.
  const bad = [
    checkProportionGroup('baseline', { successes: baseline.errors, trials: baseline.requests }),
    checkProportionGroup('canary', { successes: canary.errors, trials: canary.requests }),
  ].find((problem) => problem !== null && problem.reason !== 'empty-group');
  if (bad) {
    return [
      {
        check: 'input',
        outcome: 'invalid-input',
        problem: 'count-out-of-range',
        scope,
        message: `${scope}: ${bad.message}`,
      },
    ];
  }
  if (baseline.requests < minRequests || canary.requests < minRequests) {
    return [
      {
        check: 'request-count',
        outcome: 'insufficient-data',
        scope,
        baselineRequests: baseline.requests,
        canaryRequests: canary.requests,
        minRequests,
        message:
          `${scope}: too few requests to judge (baseline ${baseline.requests}, ` +
          `canary ${canary.requests}; ${minRequests} needed per version)`,
      },
    ];
  }
  return [
    judgeErrorRate(scope, baseline, canary, thresholds),
    judgeP99(scope, baseline, canary, minRequests, thresholds),
    judgeOutputPsi(scope, baseline, canary, minRequests, thresholds),
  ];
}

function judgeErrorRate(
  scope: CanaryScope,
  baseline: CanaryWindow,
  canary: CanaryWindow,
  { maxErrorRate, alpha }: ResolvedCanaryThresholds,
): ErrorRateReason {
  const baselineRate = baseline.errors / baseline.requests;
  const canaryRate = canary.errors / canary.requests;
  // The pooled z statistic of twoProportionTest, read one-sided: only "canary worse" matters.
  const pooled = (baseline.errors + canary.errors) / (baseline.requests + canary.requests);
  const pooledSe = Math.sqrt(pooled * (1 - pooled) * (1 / baseline.requests + 1 / canary.requests));
  const pValue = pooledSe === 0 ? null : normalSurvival((canaryRate - baselineRate) / pooledSe);
  const significant = pValue !== null && pValue < alpha;
  const above = canaryRate > maxErrorRate;
  const breach = above && significant;
  const measured =
    `canary error rate ${fixed(canaryRate)} (${canary.errors}/${canary.requests}), ` +
    `baseline ${fixed(baselineRate)} (${baseline.errors}/${baseline.requests}), ` +
    `one-sided p = ${pValue === null ? 'n/a' : pValue.toPrecision(3)}`;
  const verdict = breach
    ? `above maxErrorRate ${maxErrorRate} and significantly above baseline (p < alpha ${alpha})`
    : above
      ? `above maxErrorRate ${maxErrorRate} but not significantly above baseline (alpha ${alpha})`
      : `within maxErrorRate ${maxErrorRate}`;
  return {
    check: 'error-rate',
    outcome: breach ? 'breach' : 'pass',
    scope,
    canaryErrors: canary.errors,
    canaryRequests: canary.requests,
    canaryErrorRate: canaryRate,
    baselineErrors: baseline.errors,
    baselineRequests: baseline.requests,
    baselineErrorRate: baselineRate,
    pValue,
    alpha,
    maxErrorRate,
    message: `${scope}: ${measured}: ${verdict}`,
  };
}

function judgeP99(
  scope: CanaryScope,
  baseline: CanaryWindow,
  canary: CanaryWindow,
  minRequests: number,
  { maxP99Ms }: ResolvedCanaryThresholds,
): P99LatencyReason {
  const canaryP99Ms = canary.latencyMs.quantile(0.99);
  const baselineP99Ms = baseline.latencyMs.quantile(0.99);
  const base = {
    check: 'p99-latency',
    scope,
    canaryP99Ms,
    baselineP99Ms,
    canaryLatencies: canary.latencyMs.count,
    maxP99Ms,
  } as const;
  if (canaryP99Ms === null || canary.latencyMs.count < minRequests) {
    return {
      ...base,
      outcome: 'insufficient-data',
      message: `${scope}: ${canary.latencyMs.count} canary latencies, ${minRequests} needed for a p99`,
    };
  }
  const breach = canaryP99Ms > maxP99Ms;
  return {
    ...base,
    outcome: breach ? 'breach' : 'pass',
    message:
      `${scope}: canary p99 ${canaryP99Ms.toFixed(1)} ms ${breach ? 'above' : 'within'} ` +
      `maxP99Ms ${maxP99Ms} (baseline ${baselineP99Ms === null ? 'n/a' : baselineP99Ms.toFixed(1)} ms)`,
  };
}

function judgeOutputPsi(
  scope: CanaryScope,
  baseline: CanaryWindow,
  canary: CanaryWindow,
  minRequests: number,
  { maxPsi, psiBins }: ResolvedCanaryThresholds,
): OutputPsiReason {
  const base = {
    check: 'output-psi',
    scope,
    baselineOutputs: baseline.outputs.count,
    canaryOutputs: canary.outputs.count,
    maxPsi,
  } as const;
  // PSI of two samples is biased upwards by about (bins - 1)(1/n_b + 1/n_c) under no shift,
  // so it is judged only once both sides have the scope's minimum of outputs.
  if (baseline.outputs.count < minRequests || canary.outputs.count < minRequests) {
    return {
      ...base,
      psi: null,
      outcome: 'insufficient-data',
      message:
        `${scope}: too few outputs for PSI (baseline ${baseline.outputs.count}, ` +
        `canary ${canary.outputs.count}; ${minRequests} needed per version)`,
    };
  }
  const result = sketchStabilityIndex(baseline.outputs, canary.outputs, psiBins);
  if (!result.ok) {
    return {
      ...base,
      psi: null,
      outcome: 'invalid-input',
      invalidReason: result.reason,
      message: `${scope}: output PSI cannot be computed: ${result.message}`,
    };
  }
  const breach = result.psi > maxPsi;
  return {
    ...base,
    psi: result.psi,
    outcome: breach ? 'breach' : 'pass',
    message: `${scope}: PSI of canary outputs vs baseline ${result.psi.toFixed(4)} ${breach ? 'above' : 'within'} maxPsi ${maxPsi}`,
  };
}

function fixed(rate: number): string {
  return rate.toFixed(4);
}
