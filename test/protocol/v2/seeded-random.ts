// The project's seeded PRNG (src/core/random.ts, mulberry32) with the helpers the
// property-style codec tests use: the same seed, the same cases.

import { createRandom } from '../../../src/core/random.ts';

export interface SeededRandom {
  /** Uniform in [0, 1). */
  next(): number;
  /** Integer in [min, max]. */
  int(min: number, max: number): number;
  pick<T>(items: readonly T[]): T;
  /** 32 random bits as an unsigned integer. */
  bits32(): number;
}

export function seededRandom(seed: number): SeededRandom {
  const random = createRandom(seed);
  return {
    next: random.next,
    bits32: random.bits32,
    int: (min, max) => min + random.int(max - min + 1),
    pick: <T>(items: readonly T[]): T => {
      const item = items[random.int(items.length)];
      if (item === undefined) throw new Error('pick from an empty list');
      return item;
    },
  };
}
