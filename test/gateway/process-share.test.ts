// One of N gateway processes on a port keeps its share of the snapshot's per-gateway limits
// (issue 16), so N processes together let through what one gateway would.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { processShare } from '../../src/gateway/process-share.ts';
import { endpointRoute, snapshot } from './gateway-harness.ts';

const whole = snapshot(
  7,
  [
    endpointRoute({
      maxConcurrency: 256,
      replicas: [],
      activation: { queueLimit: 100, timeoutMs: 5_000, coldStartBudgetMs: 10_000 },
      drift: { sliceKey: null, slicePath: null, maxRequestsPerSecond: 200 },
    }),
    endpointRoute({ name: 'tiny', maxConcurrency: 1, replicas: [] }),
  ],
  { teamLimits: [{ team: 'risk', requestsPerSecond: 50, burst: 10 }] },
);

test('N processes share the bounds and rates; together they stay within the whole', () => {
  const shared = processShare(whole, 2);
  const [fraud, tiny] = shared.endpoints;
  assert.equal(fraud?.maxConcurrency, 128);
  assert.equal(fraud?.activation?.queueLimit, 50);
  assert.equal(fraud?.drift?.maxRequestsPerSecond, 100);
  assert.deepEqual(shared.teamLimits, [{ team: 'risk', requestsPerSecond: 25, burst: 5 }]);
  // A bound below N: every process keeps 1 (one refusing everything would be worse).
  assert.equal(tiny?.maxConcurrency, 1);
  const three = processShare(whole, 3).endpoints[0];
  assert.equal(three?.maxConcurrency, 85);
  assert.ok((three?.maxConcurrency ?? 0) * 3 <= 256);
  // The rest of the snapshot is untouched.
  assert.equal(shared.version, whole.version);
  assert.equal(fraud?.name, 'fraud');
});

test('one process keeps the snapshot as it is', () => {
  assert.equal(processShare(whole, 1), whole);
});
