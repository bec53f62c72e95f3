// Sticky buckets: a caller key hashed to one of 10 000 buckets, the same on every gateway,
// platform and restart, so a user keeps its variant for a whole experiment.
//
//   seed   = murmur3_32(utf8(endpoint) 0x00 utf8(salt), seed 0)     once per split
//   bucket = murmur3_32(utf8(key), seed) mod 10 000                  per request
//
// MurmurHash3 x86_32 because it is well distributed on short, similar keys (user-1, user-2…
// land far apart: its finaliser avalanches every input bit), needs only 32-bit integer
// arithmetic (Math.imul, no BigInt), and is the same function other languages ship (Python's
// `mmh3.hash(key, seed, signed=False)`), so an analysis job can recompute assignments.
// Measured against sha256 and a 64-bit FNV-1a in bench/traffic-split.ts. The endpoint and
// salt go into the seed rather than into every hash: a request hashes its key's bytes only.
// The 32-bit value mod 10 000 favours no bucket by more than 1 in ~429 000. Not for secrets.

/** Buckets per split: weights in whole percent are 100 buckets each. */
export const BUCKETS = 10_000;

const C1 = 0xcc9e2d51;
const C2 = 0x1b873593;

/** The seed of a split: the endpoint and the experiment/policy salt, 0x00 between. */
export function stickySeed(endpoint: string, salt: string): number {
  return murmur3(`${endpoint}\u0000${salt}`, 0);
}

/** The bucket of `key` under `seed`, in [0, BUCKETS). */
export function stickyBucket(key: string, seed: number): number {
  return murmur3(key, seed) % BUCKETS;
}

/** MurmurHash3 x86_32 of the UTF-8 bytes of `text` (lone surrogates as U+FFFD, as TextEncoder). */
export function murmur3(text: string, seed: number): number {
  const length = text.length;
  let h = seed | 0;
  let i = 0;
  // ASCII fast path: four characters are one little-endian block.
  const blocksEnd = length & ~3;
  for (; i < blocksEnd; i += 4) {
    const c0 = text.charCodeAt(i);
    const c1 = text.charCodeAt(i + 1);
    const c2 = text.charCodeAt(i + 2);
    const c3 = text.charCodeAt(i + 3);
    if ((c0 | c1 | c2 | c3) >= 0x80) return murmur3Bytes(encodeUtf8(text), seed);
    h = mixBlock(h, c0 | (c1 << 8) | (c2 << 16) | (c3 << 24));
  }
  let k = 0;
  for (let shift = 0; i < length; i++, shift += 8) {
    const c = text.charCodeAt(i);
    if (c >= 0x80) return murmur3Bytes(encodeUtf8(text), seed);
    k |= c << shift;
  }
  return finish(h, k, length);
}

function murmur3Bytes(bytes: Uint8Array, seed: number): number {
  const length = bytes.length;
  let h = seed | 0;
  let i = 0;
  const blocksEnd = length & ~3;
  for (; i < blocksEnd; i += 4) {
    h = mixBlock(
      h,
      (bytes[i] ?? 0) |
        ((bytes[i + 1] ?? 0) << 8) |
        ((bytes[i + 2] ?? 0) << 16) |
        ((bytes[i + 3] ?? 0) << 24),
    );
  }
  let k = 0;
  for (let shift = 0; i < length; i++, shift += 8) k |= (bytes[i] ?? 0) << shift;
  return finish(h, k, length);
}

function mixBlock(h: number, block: number): number {
  let k = Math.imul(block, C1);
  k = (k << 15) | (k >>> 17);
  k = Math.imul(k, C2);
  let x = h ^ k;
  x = (x << 13) | (x >>> 19);
  return (Math.imul(x, 5) + 0xe6546b64) | 0;
}

/** The tail block (0–3 bytes in `tail`, 0 when none), the length, the avalanche. */
function finish(h: number, tail: number, byteLength: number): number {
  let k = Math.imul(tail, C1);
  k = (k << 15) | (k >>> 17);
  let x = h ^ Math.imul(k, C2);
  x ^= byteLength;
  x ^= x >>> 16;
  x = Math.imul(x, 0x85ebca6b);
  x ^= x >>> 13;
  x = Math.imul(x, 0xc2b2ae35);
  x ^= x >>> 16;
  return x >>> 0;
}

const encoder = new TextEncoder();
function encodeUtf8(text: string): Uint8Array {
  return encoder.encode(text);
}
