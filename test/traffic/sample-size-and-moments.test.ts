// Required sample sizes against worked values, and the streaming summaries: Welford's
// one-pass moments, and Chan et al.'s merge of partial summaries, which must equal one pass
// over everything (seeded random data).

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { createRandom } from '../../src/core/random.ts';
import {
  requiredSampleSizeForMeans,
  requiredSampleSizeForProportions,
} from '../../src/traffic/required-sample-size.ts';
import { RunningMoments, type MomentsSnapshot } from '../../src/traffic/running-moments.ts';
import { assertClose } from './statistics-reference.ts';

test('sample size for 10% vs 12% at alpha 0.05 (two-sided), power 0.8 is 3,841 per group', () => {
  // Fleiss eq. 4.14 without continuity correction: pbar = 0.11,
  // z_0.975 sqrt(2 * 0.11 * 0.89) = 1.959964 * 0.442493 = 0.867270
  // z_0.8 sqrt(0.1 * 0.9 + 0.12 * 0.88) = 0.841621 * 0.442267 = 0.372219
  // n = (0.867270 + 0.372219)^2 / 0.02^2 = 1.536333 / 0.0004 = 3840.8 -> 3841
  // (the unpooled variant (z_a + z_b)^2 (p1 q1 + p2 q2) / d^2 would give 3838.1 -> 3839)
  const result = requiredSampleSizeForProportions(0.1, 0.12, { alpha: 0.05, power: 0.8 });
  assert.ok(result.ok);
  assert.equal(result.perGroup, 3841);
  assert.equal(result.remainingPerGroup, 3841);
  const partway = requiredSampleSizeForProportions(0.1, 0.12, {
    alpha: 0.05,
    power: 0.8,
    collectedPerGroup: 2000,
  });
  assert.ok(partway.ok);
  assert.equal(partway.remainingPerGroup, 1841);
  const done = requiredSampleSizeForProportions(0.12, 0.1, {
    alpha: 0.05,
    power: 0.8,
    collectedPerGroup: 5000,
  });
  assert.ok(done.ok);
  assert.equal(done.perGroup, 3841); // symmetric in the direction of the effect
  assert.equal(done.remainingPerGroup, 0);
});

test('sample size for two means: SD 1 and 1, difference 0.5, alpha 0.05, power 0.8 -> 63 per group', () => {
  // n = (1.959964 + 0.841621)^2 (1 + 1) / 0.25 = 7.848879 * 8 = 62.79 -> 63
  // (the familiar normal-approximation table value; the t-based exact answer is 64)
  const result = requiredSampleSizeForMeans(1, 1, 0.5, { alpha: 0.05, power: 0.8 });
  assert.ok(result.ok);
  assert.equal(result.perGroup, 63);
  const latency = requiredSampleSizeForMeans(20, 30, 5, { alpha: 0.01, power: 0.9 });
  assert.ok(latency.ok);
  // (2.575829 + 1.281552)^2 * 1300 / 25 = 14.879388 * 52 = 773.73 -> 774
  assert.equal(latency.perGroup, 774);
});

test('sample size: bad input comes back as a reason', () => {
  const plan = { alpha: 0.05, power: 0.8 };
  const reasons = [
    requiredSampleSizeForProportions(0, 0.1, plan),
    requiredSampleSizeForProportions(0.1, 1.2, plan),
    requiredSampleSizeForProportions(0.1, 0.1, plan),
    requiredSampleSizeForProportions(0.1, 0.2, { alpha: 0, power: 0.8 }),
    requiredSampleSizeForProportions(0.1, 0.2, { alpha: 0.05, power: 1 }),
    requiredSampleSizeForProportions(0.1, 0.2, { alpha: 0.05, power: 0.8, collectedPerGroup: -3 }),
    requiredSampleSizeForMeans(0, 0, 1, plan),
    requiredSampleSizeForMeans(1, 1, 0, plan),
    requiredSampleSizeForMeans(1, Number.NaN, 1, plan),
  ].map((result) => (result.ok ? 'ok' : result.reason));
  assert.deepEqual(reasons, [
    'probability-out-of-range',
    'probability-out-of-range',
    'invalid-parameter',
    'invalid-parameter',
    'invalid-parameter',
    'count-out-of-range',
    'invalid-parameter',
    'invalid-parameter',
    'not-finite',
  ]);
});

