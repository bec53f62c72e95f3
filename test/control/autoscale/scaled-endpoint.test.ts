// What the reconciler runs for an autoscaled endpoint: the stored count, always within the
// policy in force (a deploy or `kiln autoscale set` stores the policy before the count).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { resolveAutoscalePolicy } from '../../../src/autoscale/autoscale-policy.ts';
import { activationOf, scaledEndpoint } from '../../../src/control/autoscale/scaled-endpoint.ts';
import type { EndpointRecord } from '../../../src/store/serving-records.ts';
import type { EndpointScaleRecord } from '../../../src/store/scaling-records.ts';

function endpointWith(input: Record<string, unknown> | null, replicas: number): EndpointRecord {
  const check = input === null ? null : resolveAutoscalePolicy(input);
  if (check !== null && !check.ok) throw new Error(check.reason);
  return {
    name: 'e',
    team: 'default',
    model: 'iris',
    version: 1,
    ref: '1',
    replicas,
    config: check === null ? {} : { autoscale: check.policy },
    createdAt: '2026-12-01T00:00:00.000Z',
    updatedAt: '2026-12-01T00:00:00.000Z',
  };
}

function stored(replicas: number): EndpointScaleRecord {
  return {
    endpoint: 'e',
    replicas,
    reason: 'test',
    lastDemandAt: null,
    updatedAt: '2026-12-01T00:00:00.000Z',
  };
}

test('the stored count runs as stored, 0 included, when the policy allows it', () => {
  const endpoint = endpointWith({ minReplicas: 0, maxReplicas: 4, target: 1 }, 1);
  assert.equal(scaledEndpoint(endpoint, stored(0)).replicas, 0);
  assert.equal(scaledEndpoint(endpoint, stored(3)).replicas, 3);
  assert.equal(scaledEndpoint(endpoint, null).replicas, 1);
  assert.notEqual(activationOf(endpoint), null);
});

test('a stored count outside a newer policy runs within it (fails without the clamp)', () => {
  // Deployed with min 2 over a count of 0 stored under min 0: until the deploy writes the
  // count, a pass must not stop every replica of an endpoint whose route has no activator.
  const raised = endpointWith({ minReplicas: 2, maxReplicas: 4, target: 1 }, 2);
  assert.equal(activationOf(raised), null);
  assert.equal(scaledEndpoint(raised, stored(0)).replicas, 2);
  assert.equal(scaledEndpoint(raised, stored(9)).replicas, 4);
  assert.equal(scaledEndpoint(endpointWith(null, 3), stored(0)).replicas, 3, 'no policy');
});
