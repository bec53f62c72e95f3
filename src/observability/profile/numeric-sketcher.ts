// Streams numbers into a NumericSketch (data-profile.ts): moments, a DDSketch histogram and a
// missing count. Allocation per value: none beyond the histogram's bucket map entry the first
// time a bucket is hit, so a worker can run one per feature on its hot path.

import { HistogramSketch } from '../../traffic/histogram-sketch.ts';
import { RunningMoments } from '../../traffic/running-moments.ts';
import { defaultRelativeAccuracy, type NumericSketch } from './data-profile.ts';

export class NumericSketcher {
  readonly #moments = new RunningMoments();
  readonly #histogram: HistogramSketch;
  #missing = 0;

  constructor(relativeAccuracy = defaultRelativeAccuracy) {
    this.#histogram = new HistogramSketch(relativeAccuracy);
  }

  /** Counts a value; null, undefined, NaN and infinities count as missing. */
  add(value: number | null | undefined): void {
    if (typeof value !== 'number' || !Number.isFinite(value)) {
      this.#missing += 1;
      return;
    }
    this.#moments.add(value);
    this.#histogram.add(value);
  }

  addMissing(count = 1): void {
    this.#missing += count;
  }

  /** Values seen, present or missing. */
  get total(): number {
    return this.#moments.count + this.#missing;
  }

  snapshot(): NumericSketch {
    return {
      kind: 'numeric',
      missing: this.#missing,
      moments: this.#moments.snapshot(),
      histogram: this.#histogram.snapshot(),
    };
  }
}
