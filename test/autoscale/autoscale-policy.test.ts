// resolveAutoscalePolicy: the defaults it fills in and a reason naming the field for every
// kind of bad input (the API answers KILN_AUTOSCALE_INVALID with that reason).

import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  autoscaleDefaults,
  resolveAutoscalePolicy,
  type AutoscalePolicy,
} from '../../src/autoscale/autoscale-policy.ts';

function resolved(input: unknown): AutoscalePolicy {
  const check = resolveAutoscalePolicy(input);
  if (!check.ok) assert.fail(`expected a valid policy, got: ${check.reason}`);
  return check.policy;
}

function reason(input: unknown): string {
  const check = resolveAutoscalePolicy(input);
  if (check.ok) assert.fail(`expected a refusal for ${JSON.stringify(input)}`);
  return check.reason;
}

test('fills every default, the target by signal', () => {
  assert.deepEqual(resolved({ minReplicas: 1, maxReplicas: 4 }), {
    minReplicas: 1,
    maxReplicas: 4,
    signal: 'concurrency',
    target: 1,
    stableWindowMs: 60_000,
    panicWindowMs: 6_000,
    panicThreshold: 2,
    maxScaleUpRate: 1000,
    maxScaleDownRate: 2,
    scaleDownDelayMs: 30_000,
    scaleDownHysteresis: 0.5,
  });
  assert.equal(resolved({ minReplicas: 1, maxReplicas: 4, signal: 'qps' }).target, 100);
  assert.equal(resolved({ minReplicas: 1, maxReplicas: 4, signal: 'cpu' }).target, 0.7);
  assert.equal(resolved({ minReplicas: 1, maxReplicas: 4, signal: 'queue-depth' }).target, 4);
  const custom = resolved({
    minReplicas: 1,
    maxReplicas: 4,
    signal: 'custom',
    customMetric: 'tokens_per_second',
    target: 500,
  });
  assert.equal(custom.customMetric, 'tokens_per_second');
  assert.equal(custom.target, 500);
});

test('minReplicas 0 brings the scale-to-zero defaults; predictive true brings its own', () => {
  const zero = resolved({ minReplicas: 0, maxReplicas: 3, scaleToZero: { idleMs: 5000 } });
  assert.deepEqual(zero.scaleToZero, { ...autoscaleDefaults.scaleToZero, idleMs: 5000 });
  assert.deepEqual(resolved({ minReplicas: 0, maxReplicas: 3 }).scaleToZero, {
    idleMs: 300_000,
    queueLimit: 100,
    timeoutMs: 30_000,
    coldStartBudgetMs: 10_000,
  });
  assert.equal(resolved({ minReplicas: 1, maxReplicas: 3 }).scaleToZero, undefined);
  assert.deepEqual(resolved({ minReplicas: 1, maxReplicas: 3, predictive: true }).predictive, {
    historyDays: 14,
    bucketMs: 600_000,
  });
  assert.deepEqual(
    resolved({ minReplicas: 1, maxReplicas: 3, predictive: { startupMs: 540_000 } }).predictive,
    { startupMs: 540_000, historyDays: 14, bucketMs: 600_000 },
  );
  assert.equal(
    resolved({ minReplicas: 1, maxReplicas: 3, predictive: false }).predictive,
    undefined,
  );
});

