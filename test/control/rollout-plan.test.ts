// The rollout tick's decisions, pure: replicas and time while starting, the golden outcome of
// a blue-green, the analysis and interval of a step, and where advancing leads.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  advanceTo,
  decideCanaryDown,
  decideGolden,
  decideStarting,
  decideStep,
  type ReplicaView,
} from '../../src/control/traffic/rollout-plan.ts';
import type { RolloutRecord } from '../../src/store/traffic-records.ts';
import type { CanaryVerdict } from '../../src/traffic/canary-reason.ts';

const t0 = Date.parse('2026-01-01T00:00:00Z');

function rollout(patch: Partial<RolloutRecord> = {}): RolloutRecord {
  return {
    id: 'ro_1',
    endpoint: 'fraud',
    strategy: 'canary',
    baseline: { model: 'fraud', version: 1 },
    canary: { model: 'fraud', version: 2 },
    steps: [1, 5, 25, 50, 100],
    stepIndex: 1,
    intervalMs: 60_000,
    thresholds: { maxErrorRate: 0.01, maxP99Ms: 50, minRequests: 100 },
    sliceKey: null,
    slicePath: null,
    state: 'running',
    stepStartedAt: new Date(t0).toISOString(),
    pausedAt: null,
    reason: null,
    lastAnalysis: null,
    createdBy: 'ci',
    createdAt: new Date(t0).toISOString(),
    updatedAt: new Date(t0).toISOString(),
    finishedAt: null,
    ...patch,
  };
}

function replica(version: number, state: ReplicaView['state'], reason: string | null = null) {
  return {
    model: 'fraud',
    version,
    state,
    url: state === 'ready' ? `http://v${version}` : null,
    reason,
  };
}

const verdict = (decision: CanaryVerdict['decision']): CanaryVerdict => ({
  decision,
  reasons: [
    {
      check: 'error-rate',
      outcome: decision === 'rollback' ? 'breach' : 'pass',
      scope: 'slice country=de',
      message: 'slice country=de: too many errors',
    } as CanaryVerdict['reasons'][number],
  ],
  checks: [],
});

test('advancing: steps before the 100 % one are run, reaching it completes', () => {
  const r = rollout();
  assert.deepEqual(advanceTo(r, 2, 'ci', 'why'), {
    kind: 'step',
    index: 2,
    actor: 'ci',
    reason: 'why',
  });
  assert.equal(advanceTo(r, 3, 'ci', 'why').kind, 'step');
  assert.deepEqual(advanceTo(r, 4, 'ci', 'why'), {
    kind: 'complete',
    index: 4,
    actor: 'ci',
    reason: 'why',
  });
  assert.equal(advanceTo(rollout({ steps: [100] }), 0, 'ci', 'why').kind, 'complete');
});

test("starting: all of the canary's replicas ready (other versions do not count), else hold until the timeout", () => {
  const r = rollout({ state: 'starting', stepIndex: -1, stepStartedAt: null });
  const replicas = [
    replica(1, 'ready'),
    replica(1, 'ready'),
    replica(2, 'ready'),
    replica(2, 'starting', 'loading'),
  ];
  assert.deepEqual(decideStarting(r, replicas, 2, t0 + 1000, 60_000), { kind: 'hold' });
  assert.deepEqual(decideStarting(r, replicas, 2, t0 + 60_000, 60_000), {
    kind: 'end',
    action: 'rollout-rollback',
    actor: 'rollout-controller',
    reason: 'fraud:2: 1/2 replicas ready after 60 s (loading)',
  });
  const ready = [...replicas.slice(0, 3), replica(2, 'ready')];
  assert.deepEqual(decideStarting(r, ready, 2, t0 + 1000, 60_000), {
    kind: 'step',
    index: 0,
    actor: 'rollout-controller',
    reason: 'fraud:2 ready (2 replicas)',
  });
  // An endpoint scaled to zero still needs one ready canary replica to judge.
  assert.deepEqual(decideStarting(r, replicas.slice(0, 2), 0, t0, 60_000), { kind: 'hold' });
  const blueGreen = rollout({ ...r, strategy: 'blue-green', steps: [100] });
  assert.deepEqual(decideStarting(blueGreen, ready, 2, t0, 60_000), {
    kind: 'check-golden',
    url: 'http://v2',
    readyReplicas: 2,
  });
  assert.equal(
    (decideStarting(blueGreen, replicas, 2, t0 + 60_000, 60_000) as { action: string }).action,
    'blue-green-fail',
  );
});

