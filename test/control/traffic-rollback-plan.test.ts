// Rollback's rules as a pure plan (rollout → policy → previous → nothing), the warm list's
// edits (exact changes for each state, with a fixed clock), and the settings' parsing.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { planRollback, type RollbackSituation } from '../../src/control/traffic/rollback-plan.ts';
import { trafficOptionsFromEnv } from '../../src/control/traffic/traffic-settings.ts';
import { keepWarm } from '../../src/control/traffic/warm-versions.ts';
import type { EndpointRecord } from '../../src/store/serving-records.ts';
import type {
  EndpointTrafficRecord,
  RolloutRecord,
  TrafficPolicy,
} from '../../src/store/traffic-records.ts';

const now = Date.parse('2026-01-01T00:00:00Z');
const iso = (ms: number) => new Date(ms).toISOString();

const endpoint: EndpointRecord = {
  name: 'e',
  team: 't',
  model: 'm',
  version: 2,
  ref: '2',
  replicas: 1,
  config: {},
  createdAt: iso(now),
  updatedAt: iso(now),
};

function traffic(fields: Partial<EndpointTrafficRecord>): EndpointTrafficRecord {
  return {
    endpoint: 'e',
    policy: null,
    previous: null,
    warm: [],
    staged: [],
    revision: 4,
    updatedAt: iso(now),
    ...fields,
  };
}

function situation(fields: Partial<RollbackSituation>): RollbackSituation {
  return {
    endpoint,
    traffic: null,
    rollout: null,
    experiment: null,
    previousServable: true,
    nowMs: now,
    warmGraceMs: 600_000,
    actor: 'ops',
    reason: 'bad',
    ...fields,
  };
}

const policy: TrafficPolicy = {
  versions: [
    { model: 'm', version: 2, weight: 90 },
    { model: 'm', version: 3, weight: 10 },
  ],
  shadows: [],
  salt: 's',
  keyPath: null,
  sliceKey: null,
  slicePath: null,
};

test('a rollout in progress is rolled back first: policy null, candidate unstaged, not warm', () => {
  const rollout = {
    id: 'r-1',
    endpoint: 'e',
    strategy: 'blue-green',
    baseline: { model: 'm', version: 2 },
    canary: { model: 'm', version: 3 },
    state: 'starting',
  } as RolloutRecord;
  const plan = planRollback(
    situation({
      rollout,
      traffic: traffic({
        policy,
        staged: [
          { model: 'm', version: 3 },
          { model: 'n', version: 1 },
        ],
        previous: { model: 'm', version: 1 },
      }),
    }),
  );
  assert.ok(plan.ok);
  assert.equal(plan.kind, 'rollout');
  assert.deepEqual(plan.change.policy, null);
  assert.deepEqual(plan.change.staged, [{ model: 'n', version: 1 }]);
  assert.equal(plan.change.warm, undefined);
  assert.equal(plan.change.stable, undefined);
  assert.equal(plan.change.expectRevision, 4);
  assert.deepEqual(plan.change.rollout, {
    id: 'r-1',
    patch: {
      state: 'rolled-back',
      pausedAt: null,
      reason: 'rolled back by ops: bad',
      finishedAt: iso(now),
    },
  });
  assert.equal(plan.change.event.action, 'rollback');
});

test('a policy in force ends next, stopping a running experiment; the stable one stays', () => {
  const plan = planRollback(
    situation({
      traffic: traffic({ policy, previous: { model: 'm', version: 1 } }),
      experiment: { id: 'x-1' } as RollbackSituation['experiment'],
    }),
  );
  assert.ok(plan.ok);
  assert.equal(plan.kind, 'policy');
  assert.deepEqual(plan.change.policy, null);
  assert.deepEqual(plan.change.experiment, { stop: 'x-1', at: iso(now) });
  assert.equal(plan.change.stable, undefined);
  assert.equal(plan.summary, 'traffic policy cleared: m:2 takes 100%, experiment x-1 stopped');
});

test('else the previous version is stable again and the current one goes warm', () => {
  const plan = planRollback(
    situation({
      traffic: traffic({
        previous: { model: 'm', version: 1 },
        warm: [
          { model: 'm', version: 1, until: iso(now + 60_000) }, // becomes stable: leaves warm
          { model: 'old', version: 9, until: iso(now - 1) }, // expired: dropped
          { model: 'n', version: 4, until: iso(now + 5_000) },
        ],
      }),
    }),
  );
  assert.ok(plan.ok);
  assert.equal(plan.kind, 'stable');
  assert.deepEqual(plan.change.stable, { model: 'm', version: 1, ref: '1' });
  assert.deepEqual(plan.change.previous, { model: 'm', version: 2 });
  assert.deepEqual(plan.change.warm, [
    { model: 'n', version: 4, until: iso(now + 5_000) },
    { model: 'm', version: 2, until: iso(now + 600_000) },
  ]);
});

test('nothing to return to: a reason, never a change', () => {
  const none = planRollback(situation({}));
  assert.deepEqual(none, {
    ok: false,
    reason: 'no rollout or traffic policy in force, and m:2 has no previous version',
  });
  const gone = planRollback(
    situation({
      traffic: traffic({ previous: { model: 'm', version: 1 } }),
      previousServable: false,
    }),
  );
  assert.deepEqual(gone, { ok: false, reason: 'the previous version m:1 no longer exists' });
});

test('keepWarm: the later time wins, a grace of 0 keeps nothing, the new stable one is left out', () => {
  const warm = [{ model: 'm', version: 1, until: iso(now + 900_000) }];
  assert.deepEqual(keepWarm(warm, { model: 'm', version: 1 }, now + 60_000, now), warm);
  assert.deepEqual(keepWarm(warm, { model: 'm', version: 3 }, now, now), warm);
  assert.deepEqual(
    keepWarm(warm, { model: 'm', version: 3 }, now + 1, now, { model: 'm', version: 1 }),
    [{ model: 'm', version: 3, until: iso(now + 1) }],
  );
});

test('settings from the environment: whole milliseconds >= 0, empty = default, else refused', () => {
  assert.deepEqual(trafficOptionsFromEnv({}), {});
  assert.deepEqual(trafficOptionsFromEnv({ KILN_WARM_GRACE_MS: ' ' }), {});
  assert.deepEqual(
    trafficOptionsFromEnv({ KILN_WARM_GRACE_MS: '0', KILN_OBSERVATION_RETENTION_MS: '86400000' }),
    { warmGraceMs: 0, observationRetentionMs: 86_400_000 },
  );
  for (const bad of ['-1', '1.5', '10m', 'NaN']) {
    assert.throws(
      () => trafficOptionsFromEnv({ KILN_WARM_GRACE_MS: bad }),
      /KILN_WARM_GRACE_MS must be a whole number of milliseconds in \[0, 604800000\]/,
    );
  }
  // A grace past a week (here past the last valid date) is refused at start: it made every
  // warm entry's `until` an invalid date, and each deploy and rollback a 500.
  assert.throws(
    () => trafficOptionsFromEnv({ KILN_WARM_GRACE_MS: String(Number.MAX_SAFE_INTEGER) }),
    /KILN_WARM_GRACE_MS/,
  );
  assert.deepEqual(trafficOptionsFromEnv({ KILN_WARM_GRACE_MS: '604800000' }), {
    warmGraceMs: 604_800_000,
  });
  assert.throws(
    () => trafficOptionsFromEnv({ KILN_OBSERVATION_RETENTION_MS: '-1' }),
    /KILN_OBSERVATION_RETENTION_MS must be a whole number of milliseconds >= 0/,
  );
});
