// The report of an A/B experiment (issue 13, `kiln experiments report`): per variant, the
// traffic it served (requests, errors, latency from the gateways' observations since the
// experiment started) and, per caller-reported outcome metric, each variant against the
// control (the first variant):
//
//   rate metric (values 0/1)   two-proportion z-test: difference of rates, Wald interval,
//                              two-sided p-value (two-proportion-test.ts)
//   mean metric                Welch's t-test: difference of means, t interval with the
//                              Welch-Satterthwaite df, two-sided p-value (welch-test.ts)
//   effect size                the difference (and lift) in the metric's unit, and
//                              standardized: Cohen's h (rates) or d (means)
//   sample size                per group, to detect the observed difference (or the
//                              caller's minimum detectable effect) at `power`, level `alpha`
//                              (required-sample-size.ts), and how many are still missing
//
// A comparison the data cannot give yet (a group with fewer than two outcomes, no variation,
// no observed difference) carries the statistics' own message instead of numbers: the report
// never shows a NaN. Pure: no clock, no I/O; the same inputs give the same report.

import type { VersionObservations } from '../../traffic/canary-analysis.ts';
import { requiredSampleSizeForMeans } from '../../traffic/required-sample-size.ts';
import { requiredSampleSizeForProportions } from '../../traffic/required-sample-size.ts';
import type { RequiredSampleSize } from '../../traffic/required-sample-size.ts';
import { RunningMoments } from '../../traffic/running-moments.ts';
import type { StatisticResult } from '../../traffic/statistic-result.ts';
import { twoProportionTest } from '../../traffic/two-proportion-test.ts';
import { groupSummaryOf, welchTest } from '../../traffic/welch-test.ts';
import type {
  ExperimentRecord,
  OutcomeAggregate,
  OutcomeKind,
} from '../../store/traffic-records.ts';
import { versionKey } from '../../store/traffic-records.ts';

export interface ReportOptions {
  /** Two-sided significance level of the tests and the sample size; the intervals are 1 - alpha. */
  readonly alpha: number;
  /** Power the sample size is planned for. */
  readonly power: number;
  /**
   * Minimum detectable effect per metric, in the metric's own unit (a rate's absolute
   * difference: 0.02 = two points; a mean's difference); absent: the observed difference.
   */
  readonly mde: Readonly<Record<string, number>>;
  /** An MDE for every metric not named in `mde`. */
  readonly defaultMde: number | null;
}

export const defaultReportOptions: ReportOptions = {
  alpha: 0.05,
  power: 0.8,
  mde: {},
  defaultMde: null,
};

export interface ExperimentReport {
  readonly experiment: ExperimentRecord;
  /** `model:version` of the control (the first variant). */
  readonly control: string;
  readonly alpha: number;
  readonly power: number;
  readonly confidence: number;
  readonly variants: readonly VariantTraffic[];
  readonly metrics: readonly MetricReport[];
}

export interface VariantTraffic {
  readonly variant: string;
  /** The configured share, whole percent. */
  readonly weight: number;
  readonly requests: number;
  /** Observed share of the experiment's requests, in [0, 1]; null with no requests at all. */
  readonly share: number | null;
  readonly errors: number;
  /** errors / requests; null with no requests. */
  readonly errorRate: number | null;
  /** Milliseconds, from the gateways' sketches (1 % relative accuracy); null with no requests. */
  readonly latencyMs: { readonly p50: number | null; readonly p99: number | null } | null;
}

export interface MetricReport {
  readonly metric: string;
  readonly kind: OutcomeKind;
  readonly variants: readonly MetricSummary[];
  /** Every variant but the control, against the control. */
  readonly comparisons: readonly Comparison[];
}

export interface MetricSummary {
  readonly variant: string;
  /** Outcomes reported for the variant. */
  readonly count: number;
  /** The rate (rate metric) or mean; null with no outcomes. */
  readonly mean: number | null;
  /** Sample standard deviation; null below two outcomes. */
  readonly sd: number | null;
}

export type Comparison = ComparisonResult | ComparisonProblem;

