// The limits one canary step is judged against (issue 13: `kiln rollout start ... --max-error-rate
// 0.01 --max-p99-ms 50`). Checked apart from the analysis so that `rollout start` can refuse bad
// ones with a 4xx naming each field, before any traffic moves; the analysis checks them again
// and waits (never promotes, never rolls back) when handed bad ones.

export interface CanaryThresholds {
  /** Error rate (errors / requests, in [0, 1]) the canary may not exceed significantly. */
  readonly maxErrorRate: number;
  /** Limit on the canary's p99 latency, in milliseconds. */
  readonly maxP99Ms: number;
  /** Limit on PSI of canary outputs against baseline outputs; default 0.2. */
  readonly maxPsi?: number;
  /** Requests each version needs in the overall scope before it is judged. */
  readonly minRequests: number;
  /** Requests each version needs in a slice before that slice is judged; default minRequests. */
  readonly minSliceRequests?: number;
  /** Level of the one-sided two-proportion z-test (canary worse than baseline); default 0.05. */
  readonly alpha?: number;
  /** Bins of the output PSI, cut at the baseline's quantiles; default 10 (deciles). */
  readonly psiBins?: number;
}

/** Thresholds with every default filled in. */
export type ResolvedCanaryThresholds = Required<CanaryThresholds>;

export const defaultMaxPsi = 0.2;
export const defaultCanaryAlpha = 0.05;
export const defaultPsiBins = 10;
/**
 * Most PSI bins: the bins are cut at the baseline's quantiles, one quantile lookup each, on
 * every analysis (each tick, each slice); a million bins would hold the control plane's event
 * loop for seconds, and past percentiles they only split a sketch's own buckets.
 */
export const maxPsiBins = 100;

export interface ThresholdProblem {
  readonly field: keyof CanaryThresholds;
  readonly message: string;
}

/** Fills defaults and checks every field; problems name the field and the bad value. */
export function resolveCanaryThresholds(
  thresholds: CanaryThresholds,
):
  { ok: true; thresholds: ResolvedCanaryThresholds } | { ok: false; problems: ThresholdProblem[] } {
  const resolved: ResolvedCanaryThresholds = {
    maxErrorRate: thresholds.maxErrorRate,
    maxP99Ms: thresholds.maxP99Ms,
    maxPsi: thresholds.maxPsi ?? defaultMaxPsi,
    minRequests: thresholds.minRequests,
    minSliceRequests: thresholds.minSliceRequests ?? thresholds.minRequests,
    alpha: thresholds.alpha ?? defaultCanaryAlpha,
    psiBins: thresholds.psiBins ?? defaultPsiBins,
  };
  const problems: ThresholdProblem[] = [];
  const require = (field: keyof CanaryThresholds, good: boolean, rule: string): void => {
    if (!good) problems.push({ field, message: `${field} ${String(resolved[field])} ${rule}` });
  };
  const isNumber = (value: unknown): value is number =>
    typeof value === 'number' && Number.isFinite(value);
  const { maxErrorRate, maxP99Ms, maxPsi, minRequests, minSliceRequests, alpha, psiBins } =
    resolved;
  require('maxErrorRate', isNumber(maxErrorRate) &&
    maxErrorRate >= 0 &&
    maxErrorRate < 1, 'must lie in [0, 1)');
  require('maxP99Ms', isNumber(maxP99Ms) && maxP99Ms > 0, 'must be a number > 0');
  require('maxPsi', isNumber(maxPsi) && maxPsi > 0, 'must be a number > 0');
  require('minRequests', Number.isInteger(minRequests) &&
    minRequests >= 1, 'must be an integer >= 1');
  require('minSliceRequests', Number.isInteger(minSliceRequests) &&
    minSliceRequests >= 1, 'must be an integer >= 1');
  require('alpha', isNumber(alpha) && alpha > 0 && alpha < 1, 'must lie in (0, 1)');
  require('psiBins', Number.isInteger(psiBins) &&
    psiBins >= 2 &&
    psiBins <= maxPsiBins, `must be an integer in [2, ${maxPsiBins}]`);
  return problems.length === 0 ? { ok: true, thresholds: resolved } : { ok: false, problems };
}
