// Welch's unequal-variances t-test for a continuous outcome (treatment vs control):
//
//   difference = mean_t - mean_c,  SE^2 = s_c^2/n_c + s_t^2/n_t,  t = difference / SE
//   df (Welch-Satterthwaite) = SE^4 / ((s_c^2/n_c)^2/(n_c - 1) + (s_t^2/n_t)^2/(n_t - 1))
//   two-sided p-value = 2 P(T_df > |t|),  CI = difference +- t_{df, 1-alpha/2} * SE
//
// (Welch, Biometrika 34, 1947; Satterthwaite, Biometrics Bulletin 2, 1946.) Variances are
// sample variances (divisor n - 1), as RunningMoments reports them.

import { RunningMoments } from './running-moments.ts';
import { studentTQuantile } from './student-t-quantile.ts';
import { studentTSurvival } from './student-t-cdf.ts';
import {
  checkConfidence,
  invalidInput,
  type InvalidInput,
  type StatisticResult,
} from './statistic-result.ts';

export interface GroupSummary {
  readonly count: number;
  readonly mean: number;
  /** Sample variance (divisor count - 1). */
  readonly variance: number;
}

export interface WelchTest {
  readonly controlMean: number;
  readonly treatmentMean: number;
  /** treatmentMean - controlMean. */
  readonly difference: number;
  /** difference / controlMean; null when the control mean is 0. */
  readonly relativeLift: number | null;
  readonly standardError: number;
  readonly t: number;
  /** Welch-Satterthwaite degrees of freedom (not an integer in general). */
  readonly degreesOfFreedom: number;
  readonly pValue: number;
  readonly confidence: number;
  readonly interval: readonly [low: number, high: number];
}

function checkGroup(name: string, group: GroupSummary): InvalidInput | null {
  const { count, mean, variance } = group;
  if (!Number.isFinite(count) || !Number.isFinite(mean) || !Number.isFinite(variance)) {
    return invalidInput('not-finite', `${name}: count, mean and variance must be finite`);
  }
  if (count === 0) return invalidInput('empty-group', `${name} has no observations`);
  if (!Number.isInteger(count) || count < 0) {
    return invalidInput('count-out-of-range', `${name}: count ${count} must be an integer >= 0`);
  }
  if (count < 2) {
    return invalidInput('too-few-observations', `${name} needs at least 2 observations, has 1`);
  }
  if (variance < 0) {
    return invalidInput('invalid-parameter', `${name}: variance ${variance} is negative`);
  }
  return null;
}

export function welchTest(
  control: GroupSummary,
  treatment: GroupSummary,
  confidence = 0.95,
): StatisticResult<WelchTest> {
  const bad =
    checkGroup('control', control) ??
    checkGroup('treatment', treatment) ??
    checkConfidence(confidence);
  if (bad) return bad;
  const controlShare = control.variance / control.count; // s_c^2 / n_c
  const treatmentShare = treatment.variance / treatment.count;
  const se2 = controlShare + treatmentShare;
  if (se2 === 0) {
    return invalidInput(
      'zero-variance',
      'both groups have variance 0: the t statistic and its degrees of freedom are undefined',
    );
  }
  const standardError = Math.sqrt(se2);
  const difference = treatment.mean - control.mean;
  const t = difference / standardError;
  const degreesOfFreedom =
    (se2 * se2) /
    ((controlShare * controlShare) / (control.count - 1) +
      (treatmentShare * treatmentShare) / (treatment.count - 1));
  const margin = studentTQuantile(1 - (1 - confidence) / 2, degreesOfFreedom) * standardError;
  return {
    ok: true,
    controlMean: control.mean,
    treatmentMean: treatment.mean,
    difference,
    relativeLift: control.mean === 0 ? null : difference / control.mean,
    standardError,
    t,
    degreesOfFreedom,
    pValue: 2 * studentTSurvival(Math.abs(t), degreesOfFreedom),
    confidence,
    interval: [difference - margin, difference + margin],
  };
}

/** The summary welchTest needs, from a RunningMoments (or raw samples through RunningMoments.of). */
export function groupSummaryOf(moments: RunningMoments): GroupSummary {
  return { count: moments.count, mean: moments.mean ?? 0, variance: moments.variance ?? 0 };
}

/** Welch's test on raw samples; non-finite samples are refused, not skipped. */
export function welchTestOfSamples(
  control: readonly number[],
  treatment: readonly number[],
  confidence = 0.95,
): StatisticResult<WelchTest> {
  if (!control.every(Number.isFinite) || !treatment.every(Number.isFinite)) {
    return invalidInput('not-finite', 'samples must all be finite numbers');
  }
  const controlSummary = groupSummaryOf(RunningMoments.of(control));
  const treatmentSummary = groupSummaryOf(RunningMoments.of(treatment));
  return welchTest(controlSummary, treatmentSummary, confidence);
}
