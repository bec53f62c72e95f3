// The pool worker's LRU within a memory budget (model-cache.ts): exact evictions for
// given sequences, models in use never chosen, and the budget invariant under random use.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ModelCache } from '../../../src/worker/pool/model-cache.ts';
import { createRandom } from '../../../src/core/random.ts';

test('the least recently used goes first, a use moves a model to the back', () => {
  const cache = new ModelCache<string>(300);
  cache.add('a', 'A', 100, 1);
  cache.add('b', 'B', 100, 2);
  cache.add('c', 'C', 100, 3);
  cache.use('a', 4); // order now b, c, a
  const evicted = cache.evictFor(100);
  assert.deepEqual(
    evicted.map((e) => e.key),
    ['b'],
  );
  cache.add('d', 'D', 100, 5);
  assert.deepEqual(
    cache.list().map((e) => e.key),
    ['d', 'a', 'c'],
  );
  assert.equal(cache.residentBytes, 300);
  assert.equal(cache.use('a', 6)?.lastUsedMs, 6);
});

test('a model in use is never evicted; the newest is kept even alone over the budget', () => {
  const cache = new ModelCache<null>(250);
  cache.add('a', null, 100, 1).users = 1;
  cache.add('b', null, 100, 2);
  cache.add('big', null, 400, 3);
  assert.deepEqual(
    cache.evictFor(0, 'big').map((e) => e.key),
    ['b'],
  );
  assert.deepEqual(
    cache.list().map((e) => e.key),
    ['big', 'a'],
  );
  cache.peek('a')!.users = 0;
  assert.deepEqual(
    cache.evictFor(0, 'big').map((e) => e.key),
    ['a'],
  );
  assert.equal(cache.residentBytes, 400);
  assert.deepEqual(cache.evictFor(0, 'big'), []);
});

test('under random loads and uses the held bytes stay within the budget', () => {
  const random = createRandom(14);
  const budget = 1000;
  const cache = new ModelCache<null>(budget);
  let loads = 0;
  let evictions = 0;
  for (let step = 0; step < 5000; step++) {
    const key = `m${random.int(40)}`;
    if (cache.use(key, step) !== undefined) continue;
    const bytes = 50 + random.int(150);
    evictions += cache.evictFor(bytes).length;
    cache.add(key, null, bytes, step);
    evictions += cache.evictFor(0, key).length;
    loads += 1;
    assert.ok(cache.residentBytes <= budget, `step ${step}: ${cache.residentBytes}`);
    const sum = cache.list().reduce((n, e) => n + e.bytes, 0);
    assert.equal(sum, cache.residentBytes);
  }
  assert.equal(loads - evictions, cache.size);
});
