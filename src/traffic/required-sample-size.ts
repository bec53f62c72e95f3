// How many observations per group a two-sided test at level alpha needs to detect a given
// minimum effect with the given power, and how many are still missing.
//
// Two proportions (rates p1 = control, p2 = p1 + effect), the normal-approximation formula that
// matches the pooled z-test (Fleiss, Levin & Paik, Statistical Methods for Rates and
// Proportions, 3rd ed., eq. 4.14, without continuity correction):
//
//   n = ( z_{1-alpha/2} sqrt(2 pbar (1 - pbar)) + z_{1-beta} sqrt(p1 (1-p1) + p2 (1-p2)) )^2 / (p2 - p1)^2
//   pbar = (p1 + p2) / 2
//
// Two means with standard deviations s1, s2 and minimum difference delta (normal approximation
// to Welch's test; Chow, Shao & Wang, Sample Size Calculations in Clinical Research, 3.2):
//
//   n = (z_{1-alpha/2} + z_{1-beta})^2 (s1^2 + s2^2) / delta^2
//
// Both round up to whole observations.

import { normalQuantile } from './normal-quantile.ts';
import { invalidInput, type InvalidInput, type StatisticResult } from './statistic-result.ts';

export interface SampleSizePlan {
  /** Two-sided significance level, e.g. 0.05. */
  readonly alpha: number;
  /** Probability of detecting the effect when it is real, e.g. 0.8. */
  readonly power: number;
  /** Observations per group already collected (the smaller group's count); default 0. */
  readonly collectedPerGroup?: number;
}

export interface RequiredSampleSize {
  /** Observations needed in each group in total. */
  readonly perGroup: number;
  /** perGroup minus what is already collected, never below 0. */
  readonly remainingPerGroup: number;
}

function checkPlan(plan: SampleSizePlan): InvalidInput | null {
  if (!(plan.alpha > 0 && plan.alpha < 1)) {
    return invalidInput('invalid-parameter', `alpha ${plan.alpha} must lie in (0, 1)`);
  }
  if (!(plan.power > 0 && plan.power < 1)) {
    return invalidInput('invalid-parameter', `power ${plan.power} must lie in (0, 1)`);
  }
  const collected = plan.collectedPerGroup ?? 0;
  if (!(Number.isInteger(collected) && collected >= 0)) {
    return invalidInput(
      'count-out-of-range',
      `collectedPerGroup ${collected} must be an integer >= 0`,
    );
  }
  return null;
}

function result(exact: number, plan: SampleSizePlan): StatisticResult<RequiredSampleSize> {
  // A hair of tolerance so that an exact integer does not round up through float noise.
  const perGroup = Math.ceil(exact - 1e-9);
  return {
    ok: true,
    perGroup,
    remainingPerGroup: Math.max(0, perGroup - (plan.collectedPerGroup ?? 0)),
  };
}

/** Per-group size to tell `controlRate` from `treatmentRate` (the minimum detectable effect). */
export function requiredSampleSizeForProportions(
  controlRate: number,
  treatmentRate: number,
  plan: SampleSizePlan,
): StatisticResult<RequiredSampleSize> {
  for (const [name, rate] of [
    ['controlRate', controlRate],
    ['treatmentRate', treatmentRate],
  ] as const) {
    if (!(rate > 0 && rate < 1)) {
      return invalidInput('probability-out-of-range', `${name} ${rate} must lie in (0, 1)`);
    }
  }
  if (controlRate === treatmentRate) {
    return invalidInput('invalid-parameter', 'the minimum detectable effect must not be 0');
  }
  const bad = checkPlan(plan);
  if (bad) return bad;
  const zAlpha = normalQuantile(1 - plan.alpha / 2);
  const zBeta = normalQuantile(plan.power);
  const mean = (controlRate + treatmentRate) / 2;
  const effect = treatmentRate - controlRate;
  const root =
    zAlpha * Math.sqrt(2 * mean * (1 - mean)) +
    zBeta * Math.sqrt(controlRate * (1 - controlRate) + treatmentRate * (1 - treatmentRate));
  return result((root * root) / (effect * effect), plan);
}

/** Per-group size to detect a difference of `minimumDifference` between two means. */
export function requiredSampleSizeForMeans(
  controlSd: number,
  treatmentSd: number,
  minimumDifference: number,
  plan: SampleSizePlan,
): StatisticResult<RequiredSampleSize> {
  if (![controlSd, treatmentSd, minimumDifference].every(Number.isFinite)) {
    return invalidInput('not-finite', 'standard deviations and the difference must be finite');
  }
  if (controlSd < 0 || treatmentSd < 0 || controlSd + treatmentSd === 0) {
    return invalidInput('invalid-parameter', 'standard deviations must be >= 0 and not both 0');
  }
  if (minimumDifference === 0) {
    return invalidInput('invalid-parameter', 'the minimum detectable difference must not be 0');
  }
  const bad = checkPlan(plan);
  if (bad) return bad;
  const z = normalQuantile(1 - plan.alpha / 2) + normalQuantile(plan.power);
  const variance = controlSd * controlSd + treatmentSd * treatmentSd;
  return result((z * z * variance) / (minimumDifference * minimumDifference), plan);
}
