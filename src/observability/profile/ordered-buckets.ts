// The buckets of a histogram snapshot (HistogramSketchSnapshot) in ascending order of value,
// with each bucket's representative value — what PSI and KS walk, straight from the JSON form
// (no HistogramSketch rebuilt, no Map: a drift pass compares thousands of sketch pairs).
//
//   value order:  negative buckets by descending index | zero | positive by ascending index
//
// The representative is HistogramSketch's, 2 gamma^i / (gamma + 1) (mirrored for negatives),
// computed by the same expression so bins placed here match the sketch's own quantiles.

import type { HistogramSketchSnapshot } from '../../traffic/histogram-sketch.ts';

export interface OrderedBuckets {
  /** -1, 0 or 1 per bucket. */
  readonly signs: Int8Array;
  readonly indexes: Float64Array;
  readonly counts: Float64Array;
  /** Representative value per bucket, ascending. */
  readonly values: Float64Array;
  readonly total: number;
}

export function orderedBuckets(snapshot: HistogramSketchSnapshot): OrderedBuckets {
  const negative = isSorted(snapshot.negative)
    ? snapshot.negative
    : [...snapshot.negative].sort((a, b) => a[0] - b[0]);
  const positive = isSorted(snapshot.positive)
    ? snapshot.positive
    : [...snapshot.positive].sort((a, b) => a[0] - b[0]);
  const size = negative.length + positive.length + (snapshot.zeroCount > 0 ? 1 : 0);
  const signs = new Int8Array(size);
  const indexes = new Float64Array(size);
  const counts = new Float64Array(size);
  const values = new Float64Array(size);
  const gamma = (1 + snapshot.relativeAccuracy) / (1 - snapshot.relativeAccuracy);
  const represent = (index: number): number => (2 * Math.pow(gamma, index)) / (gamma + 1);
  let at = 0;
  let total = 0;
  for (let k = negative.length - 1; k >= 0; k--) {
    const [index, count] = negative[k] ?? [0, 0];
    signs[at] = -1;
    indexes[at] = index;
    counts[at] = count;
    values[at] = -represent(index);
    total += count;
    at++;
  }
  if (snapshot.zeroCount > 0) {
    counts[at] = snapshot.zeroCount;
    total += snapshot.zeroCount;
    at++;
  }
  for (const [index, count] of positive) {
    signs[at] = 1;
    indexes[at] = index;
    counts[at] = count;
    values[at] = represent(index);
    total += count;
    at++;
  }
  return { signs, indexes, counts, values, total };
}

function isSorted(buckets: readonly (readonly [number, number])[]): boolean {
  for (let k = 1; k < buckets.length; k++) {
    if ((buckets[k]?.[0] ?? 0) <= (buckets[k - 1]?.[0] ?? 0)) return false;
  }
  return true;
}

/** Order of bucket a of `x` against bucket b of `y`: < 0 when a holds smaller values. */
export function compareBuckets(x: OrderedBuckets, a: number, y: OrderedBuckets, b: number): number {
  const signA = x.signs[a] ?? 0;
  const signB = y.signs[b] ?? 0;
  if (signA !== signB) return signA - signB;
  const indexA = x.indexes[a] ?? 0;
  const indexB = y.indexes[b] ?? 0;
  return signA < 0 ? indexB - indexA : indexA - indexB;
}