test('running moments of 2, 4, 4, 4, 5, 5, 7, 9: mean 5, sample variance 32/7', () => {
  const moments = RunningMoments.of([2, 4, 4, 4, 5, 5, 7, 9]);
  assert.equal(moments.count, 8);
  assert.equal(moments.mean, 5);
  assertClose(moments.variance ?? Number.NaN, 32 / 7, 1e-15);
  assert.deepEqual([moments.snapshot().min, moments.snapshot().max], [2, 9]);
});

test('running moments: empty and single-observation summaries say so (null), non-finite values are refused', () => {
  const moments = new RunningMoments();
  assert.equal(moments.mean, null);
  assert.equal(moments.variance, null);
  assert.equal(moments.add(Number.NaN), false);
  assert.equal(moments.add(3), true);
  assert.equal(moments.count, 1);
  assert.equal(moments.mean, 3);
  assert.equal(moments.variance, null);
  const empty = RunningMoments.fromSnapshot(
    JSON.parse(JSON.stringify(new RunningMoments().snapshot())) as MomentsSnapshot,
  );
  assert.ok(empty.ok);
  assert.equal(empty.moments.count, 0);
  const reasons = [
    { count: -1, mean: 0, m2: 0, min: null, max: null },
    { count: 2.5, mean: 0, m2: 0, min: 0, max: 1 },
    { count: 3, mean: 1, m2: -1, min: 0, max: 1 },
    { count: 3, mean: 1, m2: 1, min: null, max: 1 },
  ].map((snapshot) => {
    const result = RunningMoments.fromSnapshot(snapshot);
    return result.ok ? 'ok' : result.reason;
  });
  assert.deepEqual(reasons, [
    'count-out-of-range',
    'count-out-of-range',
    'not-finite',
    'not-finite',
  ]);
});

test('merging partial summaries equals one pass over all values (seeded, 20,000 values in 7 parts)', () => {
  const random = createRandom(1306);
  // Latency-like values with a large offset, where sum-of-squares formulas lose digits.
  const values = Array.from({ length: 20_000 }, () => 1e6 + 50 * -Math.log(1 - random.next()));
  const onePass = RunningMoments.of(values);
  const cuts = [0, 1, 2, 500, 4000, 4001, 13_000, 20_000];
  const merged = new RunningMoments();
  for (let part = 0; part + 1 < cuts.length; part++) {
    const summary = RunningMoments.of(values.slice(cuts[part], cuts[part + 1]));
    // Partial summaries travel as JSON snapshots.
    const restored = RunningMoments.fromSnapshot(
      JSON.parse(JSON.stringify(summary.snapshot())) as MomentsSnapshot,
    );
    assert.ok(restored.ok);
    merged.merge(restored.moments);
  }
  merged.merge(new RunningMoments()); // an empty part changes nothing
  assert.equal(merged.count, onePass.count);
  assertClose(merged.mean ?? Number.NaN, onePass.mean ?? Number.NaN, 1e-14);
  assertClose(merged.variance ?? Number.NaN, onePass.variance ?? Number.NaN, 1e-10);
  assert.deepEqual(
    [merged.snapshot().min, merged.snapshot().max],
    [onePass.snapshot().min, onePass.snapshot().max],
  );
  // Both against a two-pass computation.
  const mean = values.reduce((sum, x) => sum + x, 0) / values.length;
  const variance = values.reduce((sum, x) => sum + (x - mean) ** 2, 0) / (values.length - 1);
  assertClose(onePass.variance ?? Number.NaN, variance, 1e-10);
});
