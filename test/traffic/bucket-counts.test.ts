// BucketCounts (the store behind HistogramSketch): whatever order indexes arrive in — growing
// the dense window downwards or upwards, or falling outside its cap into the overflow Map —
// the counts are those of a plain Map, listed in ascending order of index (seeded data).

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { createRandom } from '../../src/core/random.ts';
import { BucketCounts } from '../../src/traffic/bucket-counts.ts';

function reference(adds: readonly (readonly [number, number])[]): [number, number][] {
  const counts = new Map<number, number>();
  for (const [index, weight] of adds) counts.set(index, (counts.get(index) ?? 0) + weight);
  return [...counts].sort((a, b) => a[0] - b[0]);
}

function stored(adds: readonly (readonly [number, number])[]): [number, number][] {
  const buckets = new BucketCounts();
  for (const [index, weight] of adds) buckets.add(index, weight);
  return buckets.entries();
}

test('indexes that widen the window both ways count as a Map counts them', () => {
  // From 0, down past the first window, up past it, then back in the middle.
  const adds: [number, number][] = [
    [0, 1],
    [-40, 2],
    [-200, 1],
    [35, 3],
    [500, 1],
    [0, 4],
    [-200, 2],
  ];
  assert.deepEqual(stored(adds), reference(adds));
});

test('indexes beyond the dense cap go to the overflow and still list in order', () => {
  // 1024 buckets at most in the window: ±5000 cannot share it with 0.
  const adds: [number, number][] = [
    [0, 1],
    [5000, 2],
    [-5000, 1],
    [1, 1],
    [5000, 1],
    [-1, 7],
  ];
  assert.deepEqual(stored(adds), reference(adds));
});

test('random walks of indexes, near and far, count as a Map counts them', () => {
  const random = createRandom(15);
  for (let round = 0; round < 50; round++) {
    const adds: [number, number][] = [];
    let index = random.int(4000) - 2000;
    for (let i = 0; i < 2000; i++) {
      // Mostly small steps (a stream's values), now and then a far jump (an outlier).
      index += random.next() < 0.02 ? random.int(6000) - 3000 : random.int(21) - 10;
      adds.push([index, 1 + random.int(3)]);
    }
    assert.deepEqual(stored(adds), reference(adds), `round ${round}`);
  }
});

test('addAll adds every bucket of another store', () => {
  const a: [number, number][] = [
    [3, 1],
    [-700, 2],
    [4000, 1],
  ];
  const b: [number, number][] = [
    [3, 2],
    [4000, 5],
    [9, 1],
  ];
  const into = new BucketCounts();
  for (const [index, weight] of a) into.add(index, weight);
  const other = new BucketCounts();
  for (const [index, weight] of b) other.add(index, weight);
  into.addAll(other);
  assert.deepEqual(into.entries(), reference([...a, ...b]));
});