test('blue-green: a failed golden run ends it, a passed one (or none registered) completes it', () => {
  const r = rollout({ strategy: 'blue-green', steps: [100], state: 'starting', stepIndex: -1 });
  const failed = decideGolden(
    r,
    { ok: false, caseIndex: 1, reason: 'case 1: output y[0]: got 2, want 1' },
    2,
  );
  assert.equal(failed.kind, 'end');
  assert.equal(
    (failed as { reason: string }).reason,
    'golden set of fraud:2 not reproduced: case 1: output y[0]: got 2, want 1',
  );
  const passed = decideGolden(r, { ok: true, cases: 3 }, 2);
  assert.equal(passed.kind, 'complete');
  assert.equal(
    (passed as { reason: string }).reason,
    'fraud:2 ready (2 replicas), golden set reproduced (3 cases)',
  );
  const none = decideGolden(r, null, 1);
  assert.equal(none.kind, 'complete');
  assert.match((none as { reason: string }).reason, /no golden set registered: health checks only/);
});

test('a step: rollback at once, promotion only after the interval and only while running', () => {
  const r = rollout();
  const rolled = decideStep(r, verdict('rollback'), t0 + 1000);
  assert.equal(rolled.kind, 'end');
  assert.equal(
    (rolled as { reason: string }).reason,
    'rolled back at step 2/5: slice country=de: too many errors',
  );
  assert.equal(decideStep(rollout({ state: 'paused' }), verdict('rollback'), t0).kind, 'end');
  assert.deepEqual(decideStep(r, verdict('promote-step'), t0 + 59_999), { kind: 'hold' });
  const promoted = decideStep(r, verdict('promote-step'), t0 + 60_000);
  assert.equal(promoted.kind, 'step');
  assert.equal((promoted as { index: number }).index, 2);
  assert.equal((promoted as { reason: string }).reason, 'step 2/5 (5 %) passed its analysis');
  assert.deepEqual(
    decideStep(rollout({ state: 'paused' }), verdict('promote-step'), t0 + 120_000),
    { kind: 'hold' },
  );
  assert.deepEqual(decideStep(r, verdict('wait'), t0 + 120_000), { kind: 'hold' });
  assert.equal(
    decideStep(rollout({ stepIndex: 3 }), verdict('promote-step'), t0 + 60_000).kind,
    'complete',
  );
});

test('a step: a canary with no ready replica and a failed one is rolled back (the gateway gives its share to the baseline, so the analysis alone would wait for ever)', () => {
  const r = rollout();
  const crashed = [replica(1, 'ready'), replica(2, 'failed', 'the worker exited (signal SIGKILL)')];
  const down = decideCanaryDown(r, crashed);
  assert.equal(down?.kind, 'end');
  assert.match(
    (down as { reason: string }).reason,
    /step 2\/5: fraud:2 has no ready replica \(the worker exited/,
  );
  // One canary replica still ready, or one restarting without a failure: the analysis decides.
  assert.equal(decideCanaryDown(r, [...crashed, replica(2, 'ready')]), null);
  assert.equal(decideCanaryDown(r, [replica(1, 'ready'), replica(2, 'starting')]), null);
  // Paused rollouts too: a crash is a verdict whatever the step's clock says.
  assert.equal(decideCanaryDown(rollout({ state: 'paused' }), crashed)?.kind, 'end');
});