export interface ComparisonResult {
  readonly ok: true;
  readonly variant: string;
  readonly control: string;
  readonly test: 'two-proportion-z' | 'welch-t';
  readonly controlValue: number;
  readonly variantValue: number;
  /** variantValue - controlValue: the effect size, in the metric's unit. */
  readonly effect: number;
  /** effect / controlValue; null when the control's value is 0. */
  readonly relativeLift: number | null;
  /**
   * The effect without its unit (Cohen 1988): rates h = 2 asin sqrt(p_v) - 2 asin sqrt(p_c),
   * means d = effect / sqrt((s_c² + s_v²) / 2). Around 0.2 small, 0.5 medium, 0.8 large.
   */
  readonly standardizedEffect: number;
  /** The effect's 1 - alpha confidence interval. */
  readonly interval: readonly [low: number, high: number];
  /** z (rates) or t (means). */
  readonly statistic: number;
  /** Welch-Satterthwaite degrees of freedom; null for the z-test. */
  readonly degreesOfFreedom: number | null;
  readonly pValue: number;
  /** pValue < alpha. */
  readonly significant: boolean;
  readonly sampleSize: SampleSizeReport;
}

export interface ComparisonProblem {
  readonly ok: false;
  readonly variant: string;
  readonly control: string;
  /** Why there is no test yet, e.g. `control has no observations`. */
  readonly problem: string;
}

export type SampleSizeReport =
  | {
      readonly ok: true;
      /** The effect planned for, and where it came from. */
      readonly effect: number;
      readonly basis: 'observed' | 'mde';
      readonly perGroup: number;
      /** perGroup minus the smaller group's count, never below 0. */
      readonly remainingPerGroup: number;
    }
  | { readonly ok: false; readonly effect: number; readonly problem: string };

export interface ReportInput {
  readonly experiment: ExperimentRecord;
  /** The gateways' observations since the experiment started, by `model:version`. */
  readonly observations: ReadonlyMap<string, VersionObservations>;
  readonly outcomes: readonly OutcomeAggregate[];
  readonly options: ReportOptions;
}

export function buildExperimentReport(input: ReportInput): ExperimentReport {
  const { experiment, options } = input;
  const variants = experiment.variants.map((v) => versionKey(v));
  const control = variants[0] ?? '';
  return {
    experiment,
    control,
    alpha: options.alpha,
    power: options.power,
    confidence: 1 - options.alpha,
    variants: variantTraffic(experiment, input.observations),
    metrics: metricReports(variants, input.outcomes, options),
  };
}

function variantTraffic(
  experiment: ExperimentRecord,
  observations: ReadonlyMap<string, VersionObservations>,
): VariantTraffic[] {
  const windows = experiment.variants.map((v) => observations.get(versionKey(v))?.overall);
  const total = windows.reduce((sum, w) => sum + (w?.requests ?? 0), 0);
  return experiment.variants.map((v, i) => {
    const window = windows[i];
    const requests = window?.requests ?? 0;
    const errors = window?.errors ?? 0;
    return {
      variant: versionKey(v),
      weight: v.weight,
      requests,
      share: total === 0 ? null : requests / total,
      errors,
      errorRate: requests === 0 ? null : errors / requests,
      latencyMs:
        window === undefined || window.latencyMs.count === 0
          ? null
          : { p50: window.latencyMs.quantile(0.5), p99: window.latencyMs.quantile(0.99) },
    };
  });
}

function metricReports(
  variants: readonly string[],
  outcomes: readonly OutcomeAggregate[],
  options: ReportOptions,
): MetricReport[] {
  const byMetric = new Map<string, { kind: OutcomeKind; moments: Map<string, RunningMoments> }>();
  for (const outcome of outcomes) {
    let entry = byMetric.get(outcome.metric);
    if (entry === undefined) {
      entry = { kind: outcome.kind, moments: new Map() };
      byMetric.set(outcome.metric, entry);
    }
    const restored = RunningMoments.fromSnapshot(outcome.moments);
    // The store wrote these snapshots itself; one that does not read back counts as empty
    // rather than failing the whole report.
    if (restored.ok) entry.moments.set(outcome.variant, restored.moments);
  }
  const metrics = [...byMetric.keys()].sort();
  return metrics.map((metric) => {
    const { kind, moments } = byMetric.get(metric) as {
      kind: OutcomeKind;
      moments: Map<string, RunningMoments>;
    };
    const of = (variant: string): RunningMoments => moments.get(variant) ?? new RunningMoments();
    const [control, ...others] = variants;
    const controlMoments = of(control ?? '');
    const mde = Object.hasOwn(options.mde, metric) ? options.mde[metric] : options.defaultMde;
    return {
      metric,
      kind,
      variants: variants.map((variant) => summaryOf(variant, of(variant))),
      comparisons: others.map((variant) =>
        compare(kind, control ?? '', controlMoments, variant, of(variant), mde ?? null, options),
      ),
    };
  });
}

