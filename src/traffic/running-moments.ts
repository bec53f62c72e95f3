// Streaming count, mean and variance of a metric (latency, a numeric output) that gateways keep
// per version and slice and report as partial summaries the control plane merges.
//
//   add (Welford 1962):  n += 1; delta = x - mean; mean += delta / n; m2 += delta (x - mean)
//   merge (Chan, Golub & LeVeque 1979):  delta = mean_b - mean_a, n = n_a + n_b,
//          mean = mean_a + delta n_b / n,  m2 = m2_a + m2_b + delta^2 n_a n_b / n
//
// m2 is the sum of squared deviations from the mean; both updates avoid the catastrophic
// cancellation of sum(x^2) - n mean^2. The snapshot is plain JSON so it can cross the wire.

/** A summary as it travels between gateway and control plane. */
export interface MomentsSnapshot {
  readonly count: number;
  readonly mean: number;
  /** Sum of squared deviations from the mean. */
  readonly m2: number;
  readonly min: number;
  readonly max: number;
}

export class RunningMoments {
  #count = 0;
  #mean = 0;
  #m2 = 0;
  #min = Infinity;
  #max = -Infinity;

  static fromSnapshot(snapshot: MomentsSnapshot): RunningMoments {
    const moments = new RunningMoments();
    moments.#count = snapshot.count;
    moments.#mean = snapshot.mean;
    moments.#m2 = snapshot.m2;
    moments.#min = snapshot.min;
    moments.#max = snapshot.max;
    return moments;
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
  merge(other: RunningMoments | MomentsSnapshot): this {
    const b = other instanceof RunningMoments ? other.snapshot() : other;
    if (b.count === 0) return this;
    if (this.#count === 0) {
      this.#count = b.count;
      this.#mean = b.mean;
      this.#m2 = b.m2;
      this.#min = b.min;
      this.#max = b.max;
      return this;
    }
    const count = this.#count + b.count;
    const delta = b.mean - this.#mean;
    this.#mean += (delta * b.count) / count;
    this.#m2 += b.m2 + (delta * delta * this.#count * b.count) / count;
    this.#count = count;
    this.#min = Math.min(this.#min, b.min);
    this.#max = Math.max(this.#max, b.max);
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
    return { count: this.#count, mean: this.#mean, m2: this.#m2, min: this.#min, max: this.#max };
  }
}
