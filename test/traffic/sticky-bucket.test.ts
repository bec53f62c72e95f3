// The sticky hash is a contract: assignments must survive gateway restarts, other replicas
// and future releases. The values below are pinned on purpose — a change of hash, seed
// derivation or byte encoding fails here and would reassign every user of every experiment.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BUCKETS, murmur3, stickyBucket, stickySeed } from '../../src/traffic/sticky-bucket.ts';

test('murmur3 matches the published MurmurHash3 x86_32 vectors (ASCII and UTF-8)', () => {
  const vectors: [string, number, number][] = [
    ['', 0, 0],
    ['', 1, 0x514e28b7],
    ['test', 0, 0xba6bd213],
    ['a', 0x9747b28c, 0x7fa09ea6],
    ['ab', 0x9747b28c, 0x74875592],
    ['abc', 0x9747b28c, 0xc84a62dd],
    ['abcd', 0x9747b28c, 0xf0478627],
    ['Hello, world!', 1234, 0xfaf6cdb3],
    ['The quick brown fox jumps over the lazy dog', 0x9747b28c, 0x2fa826cd],
    ['ππππππππ', 0x9747b28c, 0xd58063c1],
  ];
  for (const [text, seed, expected] of vectors) {
    assert.equal(murmur3(text, seed), expected, `murmur3(${JSON.stringify(text)}, ${seed})`);
  }
});

test('golden buckets: pinned values for a few keys (a hash change must break this test)', () => {
  const seed = stickySeed('fraud', 'exp-1');
  assert.equal(seed, 2528592490);
  const golden: [string, number][] = [
    ['alice', 2587],
    ['bob', 739],
    ['user-1', 1837],
    ['user-2', 1127],
    ['42', 4613],
    ['Zoë', 833],
    ['😀-user', 8110],
  ];
  for (const [key, bucket] of golden) assert.equal(stickyBucket(key, seed), bucket, key);
  // The endpoint and the salt both enter the seed.
  assert.equal(stickySeed('fraud', ''), 2646806934);
  assert.equal(stickySeed('other', 'exp-1'), 3980562231);
});

test('non-ASCII keys hash their UTF-8 bytes, lone surrogates as U+FFFD (as TextEncoder)', () => {
  assert.equal(murmur3('\ud800x', 7), murmur3('\ufffdx', 7));
  assert.notEqual(murmur3('é', 7), murmur3('\u00e9\u0000', 7));
});

test('sequential keys spread evenly over 100 bucket bins (each within 4.5 σ)', () => {
  const seed = stickySeed('fraud', 'exp-1');
  const n = 100_000;
  const bins = new Array<number>(100).fill(0);
  for (let i = 0; i < n; i++) {
    const bucket = stickyBucket(`user-${i}`, seed);
    assert.ok(bucket >= 0 && bucket < BUCKETS && Number.isInteger(bucket));
    bins[Math.floor(bucket / 100)]! += 1;
  }
  const p = 0.01;
  const sigma = Math.sqrt(n * p * (1 - p));
  for (const [bin, count] of bins.entries()) {
    assert.ok(Math.abs(count - n * p) <= 4.5 * sigma, `bin ${bin}: ${count} of ${n}`);
  }
});
