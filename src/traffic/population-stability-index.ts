// The population stability index of a current distribution against a baseline over the same
// fixed bins (Siddiqi, Credit Risk Scorecards, 2006; Yurdakul, "Statistical properties of the
// population stability index", 2018):
//
//   PSI = sum_i (c_i - b_i) ln(c_i / b_i),   b_i, c_i the shares of each bin (counts / total)
//
// An empty bin's share is replaced by `epsilon` (1e-4 by default) so the logarithm stays
// finite; shares are not renormalised afterwards, as in the usual definition. Rules of thumb:
// < 0.1 no significant shift, 0.1-0.25 moderate, > 0.25 major. The per-bin terms are returned
// too, so a report can say where the mass moved.

import { invalidInput, type StatisticResult } from './statistic-result.ts';

export interface StabilityIndex {
  readonly psi: number;
  /** (c_i - b_i) ln(c_i / b_i) for each bin; each term is >= 0. */
  readonly contributions: readonly number[];
  readonly baselineShares: readonly number[];
  readonly currentShares: readonly number[];
}

export const defaultPsiEpsilon = 1e-4;

export function populationStabilityIndex(
  baselineCounts: readonly number[],
  currentCounts: readonly number[],
  epsilon = defaultPsiEpsilon,
): StatisticResult<StabilityIndex> {
  if (baselineCounts.length !== currentCounts.length) {
    return invalidInput(
      'bins-mismatch',
      `baseline has ${baselineCounts.length} bins, current has ${currentCounts.length}`,
    );
  }
  if (baselineCounts.length < 2) {
    return invalidInput('invalid-parameter', 'PSI needs at least 2 bins');
  }
  if (!(epsilon > 0 && epsilon < 1)) {
    return invalidInput('invalid-parameter', `epsilon ${epsilon} must lie in (0, 1)`);
  }
  for (const [name, counts] of [
    ['baseline', baselineCounts],
    ['current', currentCounts],
  ] as const) {
    if (!counts.every(Number.isFinite)) {
      return invalidInput('not-finite', `${name} counts must be finite`);
    }
    if (counts.some((count) => count < 0)) {
      return invalidInput('count-out-of-range', `${name} has a negative count`);
    }
  }
  const baselineTotal = baselineCounts.reduce((sum, count) => sum + count, 0);
  const currentTotal = currentCounts.reduce((sum, count) => sum + count, 0);
  if (baselineTotal === 0) return invalidInput('empty-group', 'baseline has no observations');
  if (currentTotal === 0) return invalidInput('empty-group', 'current has no observations');
  const share = (count: number, total: number): number => (count === 0 ? epsilon : count / total);
  const baselineShares = baselineCounts.map((count) => share(count, baselineTotal));
  const currentShares = currentCounts.map((count) => share(count, currentTotal));
  const contributions = baselineShares.map((b, i) => {
    const c = currentShares[i] ?? epsilon;
    return (c - b) * Math.log(c / b);
  });
  return {
    ok: true,
    psi: contributions.reduce((sum, term) => sum + term, 0),
    contributions,
    baselineShares,
    currentShares,
  };
}