function summaryOf(variant: string, moments: RunningMoments): MetricSummary {
  const variance = moments.variance;
  return {
    variant,
    count: moments.count,
    mean: moments.mean,
    sd: variance === null ? null : Math.sqrt(variance),
  };
}

function compare(
  kind: OutcomeKind,
  control: string,
  controlMoments: RunningMoments,
  variant: string,
  variantMoments: RunningMoments,
  mde: number | null,
  options: ReportOptions,
): Comparison {
  const confidence = 1 - options.alpha;
  const collectedPerGroup = Math.min(controlMoments.count, variantMoments.count);
  const plan = { alpha: options.alpha, power: options.power, collectedPerGroup };
  const problem = (message: string): ComparisonProblem => ({
    ok: false,
    variant,
    control,
    problem: message,
  });
  if (kind === 'rate') {
    // A rate metric's values are 0 or 1, so mean × count is the number of 1s (rounded off
    // the float noise of the running mean).
    const group = (m: RunningMoments) => ({
      successes: Math.round((m.mean ?? 0) * m.count),
      trials: m.count,
    });
    const test = twoProportionTest(group(controlMoments), group(variantMoments), confidence);
    if (!test.ok) return problem(test.message);
    const effect = mde ?? test.difference;
    const sampleSize = sampleSizeReport(
      effect,
      mde === null ? 'observed' : 'mde',
      requiredSampleSizeForProportions(test.controlRate, test.controlRate + effect, plan),
    );
    return {
      ok: true,
      variant,
      control,
      test: 'two-proportion-z',
      controlValue: test.controlRate,
      variantValue: test.treatmentRate,
      effect: test.difference,
      relativeLift: test.relativeLift,
      standardizedEffect:
        2 * Math.asin(Math.sqrt(test.treatmentRate)) - 2 * Math.asin(Math.sqrt(test.controlRate)),
      interval: test.interval,
      statistic: test.z,
      degreesOfFreedom: null,
      pValue: test.pValue,
      significant: test.pValue < options.alpha,
      sampleSize,
    };
  }
  const controlSummary = groupSummaryOf(controlMoments);
  const variantSummary = groupSummaryOf(variantMoments);
  const test = welchTest(controlSummary, variantSummary, confidence);
  if (!test.ok) return problem(test.message);
  const effect = mde ?? test.difference;
  const sampleSize = sampleSizeReport(
    effect,
    mde === null ? 'observed' : 'mde',
    requiredSampleSizeForMeans(
      Math.sqrt(controlSummary.variance),
      Math.sqrt(variantSummary.variance),
      effect,
      plan,
    ),
  );
  return {
    ok: true,
    variant,
    control,
    test: 'welch-t',
    controlValue: test.controlMean,
    variantValue: test.treatmentMean,
    effect: test.difference,
    relativeLift: test.relativeLift,
    // welchTest refused both variances 0, so the pooled deviation is > 0.
    standardizedEffect:
      test.difference / Math.sqrt((controlSummary.variance + variantSummary.variance) / 2),
    interval: test.interval,
    statistic: test.t,
    degreesOfFreedom: test.degreesOfFreedom,
    pValue: test.pValue,
    significant: test.pValue < options.alpha,
    sampleSize,
  };
}

function sampleSizeReport(
  effect: number,
  basis: 'observed' | 'mde',
  result: StatisticResult<RequiredSampleSize>,
): SampleSizeReport {
  if (!result.ok) return { ok: false, effect, problem: result.message };
  return {
    ok: true,
    effect,
    basis,
    perGroup: result.perGroup,
    remainingPerGroup: result.remainingPerGroup,
  };
}
