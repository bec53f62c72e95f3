// The counts of one sign of a HistogramSketch, by bucket index: a dense window of counts for
// the indexes a stream actually hits, and a Map for the few that fall outside it. Adding a
// value is then an array increment, not a Map lookup and store (the worker sketches every
// feature of every request marked for drift: issue 15's overhead budget).
//
//   index:   offset          offset + counts.length - 1
//              │                   │
//   counts:  [ c0 | c1 | ... | cn ]      outside the window: overflow Map (index → count)
//
// The window starts small around the first index and grows (doubling, re-centred) to take
// a new index, as long as it stays within maxDenseBuckets; an index it cannot take goes to
// the Map. Memory is therefore bounded by the window's cap plus one Map entry per bucket
// outside it, like the Map-only store it replaces, and the counts are the same either way.

/** The widest window, in buckets: about 9 decades of magnitude at 1 % relative accuracy. */
const maxDenseBuckets = 1024;
const initialDenseBuckets = 64;

export class BucketCounts {
  #counts: Float64Array | null = null;
  /** Bucket index of counts[0]. */
  #offset = 0;
  readonly #overflow = new Map<number, number>();

  /** Adds `weight` (> 0) to bucket `index` (an integer). */
  add(index: number, weight: number): void {
    const counts = this.#counts;
    if (counts !== null) {
      const at = index - this.#offset;
      if (at >= 0 && at < counts.length) {
        counts[at] = counts[at]! + weight;
        return;
      }
    }
    const widened = this.#widen(index);
    if (widened !== null) {
      const at = index - this.#offset;
      widened[at] = widened[at]! + weight;
      return;
    }
    this.#overflow.set(index, (this.#overflow.get(index) ?? 0) + weight);
  }

  /** Adds every bucket of `other`. */
  addAll(other: BucketCounts): void {
    for (const [index, count] of other.entries()) this.add(index, count);
  }

  /** [index, count] of the non-empty buckets, ascending by index. */
  entries(): [number, number][] {
    const out: [number, number][] = [];
    const counts = this.#counts;
    if (counts !== null) {
      for (let at = 0; at < counts.length; at++) {
        const count = counts[at]!;
        if (count !== 0) out.push([this.#offset + at, count]);
      }
    }
    if (this.#overflow.size === 0) return out;
    for (const entry of this.#overflow) out.push(entry);
    return out.sort((a, b) => a[0] - b[0]);
  }

  /**
   * Makes the window take `index` if it can within maxDenseBuckets (a first window, or a
   * wider one with the old counts copied over) and returns it; null: the index stays outside.
   */
  #widen(index: number): Float64Array | null {
    const counts = this.#counts;
    if (counts === null) {
      this.#offset = index - initialDenseBuckets / 2;
      return (this.#counts = new Float64Array(initialDenseBuckets));
    }
    const low = Math.min(index, this.#offset);
    const high = Math.max(index, this.#offset + counts.length - 1);
    const span = high - low + 1;
    if (span > maxDenseBuckets) return null;
    const size = Math.min(maxDenseBuckets, Math.max(2 * counts.length, span));
    // Room on the side it grew towards, the old window kept inside.
    const offset = index < this.#offset ? high - size + 1 : low;
    const wider = new Float64Array(size);
    wider.set(counts, this.#offset - offset);
    this.#counts = wider;
    this.#offset = offset;
    return wider;
  }
}
