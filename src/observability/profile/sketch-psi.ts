// PSI of a current sketch (a serving window) against a reference sketch (the training profile,
// or the previous window), over bins fixed by the reference:
//
//   numeric      bins cut at the reference histogram's deciles (the DDSketch buckets are
//                placed whole by their representative value, as in sketch-stability-index.ts),
//                plus a `missing` bin, so a jump in the missing rate moves PSI too.
//   categorical  one bin per reference category, `other` (a current category the reference
//                does not name, and both sides' `other`), and `missing`.
//
// Then populationStabilityIndex (empty bins at epsilon). With n values per side and k bins a
// fresh resample of the same population gives PSI ~ (k - 1)(1/n_ref + 1/n_cur) (chi-square
// approximation), e.g. ~0.02 for 10 bins and 1000 values each; 0.1 and 0.25 are the usual
// "moderate" and "major" shift lines.

import { binIndex } from '../../traffic/quantile-bin-edges.ts';
import { orderedBuckets, type OrderedBuckets } from './ordered-buckets.ts';
import {
  defaultPsiEpsilon,
  populationStabilityIndex,
  type StabilityIndex,
} from '../../traffic/population-stability-index.ts';
import { invalidInput, type StatisticResult } from '../../traffic/statistic-result.ts';
import type { CategoricalSketch, FeatureSketch, NumericSketch } from './data-profile.ts';

export interface SketchPsiOptions {
  /** Numeric bins cut at the reference's quantiles (deciles: 10); ties may give fewer. */
  readonly numBins?: number;
  readonly epsilon?: number;
}

export type SketchPsi = StabilityIndex & {
  /** One label per bin, in the order of contributions: `<= 1.5`, `(1.5, 2.7]`, `a`, `other`. */
  readonly bins: readonly string[];
};

export const defaultPsiBins = 10;

export function sketchPsi(
  reference: FeatureSketch,
  current: FeatureSketch,
  options: SketchPsiOptions = {},
): StatisticResult<SketchPsi> {
  const numBins = options.numBins ?? defaultPsiBins;
  const epsilon = options.epsilon ?? defaultPsiEpsilon;
  if (!(Number.isInteger(numBins) && numBins >= 2)) {
    return invalidInput('invalid-parameter', `numBins ${numBins} must be an integer >= 2`);
  }
  let binned: StatisticResult<Binned>;
  if (reference.kind === 'numeric' && current.kind === 'numeric') {
    binned = numericBins(reference, current, numBins);
  } else if (reference.kind === 'categorical' && current.kind === 'categorical') {
    binned = { ok: true, ...categoricalBins(reference, current) };
  } else {
    return invalidInput(
      'bins-mismatch',
      `reference is ${reference.kind} but current is ${current.kind}`,
    );
  }
  if (!binned.ok) return binned;
  const result = populationStabilityIndex(binned.referenceCounts, binned.currentCounts, epsilon);
  return result.ok ? { ...result, bins: binned.labels } : result;
}

interface Binned {
  readonly referenceCounts: number[];
  readonly currentCounts: number[];
  readonly labels: string[];
}

function numericBins(
  reference: NumericSketch,
  current: NumericSketch,
  numBins: number,
): StatisticResult<Binned> {
  if (reference.histogram.relativeAccuracy !== current.histogram.relativeAccuracy) {
    return invalidInput(
      'bins-mismatch',
      `relative accuracy ${current.histogram.relativeAccuracy} differs from the reference's ` +
        `${reference.histogram.relativeAccuracy}`,
    );
  }
  const referenceBuckets = orderedBuckets(reference.histogram);
  const currentBuckets = orderedBuckets(current.histogram);
  // Cuts at the reference's k/numBins quantiles, as HistogramSketch.quantile finds them (the
  // representative of the bucket holding rank q (n - 1)), in one walk.
  const edges: number[] = [];
  if (referenceBuckets.total > 0) {
    let bucket = 0;
    let seen = referenceBuckets.counts[0] ?? 0;
    for (let k = 1; k < numBins; k++) {
      const rank = (k / numBins) * (referenceBuckets.total - 1);
      while (seen <= rank && bucket < referenceBuckets.counts.length - 1) {
        bucket++;
        seen += referenceBuckets.counts[bucket] ?? 0;
      }
      const edge = referenceBuckets.values[bucket] ?? 0;
      if (edges.length === 0 || edge > (edges[edges.length - 1] ?? -Infinity)) edges.push(edge);
    }
  }
  const labels = edgeLabels(edges);
  labels.push('missing');
  return {
    ok: true,
    referenceCounts: [...countsInBins(referenceBuckets, edges), reference.missing],
    currentCounts: [...countsInBins(currentBuckets, edges), current.missing],
    labels,
  };
}

/** Counts per bin of `edges`, each bucket placed whole by its representative value. */
function countsInBins(buckets: OrderedBuckets, edges: readonly number[]): number[] {
  const counts = new Array<number>(edges.length + 1).fill(0);
  for (let k = 0; k < buckets.counts.length; k++) {
    const bin = binIndex(edges, buckets.values[k] ?? 0);
    counts[bin] = (counts[bin] ?? 0) + (buckets.counts[k] ?? 0);
  }
  return counts;
}

function edgeLabels(edges: readonly number[]): string[] {
  if (edges.length === 0) return ['present'];
  const text = (value: number): string => String(Number(value.toPrecision(6)));
  const labels = [`<= ${text(edges[0] ?? 0)}`];
  for (let i = 1; i < edges.length; i++) {
    labels.push(`(${text(edges[i - 1] ?? 0)}, ${text(edges[i] ?? 0)}]`);
  }
  labels.push(`> ${text(edges[edges.length - 1] ?? 0)}`);
  return labels;
}

function categoricalBins(reference: CategoricalSketch, current: CategoricalSketch): Binned {
  const names = Object.keys(reference.categories).sort();
  const index = new Map(names.map((name, i) => [name, i]));
  const otherBin = names.length;
  const referenceCounts = [...names.map((name) => reference.categories[name] ?? 0), 0, 0];
  const currentCounts = new Array<number>(names.length + 2).fill(0);
  referenceCounts[otherBin] = reference.other;
  referenceCounts[otherBin + 1] = reference.missing;
  for (const [name, count] of Object.entries(current.categories)) {
    const bin = index.get(name) ?? otherBin;
    currentCounts[bin] = (currentCounts[bin] ?? 0) + count;
  }
  currentCounts[otherBin] = (currentCounts[otherBin] ?? 0) + current.other;
  currentCounts[otherBin + 1] = current.missing;
  return { referenceCounts, currentCounts, labels: [...names, 'other', 'missing'] };
}
