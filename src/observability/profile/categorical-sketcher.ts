// Streams category values into a CategoricalSketch (data-profile.ts). Memory is bounded by
// maxCategories: once that many names are held, a new name is counted in `other` (first come,
// first kept: a stream cannot know which names will turn out frequent; the reference profile,
// computed over a whole sample, keeps the most frequent ones — see mergeFeatureSketches).

import { defaultMaxCategories, type CategoricalSketch } from './data-profile.ts';

export class CategoricalSketcher {
  readonly maxCategories: number;
  readonly #counts = new Map<string, number>();
  #other = 0;
  #missing = 0;
  #count = 0;

  constructor(maxCategories = defaultMaxCategories) {
    if (!(Number.isInteger(maxCategories) && maxCategories >= 1)) {
      throw new RangeError(`maxCategories ${maxCategories} must be an integer >= 1`);
    }
    this.maxCategories = maxCategories;
  }

  /** Counts a value (numbers and booleans by their text); null, undefined and '' are missing. */
  add(value: string | number | boolean | null | undefined): void {
    if (value === null || value === undefined || value === '') {
      this.#missing += 1;
      return;
    }
    if (typeof value === 'number' && !Number.isFinite(value)) {
      this.#missing += 1;
      return;
    }
    const name = String(value);
    this.#count += 1;
    const seen = this.#counts.get(name);
    if (seen !== undefined) this.#counts.set(name, seen + 1);
    else if (this.#counts.size < this.maxCategories) this.#counts.set(name, 1);
    else this.#other += 1;
  }

  addMissing(count = 1): void {
    this.#missing += count;
  }

  get total(): number {
    return this.#count + this.#missing;
  }

  snapshot(): CategoricalSketch {
    // fromEntries defines own properties, so a category named __proto__ stays a category.
    const categories = Object.fromEntries(
      [...this.#counts.entries()].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)),
    );
    return {
      kind: 'categorical',
      missing: this.#missing,
      count: this.#count,
      maxCategories: this.maxCategories,
      categories,
      other: this.#other,
    };
  }
}
