// The derived concurrency bound (pure): what one replica holds, summed over the ready ones.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  derivedMaxConcurrency,
  replicaBound,
  unbatchedReplicaBound,
} from '../../src/gateway/admission-bound.ts';

test('a batching replica holds its queue; an unbatched one the fixed figure', () => {
  assert.equal(replicaBound({ maxQueue: 256 }), 256);
  assert.equal(replicaBound({ maxQueue: 1 }), 1);
  assert.equal(replicaBound(null), unbatchedReplicaBound);
  assert.equal(unbatchedReplicaBound, 64);
});

test('the bound sums the ready replicas; with none, one replica is counted', () => {
  assert.equal(derivedMaxConcurrency([256, 256, 256], 256), 768);
  assert.equal(derivedMaxConcurrency([64], 64), 64);
  assert.equal(derivedMaxConcurrency([], 256), 256);
  assert.equal(derivedMaxConcurrency([], 0), 1); // never 0: a bound of 0 would refuse all
});
