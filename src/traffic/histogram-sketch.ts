// A mergeable histogram of model outputs (scores, regression values) that gateways keep per
// version and slice and the control plane merges, for quantiles and PSI without keeping every
// value. The bucketing is DDSketch's (Masson, Rim & Lee, VLDB 2019): with
// gamma = (1 + a) / (1 - a), a positive value x falls in bucket i = ceil(log_gamma x) and is
// represented by 2 gamma^i / (gamma + 1), which is within relative error a of every value
// in the bucket; negative values mirror this, and |x| below `zeroThreshold` counts as zero.
//
// Because the bucket of a value depends only on the value and a, two sketches with the same
// accuracy merge exactly by adding counts (merge of parts == sketch of the whole, bit for bit).
//
//   value axis:  ... neg[i=3] neg[i=2] | zero | pos[i=-1] pos[i=0] pos[i=1] ...
//                 (-gamma^3,-gamma^2]      |x|<z  (gamma^-2,gamma^-1]  (gamma^0,gamma^1]

import { BucketCounts } from './bucket-counts.ts';
import { binIndex } from './quantile-bin-edges.ts';
import { invalidInput, type StatisticResult } from './statistic-result.ts';

export interface HistogramSketchSnapshot {
  readonly relativeAccuracy: number;
  readonly zeroCount: number;
  /** [bucket index, count], ascending by index. */
  readonly positive: readonly (readonly [number, number])[];
  readonly negative: readonly (readonly [number, number])[];
}

const zeroThreshold = 1e-12;

export class HistogramSketch {
  readonly relativeAccuracy: number;
  readonly #logGamma: number;
  readonly #gamma: number;
  readonly #positive = new BucketCounts();
  readonly #negative = new BucketCounts();
  #zeroCount = 0;
  #count = 0;

  /** `relativeAccuracy` in (0, 1): 0.01 keeps quantiles within 1% of a true value. */
  constructor(relativeAccuracy = 0.01) {
    if (!(relativeAccuracy > 0 && relativeAccuracy < 1)) {
      throw new RangeError(`relativeAccuracy ${relativeAccuracy} must lie in (0, 1)`);
    }
    this.relativeAccuracy = relativeAccuracy;
    this.#gamma = (1 + relativeAccuracy) / (1 - relativeAccuracy);
    this.#logGamma = Math.log(this.#gamma);
  }

  static fromSnapshot(
    snapshot: HistogramSketchSnapshot,
  ): StatisticResult<{ sketch: HistogramSketch }> {
    const accuracy = snapshot.relativeAccuracy;
    if (!(accuracy > 0 && accuracy < 1)) {
      return invalidInput('invalid-parameter', `relativeAccuracy ${accuracy} must lie in (0, 1)`);
    }
    const sketch = new HistogramSketch(accuracy);
    const isCount = (n: number): boolean => Number.isInteger(n) && n >= 0;
    if (!isCount(snapshot.zeroCount)) {
      return invalidInput('count-out-of-range', 'zeroCount must be an integer >= 0');
    }
    sketch.#zeroCount = snapshot.zeroCount;
    sketch.#count = snapshot.zeroCount;
    for (const [entries, target] of [
      [snapshot.positive, sketch.#positive],
      [snapshot.negative, sketch.#negative],
    ] as const) {
      for (const [index, count] of entries) {
        if (!Number.isInteger(index) || !isCount(count)) {
          return invalidInput('count-out-of-range', `bucket [${index}, ${count}] is not valid`);
        }
        if (count > 0) target.add(index, count);
        sketch.#count += count;
      }
    }
    return { ok: true, sketch };
  }

  get count(): number {
    return this.#count;
  }

  /** Adds `value` (weight times); a non-finite value is refused (false) and not counted. */
  add(value: number, weight = 1): boolean {
    if (!Number.isFinite(value) || !(Number.isInteger(weight) && weight > 0)) return false;
    this.#count += weight;
    const magnitude = Math.abs(value);
    if (magnitude < zeroThreshold) {
      this.#zeroCount += weight;
      return true;
    }
    const index = Math.ceil(Math.log(magnitude) / this.#logGamma);
    const buckets = value > 0 ? this.#positive : this.#negative;
    buckets.add(index, weight);
    return true;
  }

  /** Adds another sketch's counts; sketches of different accuracy do not line up. */
  merge(other: HistogramSketch): StatisticResult<object> {
    if (other.relativeAccuracy !== this.relativeAccuracy) {
      return invalidInput(
        'bins-mismatch',
        `relative accuracy ${other.relativeAccuracy} differs from ${this.relativeAccuracy}`,
      );
    }
    this.#positive.addAll(other.#positive);
    this.#negative.addAll(other.#negative);
    this.#zeroCount += other.#zeroCount;
    this.#count += other.#count;
    return { ok: true };
  }

  /** The q-quantile (0 <= q <= 1) within the relative accuracy; null when empty. */
  quantile(q: number): number | null {
    if (!(q >= 0 && q <= 1)) throw new RangeError(`quantile: q = ${q} is outside [0, 1]`);
    if (this.#count === 0) return null;
    const rank = q * (this.#count - 1);
    let seen = 0;
    for (const [value, count] of this.#ascending()) {
      seen += count;
      if (seen > rank) return value;
    }
    return null; // not reached: the counts add up to #count
  }

  /** Counts per bin of `edges` (see quantileBinEdges), each bucket placed by its representative. */
  countsInBins(edges: readonly number[]): number[] {
    const counts = new Array<number>(edges.length + 1).fill(0);
    for (const [value, count] of this.#ascending()) {
      const bin = binIndex(edges, value);
      counts[bin] = (counts[bin] ?? 0) + count;
    }
    return counts;
  }

  snapshot(): HistogramSketchSnapshot {
    return {
      relativeAccuracy: this.relativeAccuracy,
      zeroCount: this.#zeroCount,
      positive: this.#positive.entries(),
      negative: this.#negative.entries(),
    };
  }

  /** [representative value, count] in ascending order of value. */
  *#ascending(): Generator<[number, number]> {
    const represent = (index: number): number =>
      (2 * Math.pow(this.#gamma, index)) / (this.#gamma + 1);
    const negative = this.#negative.entries();
    for (let k = negative.length - 1; k >= 0; k--) {
      const [index, count] = negative[k]!;
      yield [-represent(index), count];
    }
    if (this.#zeroCount > 0) yield [0, this.#zeroCount];
    for (const [index, count] of this.#positive.entries()) yield [represent(index), count];
  }
}
