// Two-sample Kolmogorov–Smirnov test between two numeric sketches (reference vs serving window):
//
//   D = max_x |F_ref(x) - F_cur(x)|   over the present values (missing ones are PSI's business)
//
// Both sketches bucket on the same DDSketch grid (same relative accuracy), so both empirical
// CDFs are evaluated at the upper end of every bucket either side holds: that is D of the
// bucketed data exactly, and within one bucket (relative accuracy a) of D of the raw values.
//
// p-value: the asymptotic Kolmogorov distribution with the effective sample size
// n_e = n_ref n_cur / (n_ref + n_cur) and Stephens' (1970) small-sample correction
// (as in Numerical Recipes' kstwo / probks):
//
//   lambda = (sqrt(n_e) + 0.12 + 0.11 / sqrt(n_e)) D
//   Q(lambda) = 2 sum_{j>=1} (-1)^(j-1) exp(-2 j^2 lambda^2)                    lambda >= 1.18
//             = 1 - sqrt(2 pi)/lambda sum_{j>=1} exp(-(2j-1)^2 pi^2 / (8 lambda^2))  otherwise
//
// (the second form is the same function by Jacobi's theta identity; it converges where the
// first does not). Ties from bucketing make the test conservative (p a little too large).

import { invalidInput, type StatisticResult } from '../../traffic/statistic-result.ts';
import type { FeatureSketch } from './data-profile.ts';
import { compareBuckets, orderedBuckets } from './ordered-buckets.ts';

export interface KolmogorovSmirnov {
  /** D, in [0, 1]. */
  readonly statistic: number;
  /** P(D >= observed) under "same distribution". */
  readonly pValue: number;
  readonly referenceCount: number;
  readonly currentCount: number;
  readonly effectiveCount: number;
}

export function sketchKolmogorovSmirnov(
  reference: FeatureSketch,
  current: FeatureSketch,
): StatisticResult<KolmogorovSmirnov> {
  if (reference.kind !== 'numeric' || current.kind !== 'numeric') {
    return invalidInput('invalid-parameter', 'Kolmogorov-Smirnov compares numeric sketches only');
  }
  const a = reference.histogram;
  const b = current.histogram;
  if (a.relativeAccuracy !== b.relativeAccuracy) {
    return invalidInput('bins-mismatch', 'the two sketches have different relative accuracy');
  }
  const x = orderedBuckets(a);
  const y = orderedBuckets(b);
  const referenceCount = x.total;
  const currentCount = y.total;
  if (referenceCount === 0) return invalidInput('empty-group', 'reference has no values');
  if (currentCount === 0) return invalidInput('empty-group', 'current has no values');
  // Walk both bucket lists in value order (a merge); after each distinct bucket both CDFs are
  // known exactly.
  let i = 0;
  let j = 0;
  let cumulativeA = 0;
  let cumulativeB = 0;
  let statistic = 0;
  while (i < x.counts.length || j < y.counts.length) {
    const order = i >= x.counts.length ? 1 : j >= y.counts.length ? -1 : compareBuckets(x, i, y, j);
    if (order <= 0) cumulativeA += x.counts[i++] ?? 0;
    if (order >= 0) cumulativeB += y.counts[j++] ?? 0;
    const gap = Math.abs(cumulativeA / referenceCount - cumulativeB / currentCount);
    if (gap > statistic) statistic = gap;
  }
  const effectiveCount = (referenceCount * currentCount) / (referenceCount + currentCount);
  const root = Math.sqrt(effectiveCount);
  const pValue = kolmogorovSurvival((root + 0.12 + 0.11 / root) * statistic);
  return { ok: true, statistic, pValue, referenceCount, currentCount, effectiveCount };
}

/** Q_KS(lambda) = P(K > lambda) for the Kolmogorov distribution K; 1 at lambda <= 0. */
export function kolmogorovSurvival(lambda: number): number {
  if (Number.isNaN(lambda)) throw new RangeError('kolmogorovSurvival: lambda is NaN');
  if (lambda <= 0) return 1;
  if (lambda < 1.18) {
    const factor = (Math.PI * Math.PI) / (8 * lambda * lambda);
    let sum = 0;
    for (let j = 1; j <= 100; j++) {
      const term = Math.exp(-(2 * j - 1) * (2 * j - 1) * factor);
      sum += term;
      if (term < 1e-17 * sum) break;
    }
    return Math.min(1, Math.max(0, 1 - (Math.sqrt(2 * Math.PI) / lambda) * sum));
  }
  let sum = 0;
  for (let j = 1; j <= 100; j++) {
    const term = Math.exp(-2 * j * j * lambda * lambda);
    sum += j % 2 === 1 ? term : -term;
    if (term < 1e-17 * Math.abs(sum)) break;
  }
  return Math.min(1, Math.max(0, 2 * sum));
}
