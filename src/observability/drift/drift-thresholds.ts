// When a feature (or output) counts as drifted, for reports, the gauges and SLO alerts:
//
//   PSI >= 0.25                          drift    (the usual "major shift" line)
//   KS p-value < 0.01 and D >= 0.1       drift    (a significant and material CDF gap)
//   PSI >= 0.1                           warn     ("moderate shift": shown, not flagged)
//   fewer than minCount values a side    insufficient (statistics shown, never flagged)
//
// KS alone flags nothing small: with thousands of rows a window differs "significantly" from
// its reference by a hair, so D must also reach 0.1. A fresh resample of n values per side
// over 10 bins has PSI ~ 9 (2 / n) (0.036 at n = 500): far under 0.1.

export interface DriftThresholds {
  readonly psiWarn: number;
  readonly psiAlert: number;
  readonly ksPValue: number;
  readonly ksMinStatistic: number;
  readonly minCount: number;
}

export const defaultDriftThresholds: DriftThresholds = {
  psiWarn: 0.1,
  psiAlert: 0.25,
  ksPValue: 0.01,
  ksMinStatistic: 0.1,
  minCount: 50,
};
