// Streaming count, mean and variance of a metric (latency, a numeric output) that gateways keep
// per version and slice and report as partial summaries the control plane merges.
//
//   add (Welford 1962):  n += 1; delta = x - mean; mean += delta / n; m2 += delta (x - mean)
//   merge (Chan, Golub & LeVeque 1979):  delta = mean_b - mean_a, n = n_a + n_b,
//          mean = mean_a + delta n_b / n,  m2 = m2_a + m2_b + delta^2 n_a n_b / n
//
// m2 is the sum of squared deviations from the mean; both updates avoid the catastrophic
// cancellation of sum(x^2) - n mean^2. The snapshot is plain JSON so it can cross the wire.

import { invalidInput, type StatisticResult } from './statistic-result.ts';

/** A summary as it travels between gateway and control plane. */
export interface MomentsSnapshot {
  readonly count: number;
  readonly mean: number;
  /** Sum of squared deviations from the mean. */
  readonly m2: number;
  /** Extremes; null when count is 0 (JSON has no Infinity). */
  readonly min: number | null;
  readonly max: number | null;
}

export class RunningMoments {
  #count = 0;
  #mean = 0;
  #m2 = 0;
  #min = Infinity;
  #max = -Infinity;

  /** A summary from a report (a gateway's snapshot), checked: it comes over the wire. */
  static fromSnapshot(snapshot: MomentsSnapshot): StatisticResult<{ moments: RunningMoments }> {
    const { count, mean, m2, min, max } = snapshot;
    if (!(Number.isInteger(count) && count >= 0)) {
      return invalidInput('count-out-of-range', `count ${count} must be an integer >= 0`);
    }
    if (!Number.isFinite(mean) || !Number.isFinite(m2) || m2 < 0) {
      return invalidInput('not-finite', 'mean must be finite and m2 finite and >= 0');
    }
    const moments = new RunningMoments();
    if (count === 0) return { ok: true, moments };
    if (min === null || max === null || !Number.isFinite(min) || !Number.isFinite(max)) {
      return invalidInput('not-finite', 'a non-empty summary needs finite min and max');
    }
    moments.#count = count;
    moments.#mean = mean;
    moments.#m2 = m2;
    moments.#min = min;
    moments.#max = max;
    return { ok: true, moments };
  }

  static of(values: Iterable<number>): RunningMoments {
    const moments = new RunningMoments();
    for (const value of values) moments.add(value);
    return moments;
  }

  /** Adds one observation; a non-finite value is refused (false) and not counted. */
  add(value: number): boolean {
    if (!Number.isFinite(value)) return false;
    this.#count += 1;
    const delta = value - this.#mean;
    this.#mean += delta / this.#count;
    this.#m2 += delta * (value - this.#mean);
    if (value < this.#min) this.#min = value;
    if (value > this.#max) this.#max = value;
    return true;
  }

  /** Folds another summary (of disjoint observations) into this one. */
  merge(other: RunningMoments): this {
    if (other.#count === 0) return this;
    const count = this.#count + other.#count;
    const delta = other.#mean - this.#mean;
    this.#mean += (delta * other.#count) / count;
    this.#m2 += other.#m2 + (delta * delta * this.#count * other.#count) / count;
    this.#count = count;
    this.#min = Math.min(this.#min, other.#min);
    this.#max = Math.max(this.#max, other.#max);
    return this;
  }

  get count(): number {
    return this.#count;
  }

  /** The mean; null with no observations. */
  get mean(): number | null {
    return this.#count === 0 ? null : this.#mean;
  }

  /** The sample variance (divisor n - 1); null below two observations. */
  get variance(): number | null {
    return this.#count < 2 ? null : this.#m2 / (this.#count - 1);
  }

  snapshot(): MomentsSnapshot {
    const empty = this.#count === 0;
    return {
      count: this.#count,
      mean: this.#mean,
      m2: this.#m2,
      min: empty ? null : this.#min,
      max: empty ? null : this.#max,
    };
  }
}
