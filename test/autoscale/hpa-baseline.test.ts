// The HPA-like baseline on synthetic streams: a 15 s sync, the 10 % tolerance, the default
// scale-up policies (double or +4 per sync), 5 min scale-down stabilization, never below 1.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { HpaBaseline, resolveHpaPolicy, type HpaPolicy } from '../../src/autoscale/hpa-baseline.ts';
import { createRandom } from '../../src/core/random.ts';
import { runStream } from './scale-stream.ts';

function hpa(input: Record<string, unknown>): HpaBaseline {
  const check = resolveHpaPolicy(input);
  if (!check.ok) assert.fail(check.reason);
  return new HpaBaseline(check.policy);
}

test('defaults and bad input', () => {
  const check = resolveHpaPolicy({ minReplicas: 1, maxReplicas: 10 });
  assert.ok(check.ok);
  assert.deepEqual(check.policy, {
    minReplicas: 1,
    maxReplicas: 10,
    signal: 'cpu',
    target: 0.7,
    syncPeriodMs: 15_000,
    tolerance: 0.1,
    scaleDownStabilizationMs: 300_000,
  } satisfies HpaPolicy);
  const bad: [unknown, string][] = [
    [{ minReplicas: 0, maxReplicas: 3 }, 'minReplicas must be an integer >= 1, got 0'],
    [{ minReplicas: 4, maxReplicas: 3 }, 'minReplicas (4) > maxReplicas (3)'],
    [
      { minReplicas: 1, maxReplicas: 3, signal: 'rps' },
      'unknown signal "rps" (one of: concurrency, qps, queue-depth, cpu, accelerator, custom)',
    ],
    [
      { minReplicas: 1, maxReplicas: 3, target: 80 },
      'target must be a utilization in (0, 1], got 80',
    ],
    [{ minReplicas: 1, maxReplicas: 3, signal: 'qps', target: 0 }, 'target must be > 0, got 0'],
    [{ minReplicas: 1, maxReplicas: 3, tolerance: 1 }, 'tolerance must be in [0, 1), got 1'],
    [{ minReplicas: 1, maxReplicas: 3, window: 1 }, "unknown field 'window'"],
    [
      { minReplicas: 1, maxReplicas: 3, signal: 'slo' },
      'unknown signal "slo" (one of: concurrency, qps, queue-depth, cpu, accelerator, custom)',
    ],
  ];
  for (const [input, reason] of bad) {
    const result = resolveHpaPolicy(input);
    assert.ok(!result.ok);
    assert.equal(result.reason, reason);
  }
});

test('acts only every sync period, and not within the tolerance', () => {
  // 4 replicas at 0.74 CPU each against 0.7: ratio 1.057, inside 10 % → no change at the sync
  // at t = 0; 0.9 each from t = 1 (ratio 1.286) → ceil(4 × 1.286) = 6, but only at the next
  // sync, t = 15.
  const run = runStream(
    hpa({ minReplicas: 1, maxReplicas: 20, signal: 'cpu', target: 0.7 }),
    (t) => ({ cpu: t < 1 ? 4 * 0.74 : 4 * 0.9 }),
    { seconds: 16, initialReplicas: 4, startupSeconds: 30 },
  );
  assert.deepEqual(run.events, [{ t: 15, from: 4, to: 6 }]);
  assert.match(run.steps.find((step) => step.t === 0)!.decision.reason, /ratio 1\.06 → 4/);
});

test('scale-up at most doubles (or +4) per sync', () => {
  const run = runStream(
    hpa({ minReplicas: 1, maxReplicas: 100, signal: 'concurrency', target: 1 }),
    () => ({ concurrency: 100 }),
    { seconds: 100, initialReplicas: 1 },
  );
  // Every 15 s: ratio = 100 / ready; desired 100, limited to max(2n, n + 4).
  assert.deepEqual(
    run.events.map((event) => [event.t, event.to]),
    [
      [0, 5],
      [15, 10],
      [30, 20],
      [45, 40],
      [60, 80],
      [75, 100],
    ],
  );
});

test('scale-down waits for the 5 min stabilization, then drops at once; never below 1', () => {
  const run = runStream(
    hpa({ minReplicas: 1, maxReplicas: 20, signal: 'concurrency', target: 1 }),
    (t) => ({ concurrency: t <= 60 ? 8 : t <= 400 ? 2 : 0 }),
    { seconds: 800, initialReplicas: 8 },
  );
  // Syncs every 15 s. The last recommendation of 8 is at t = 60 (window (45, 60]); from t = 75
  // it is 2, but the max over 5 min holds 8 until that one leaves at t = 360. From t = 405 the
  // demand is 0 → 0, held at 2 until t = 690, then the floor minReplicas 1.
  assert.deepEqual(run.events, [
    { t: 360, from: 8, to: 2 },
    { t: 705, from: 2, to: 1 },
  ]);
});

test('random streams: within bounds, changes only on syncs, the same answer asked twice', () => {
  const random = createRandom(15);
  for (let run = 0; run < 50; run++) {
    const minReplicas = 1 + random.int(3);
    const check = resolveHpaPolicy({
      minReplicas,
      maxReplicas: minReplicas + random.int(30),
      signal: 'concurrency',
      target: 0.5 + random.next() * 3,
    });
    if (!check.ok) assert.fail(check.reason);
    const scaler = new HpaBaseline(check.policy);
    let replicas = minReplicas;
    let level = random.next() * 30;
    for (let t = 0; t < 600; t++) {
      if (random.next() < 0.02) level = random.next() * 60;
      scaler.observe({
        atMs: t * 1000,
        readyReplicas: replicas,
        startingReplicas: 0,
        concurrency: level * (0.8 + random.next() * 0.4),
        qps: 0,
        completed: 0,
        held: 0,
        queueDepth: null,
        cpu: null,
        slotsPerReplica: null,
        accelerator: null,
        custom: {},
      });
      const decision = scaler.decide(t * 1000, replicas);
      assert.deepEqual(scaler.decide(t * 1000, replicas), decision);
      assert.ok(decision.replicas >= check.policy.minReplicas);
      assert.ok(decision.replicas <= check.policy.maxReplicas);
      if (t % 15 !== 0) assert.equal(decision.replicas, replicas, `changed between syncs at ${t}`);
      if (decision.replicas > replicas) {
        assert.ok(decision.replicas <= Math.max(2 * replicas, replicas + 4));
      }
      replicas = decision.replicas;
    }
  }
});
