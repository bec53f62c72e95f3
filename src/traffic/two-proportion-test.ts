// The two-proportion z-test for conversion or error rates (treatment vs control):
//
//   p_c = x_c / n_c,  p_t = x_t / n_t,  difference = p_t - p_c,  lift = difference / p_c
//   test:  pooled p = (x_c + x_t) / (n_c + n_t),  SE_0 = sqrt(p (1 - p) (1/n_c + 1/n_t)),
//          z = difference / SE_0,  two-sided p-value = 2 P(Z > |z|)
//   CI:    difference +- z_{1-alpha/2} * sqrt(p_c (1 - p_c)/n_c + p_t (1 - p_t)/n_t)  (Wald)
//
// The test pools because under the null hypothesis both groups share one rate; the interval
// does not, because it describes the difference whatever it is (Agresti, Categorical Data
// Analysis, 3rd ed., 2.2.3; Fleiss, Levin & Paik, Statistical Methods for Rates and
// Proportions, 3rd ed., ch. 4).

import { normalQuantile } from './normal-quantile.ts';
import { normalSurvival } from './normal-cdf.ts';
import {
  checkConfidence,
  invalidInput,
  type InvalidInput,
  type StatisticResult,
} from './statistic-result.ts';

export interface ProportionGroup {
  /** Observations with the outcome (conversions, errors). */
  readonly successes: number;
  /** All observations in the group. */
  readonly trials: number;
}

export interface TwoProportionTest {
  readonly controlRate: number;
  readonly treatmentRate: number;
  /** treatmentRate - controlRate. */
  readonly difference: number;
  /** difference / controlRate; null when the control rate is 0. */
  readonly relativeLift: number | null;
  readonly z: number;
  readonly pValue: number;
  readonly confidence: number;
  /** The Wald interval of the difference at `confidence`. */
  readonly interval: readonly [low: number, high: number];
}

export function checkProportionGroup(name: string, group: ProportionGroup): InvalidInput | null {
  const { successes, trials } = group;
  if (!Number.isFinite(successes) || !Number.isFinite(trials)) {
    return invalidInput('not-finite', `${name}: successes and trials must be finite numbers`);
  }
  if (trials === 0) return invalidInput('empty-group', `${name} has no trials`);
  if (!Number.isInteger(successes) || !Number.isInteger(trials) || trials < 0) {
    return invalidInput(
      'count-out-of-range',
      `${name}: successes and trials must be integers >= 0`,
    );
  }
  if (successes < 0 || successes > trials) {
    return invalidInput(
      'count-out-of-range',
      `${name}: successes ${successes} is outside [0, trials = ${trials}]`,
    );
  }
  return null;
}

export function twoProportionTest(
  control: ProportionGroup,
  treatment: ProportionGroup,
  confidence = 0.95,
): StatisticResult<TwoProportionTest> {
  const bad =
    checkProportionGroup('control', control) ??
    checkProportionGroup('treatment', treatment) ??
    checkConfidence(confidence);
  if (bad) return bad;
  const controlRate = control.successes / control.trials;
  const treatmentRate = treatment.successes / treatment.trials;
  const pooled = (control.successes + treatment.successes) / (control.trials + treatment.trials);
  const pooledSe = Math.sqrt(pooled * (1 - pooled) * (1 / control.trials + 1 / treatment.trials));
  if (pooledSe === 0) {
    return invalidInput(
      'zero-variance',
      `both groups have rate ${pooled}: with no variation the z statistic is undefined`,
    );
  }
  const difference = treatmentRate - controlRate;
  const z = difference / pooledSe;
  const unpooledSe = Math.sqrt(
    (controlRate * (1 - controlRate)) / control.trials +
      (treatmentRate * (1 - treatmentRate)) / treatment.trials,
  );
  const margin = normalQuantile(1 - (1 - confidence) / 2) * unpooledSe;
  return {
    ok: true,
    controlRate,
    treatmentRate,
    difference,
    relativeLift: controlRate === 0 ? null : difference / controlRate,
    z,
    pValue: 2 * normalSurvival(Math.abs(z)),
    confidence,
    interval: [difference - margin, difference + margin],
  };
}
