// A small seeded random source (xoshiro128**, seeded through splitmix32): the same seed gives
// the same sequence on every machine, for reproducible sampling (a request's `seed`) and for
// property tests. Not for anything secret.

export interface Random {
  /** Uniform in [0, 1), 32 bits of randomness. */
  next(): number;
  /** Uniform integer in [0, n). */
  int(n: number): number;
}

function splitmix32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x9e3779b9) >>> 0;
    let z = state;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return (z ^ (z >>> 16)) >>> 0;
  };
}

/** A generator for `seed` (any finite number; its integer part mod 2^32 is used). */
export function createRandom(seed: number): Random {
  const init = splitmix32(Math.trunc(seed) >>> 0);
  let a = init();
  let b = init();
  let c = init();
  let d = init();
  const next32 = (): number => {
    const result = Math.imul(rotl(Math.imul(b, 5) >>> 0, 7), 9) >>> 0;
    const t = (b << 9) >>> 0;
    c ^= a;
    d ^= b;
    b ^= c;
    a ^= d;
    c ^= t;
    d = rotl(d, 11);
    return result;
  };
  return {
    next: () => next32() / 4294967296,
    int: (n: number) => Math.floor((next32() / 4294967296) * n),
  };
}

function rotl(x: number, k: number): number {
  return ((x << k) | (x >>> (32 - k))) >>> 0;
}