test('every kind of bad input is refused with a reason naming the field', () => {
  const base = { minReplicas: 1, maxReplicas: 4 };
  const cases: [unknown, string][] = [
    [null, 'the policy must be a JSON object, got null'],
    [[1, 2], 'the policy must be a JSON object, got an array'],
    [{ maxReplicas: 2 }, 'minReplicas is required (an integer >= 0)'],
    [{ minReplicas: 5, maxReplicas: 2 }, 'minReplicas (5) > maxReplicas (2)'],
    [{ minReplicas: 0, maxReplicas: 0 }, 'maxReplicas must be an integer >= 1, got 0'],
    [{ minReplicas: -1, maxReplicas: 2 }, 'minReplicas must be an integer >= 0, got -1'],
    [{ minReplicas: 1.5, maxReplicas: 2 }, 'minReplicas must be an integer >= 0, got 1.5'],
    [{ minReplicas: '1', maxReplicas: 2 }, "minReplicas must be an integer >= 0, got '1'"],
    [
      { ...base, signal: 'latency' },
      "unknown signal 'latency' (one of: concurrency, qps, queue-depth, cpu, accelerator, custom, slo)",
    ],
    [{ ...base, target: 0 }, 'target must be > 0, got 0'],
    [{ ...base, target: -2 }, 'target must be > 0, got -2'],
    [{ ...base, target: 'high' }, "target must be > 0, got 'high'"],
    [
      { ...base, signal: 'cpu', target: 70 },
      "target of signal 'cpu' is a utilization in (0, 1], got 70",
    ],
    [
      { ...base, signal: 'accelerator', target: 1.5 },
      "target of signal 'accelerator' is a utilization in (0, 1], got 1.5",
    ],
    [
      { ...base, signal: 'custom' },
      "signal 'custom' needs customMetric (the worker metric's name, e.g. tokens_per_second)",
    ],
    [
      { ...base, customMetric: 'tokens_per_second' },
      "customMetric applies only to signal 'custom' (signal is 'concurrency')",
    ],
    [
      { ...base, stableWindowMs: 10_000, panicWindowMs: 10_000 },
      'panicWindowMs (10000) must be < stableWindowMs (10000)',
    ],
    [{ ...base, panicWindowMs: 61_000 }, 'panicWindowMs (61000) must be < stableWindowMs (60000)'],
    [
      { ...base, stableWindowMs: 500 },
      'stableWindowMs must be a number in [1000, 3600000], got 500',
    ],
    [{ ...base, panicThreshold: 0.5 }, 'panicThreshold must be a number in [1, 100], got 0.5'],
    [{ ...base, maxScaleUpRate: 0.5 }, 'maxScaleUpRate must be a number >= 1, got 0.5'],
    [{ ...base, maxScaleDownRate: 0 }, 'maxScaleDownRate must be a number >= 1, got 0'],
    [
      { ...base, scaleDownDelayMs: -1 },
      'scaleDownDelayMs must be a number in [0, 3600000], got -1',
    ],
    [
      { minReplicas: 2, maxReplicas: 4, scaleToZero: { idleMs: 60_000 } },
      'scaleToZero applies only when minReplicas is 0 (minReplicas is 2)',
    ],
    [
      { minReplicas: 0, maxReplicas: 4, scaleToZero: { idleMs: 0 } },
      'scaleToZero.idleMs must be a number >= 1000, got 0',
    ],
    [
      { minReplicas: 0, maxReplicas: 4, scaleToZero: { queueLimit: 0 } },
      'scaleToZero.queueLimit must be an integer in [1, 100000], got 0',
    ],
    [
      { minReplicas: 0, maxReplicas: 4, scaleToZero: { idle: 5 } },
      "unknown field 'scaleToZero.idle'",
    ],
    [{ ...base, predictive: 'yes' }, "predictive must be true, false or an object, got 'yes'"],
    [
      { ...base, predictive: { bucketMs: 7 * 60_000 } },
      'predictive.bucketMs (420000) must divide a day (86400000 ms) evenly',
    ],
    [
      { ...base, predictive: { historyDays: 0 } },
      'predictive.historyDays must be an integer in [1, 366], got 0',
    ],
    [
      { ...base, signal: 'cpu', predictive: true },
      "predictive needs signal concurrency or qps (the demand history), not 'cpu'",
    ],
    [{ ...base, replicas: 3 }, "unknown field 'replicas'"],
    [
      { ...base, signal: 'slo' },
      "signal 'slo' needs slo: {latencyMs, objective} (e.g. {latencyMs: 200})",
    ],
    [
      { ...base, slo: { latencyMs: 200 } },
      "slo applies only to signal 'slo' (signal is 'concurrency')",
    ],
    [
      { ...base, signal: 'slo', slo: { latencyMs: 200 }, target: 3 },
      "target does not apply to signal 'slo' (the count is sized to slo.latencyMs and slo.objective)",
    ],
    [{ ...base, signal: 'slo', slo: 200 }, 'slo must be an object {latencyMs, objective}, got 200'],
    [{ ...base, signal: 'slo', slo: { objective: 0.99 } }, 'slo.latencyMs is required (ms, > 0)'],
    [
      { ...base, signal: 'slo', slo: { latencyMs: 0 } },
      'slo.latencyMs must be a number > 0 (ms), got 0',
    ],
    [
      { ...base, signal: 'slo', slo: { latencyMs: 200, objective: 99.9 } },
      'slo.objective must be a share in (0, 1) (e.g. 0.999), got 99.9',
    ],
    [
      { ...base, signal: 'slo', slo: { latencyMs: 200, objective: 1 } },
      'slo.objective must be a share in (0, 1) (e.g. 0.999), got 1',
    ],
    [{ ...base, signal: 'slo', slo: { latencyMs: 200, p: 99 } }, "unknown field 'slo.p'"],
    [
      { ...base, signal: 'slo', slo: { latencyMs: 200 }, predictive: true },
      "predictive needs signal concurrency or qps (the demand history), not 'slo'",
    ],
  ];
  for (const [input, expected] of cases)
    assert.equal(reason(input), expected, JSON.stringify(input));
});

test("signal 'slo' takes a latency objective (objective 0.999 by default) and no target", () => {
  const policy = resolved({
    minReplicas: 1,
    maxReplicas: 9,
    signal: 'slo',
    slo: { latencyMs: 250 },
  });
  assert.equal(policy.signal, 'slo');
  assert.deepEqual(policy.slo, { latencyMs: 250, objective: 0.999 });
  assert.equal(policy.target, 1);
  assert.deepEqual(
    resolved({
      minReplicas: 1,
      maxReplicas: 9,
      signal: 'slo',
      slo: { latencyMs: 80, objective: 0.99 },
    }).slo,
    { latencyMs: 80, objective: 0.99 },
  );
  assert.equal(resolved({ minReplicas: 1, maxReplicas: 9 }).slo, undefined);
});

test('several problems are all named at once', () => {
  assert.equal(
    reason({ minReplicas: 5, maxReplicas: 2, signal: 'cpu', target: 0 }),
    'minReplicas (5) > maxReplicas (2); target must be > 0, got 0',
  );
});
