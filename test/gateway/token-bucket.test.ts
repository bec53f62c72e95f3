// The token bucket and the admission state, driven by a fake clock (ms): exact token counts.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Admission } from '../../src/gateway/admission.ts';
import { TokenBucket } from '../../src/gateway/token-bucket.ts';
import { snapshot, endpointRoute } from './gateway-harness.ts';

test('a bucket starts full: burst requests pass at once, the next is refused', () => {
  const bucket = new TokenBucket(2, 3, 1_000);
  assert.equal(bucket.available(1_000), 3);
  for (let i = 0; i < 3; i++) assert.equal(bucket.tryTake(1_000), true);
  assert.equal(bucket.tryTake(1_000), false);
  assert.equal(bucket.available(1_000), 0);
});

test('tokens refill continuously at the rate and never beyond burst', () => {
  const bucket = new TokenBucket(4, 2, 0);
  assert.equal(bucket.tryTake(0), true);
  assert.equal(bucket.tryTake(0), true);
  assert.equal(bucket.available(125), 0.5); // 125 ms × 4/s
  assert.equal(bucket.tryTake(125), false);
  assert.equal(bucket.available(125), 0.5); // a refusal takes nothing
  assert.equal(bucket.tryTake(250), true); // one whole token at 250 ms
  assert.equal(bucket.available(250), 0);
  assert.equal(bucket.available(10_000), 2); // capped at burst after a quiet spell
  // A clock that steps back adds nothing.
  assert.equal(bucket.available(5_000), 2);
});

test('Retry-After is the whole seconds until one token, at least 1', () => {
  const slow = new TokenBucket(0.25, 1, 0); // one token every 4 s
  assert.equal(slow.tryTake(0), true);
  assert.equal(slow.retryAfterSeconds(0), 4);
  assert.equal(slow.retryAfterSeconds(1_000), 3); // 0.25 of a token left to wait for: 3 s
  assert.equal(slow.retryAfterSeconds(1_001), 3); // ceil(2.999)
  // A vanishing rate: an hour at most, never 1e+25 (not a number of seconds to a client).
  const glacial = new TokenBucket(1e-25, 1, 0);
  assert.equal(glacial.tryTake(0), true);
  assert.equal(glacial.retryAfterSeconds(0), 3600);
  const fast = new TokenBucket(100, 1, 0);
  assert.equal(fast.tryTake(0), true);
  assert.equal(fast.retryAfterSeconds(0), 1); // 10 ms, rounded up to the header's 1 s
  const tenth = new TokenBucket(0.1, 2, 0);
  tenth.tryTake(0);
  tenth.tryTake(0);
  assert.equal(tenth.retryAfterSeconds(0), 10);
});

test('new limits apply in place: tokens are kept, capped at the new burst', () => {
  const bucket = new TokenBucket(1, 10, 0);
  for (let i = 0; i < 4; i++) bucket.tryTake(0);
  bucket.setLimits(1, 20, 0);
  assert.equal(bucket.available(0), 6); // not refilled by the change
  bucket.setLimits(2, 3, 0);
  assert.equal(bucket.available(0), 3);
  bucket.tryTake(0);
  bucket.tryTake(0);
  bucket.tryTake(0);
  assert.equal(bucket.available(500), 1); // the new rate: 2/s
});

test('admission keeps gates and buckets across snapshots, keyed by endpoint and team', () => {
  const admission = new Admission();
  const first = snapshot(
    1,
    [endpointRoute({ name: 'a', team: 'risk', maxConcurrency: 2, replicas: [] })],
    { teamLimits: [{ team: 'risk', requestsPerSecond: 1, burst: 2 }] },
  );
  admission.sync(first, 0);
  const gate = admission.gateFor('a');
  const bucket = admission.bucketFor('risk');
  assert.ok(bucket !== null);
  gate.enter();
  gate.enter();
  assert.equal(gate.isFull(), true);
  bucket.tryTake(0);
  bucket.tryTake(0);

  const second = snapshot(
    2,
    [endpointRoute({ name: 'a', team: 'risk', maxConcurrency: 3, replicas: [] })],
    { teamLimits: [{ team: 'risk', requestsPerSecond: 1, burst: 5 }] },
  );
  admission.sync(second, 0);
  assert.equal(admission.gateFor('a'), gate);
  assert.equal(gate.inflight, 2);
  assert.equal(gate.isFull(), false); // limit raised in place
  assert.equal(admission.bucketFor('risk'), bucket);
  assert.equal(bucket.available(0), 0); // a new snapshot does not refill the bucket
  assert.equal(admission.bucketFor('growth'), null);

  admission.sync(snapshot(3, [endpointRoute({ name: 'a', replicas: [] })]), 0);
  assert.equal(admission.bucketFor('risk'), null); // limit removed: unlimited
  assert.equal(admission.gateFor('a').isFull(), false);
});
