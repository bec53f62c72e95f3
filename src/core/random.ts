// The project's seeded random source (mulberry32): the same seed gives the same sequence on
// every machine, for reproducible sampling (a request's `seed`) and for property tests. Not
// for anything secret.

export interface Random {
  /** Uniform in [0, 1), 32 bits of randomness. */
  readonly next: () => number;
  /** Uniform integer in [0, n). */
  readonly int: (n: number) => number;
  /** 32 random bits as an unsigned integer. */
  readonly bits32: () => number;
}

/** A generator for `seed` (its integer part mod 2^32 is used). */
export function createRandom(seed: number): Random {
  let state = Math.trunc(seed) >>> 0;
  const bits32 = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  };
  const next = (): number => bits32() / 4294967296;
  return { next, bits32, int: (n: number) => Math.floor(next() * n) };
}
