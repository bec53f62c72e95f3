// One of N gateway processes on a port keeps its share of the snapshot's per-gateway limits
// (issue 16), so N processes together let through what one gateway would.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Admission } from '../../src/gateway/admission.ts';
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

test('N processes share the rates and queue limits; together they stay within the whole', () => {
  const shared = processShare(whole, 2);
  const [fraud, tiny] = shared.endpoints;
  // The concurrency bound is shared live (admission.ts), not cut here.
  assert.equal(fraud?.maxConcurrency, 256);
  assert.equal(fraud?.activation?.queueLimit, 50);
  assert.equal(fraud?.drift?.maxRequestsPerSecond, 100);
  assert.deepEqual(shared.teamLimits, [{ team: 'risk', requestsPerSecond: 25, burst: 5 }]);
  assert.equal(tiny?.maxConcurrency, 1);
  // A limit below N: every process keeps 1 (one refusing everything would be worse).
  const many = processShare(whole, 300).endpoints[0];
  assert.equal(many?.activation?.queueLimit, 1);
  assert.equal(processShare(whole, 3).endpoints[0]?.activation?.queueLimit, 33);
  // The rest of the snapshot is untouched.
  assert.equal(shared.version, whole.version);
  assert.equal(fraud?.name, 'fraud');
});

test('one process keeps the snapshot as it is', () => {
  assert.equal(processShare(whole, 1), whole);
});

test('gateway processes share a bound: a guaranteed part, plus the room the others leave', () => {
  const admission = new Admission(2);
  admission.sync(whole, 0);
  const gate = admission.gateFor('fraud');
  // No count from the others yet: the bound.
  assert.equal(gate.limit, 256);
  // Handed fewer connections, the other process admits 100: this one may take the rest.
  admission.setOthers(new Map([['fraud', 100]]));
  assert.equal(gate.limit, 156);
  // The others at or over their half: this one keeps its guaranteed half.
  admission.setOthers(new Map([['fraud', 200]]));
  assert.equal(gate.limit, 128);
  for (let i = 0; i < 128; i++) gate.enter();
  assert.equal(gate.isFull(), true);
  assert.deepEqual(admission.admitted().get('fraud'), 128);
  // A bound below N still lets each process admit one.
  assert.equal(admission.gateFor('tiny').limit, 1);
  // One process: the bound as it is, whatever is said of others.
  const alone = new Admission();
  alone.sync(whole, 0);
  alone.setOthers(new Map([['fraud', 200]]));
  assert.equal(alone.gateFor('fraud').limit, 256);
});
