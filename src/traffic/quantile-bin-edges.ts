// The fixed bins PSI compares over, cut at the baseline's quantiles so each bin holds about
// the same share of the baseline (deciles by default). Quantiles interpolate linearly between
// order statistics (Hyndman & Fan 1996, type 7: R's and numpy's default). Tied values can
// make two cuts equal; the duplicates are dropped, so there may be fewer bins than asked.
//
// Bins are (-inf, e_0], (e_0, e_1], ..., (e_{k-1}, +inf): k interior edges give k + 1 bins.

import { invalidInput, type StatisticResult } from './statistic-result.ts';

export interface BinEdges {
  /** Interior edges, strictly increasing. */
  readonly edges: readonly number[];
}

export function quantileBinEdges(
  baseline: readonly number[],
  numBins = 10,
): StatisticResult<BinEdges> {
  if (!(Number.isInteger(numBins) && numBins >= 2)) {
    return invalidInput('invalid-parameter', `numBins ${numBins} must be an integer >= 2`);
  }
  if (baseline.length === 0) return invalidInput('empty-group', 'baseline has no values');
  if (!baseline.every(Number.isFinite)) {
    return invalidInput('not-finite', 'baseline values must be finite');
  }
  const sorted = Float64Array.from(baseline).sort();
  const edges: number[] = [];
  for (let k = 1; k < numBins; k++) {
    const position = ((sorted.length - 1) * k) / numBins;
    const below = Math.floor(position);
    const low = sorted[below] ?? 0;
    const high = sorted[Math.min(below + 1, sorted.length - 1)] ?? low;
    const edge = low + (position - below) * (high - low);
    if (edges.length === 0 || edge > (edges[edges.length - 1] ?? -Infinity)) edges.push(edge);
  }
  return { ok: true, edges };
}

/** The bin of `value`: the first i with value <= edges[i], or edges.length (binary search). */
export function binIndex(edges: readonly number[], value: number): number {
  let low = 0;
  let high = edges.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (value <= (edges[middle] ?? Infinity)) high = middle;
    else low = middle + 1;
  }
  return low;
}

/** Counts of `values` in the edges.length + 1 bins. */
export function countIntoBins(edges: readonly number[], values: Iterable<number>): number[] {
  const counts = new Array<number>(edges.length + 1).fill(0);
  for (const value of values) {
    const bin = binIndex(edges, value);
    counts[bin] = (counts[bin] ?? 0) + 1;
  }
  return counts;
}
