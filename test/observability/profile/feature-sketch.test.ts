// The profile sketches (src/observability/profile/): merge of parts equals the sketch of the
// whole, PSI of a fresh resample small and of a shifted sample large, PSI and two-sample
// Kolmogorov–Smirnov against hand computations (seeded data; no scipy needed: the KS series
// values below are the Kolmogorov distribution's 2 sum (-1)^(j-1) exp(-2 j^2 lambda^2)).

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { createRandom, type Random } from '../../../src/core/random.ts';
import { CategoricalSketcher } from '../../../src/observability/profile/categorical-sketcher.ts';
import type {
  FeatureSketch,
  NumericSketch,
} from '../../../src/observability/profile/data-profile.ts';
import { mergeFeatureSketches } from '../../../src/observability/profile/merge-feature-sketches.ts';
import { NumericSketcher } from '../../../src/observability/profile/numeric-sketcher.ts';
import {
  kolmogorovSurvival,
  sketchKolmogorovSmirnov,
} from '../../../src/observability/profile/sketch-ks.ts';
import { sketchPsi } from '../../../src/observability/profile/sketch-psi.ts';
import { HistogramSketch } from '../../../src/traffic/histogram-sketch.ts';
import { sketchStabilityIndex } from '../../../src/traffic/sketch-stability-index.ts';

function numeric(values: readonly (number | null)[]): NumericSketch {
  const sketcher = new NumericSketcher();
  for (const value of values) sketcher.add(value);
  return sketcher.snapshot();
}

function categorical(values: readonly (string | null)[], maxCategories?: number): FeatureSketch {
  const sketcher = new CategoricalSketcher(maxCategories);
  for (const value of values) sketcher.add(value);
  return sketcher.snapshot();
}

/** Box–Muller normal with mean mu and standard deviation sigma. */
function normal(random: Random, mu: number, sigma: number): number {
  const u = 1 - random.next();
  const v = random.next();
  return mu + sigma * Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
}

function close(actual: number, expected: number, tolerance: number, what = ''): void {
  assert.ok(
    Math.abs(actual - expected) <= tolerance * Math.max(1, Math.abs(expected)),
    `${what} expected ${expected}, got ${actual}`,
  );
}

test('numeric: the merge of three parts equals the sketch of the whole (buckets exactly)', () => {
  const random = createRandom(7);
  const values = Array.from({ length: 3000 }, (_, i) =>
    i % 97 === 0 ? null : normal(random, 10, 4) * (i % 5 === 0 ? -1 : 1),
  );
  values.push(0, 0, Number.NaN);
  const whole = numeric(values);
  const parts = [values.slice(0, 1000), values.slice(1000, 1700), values.slice(1700)].map(numeric);
  let merged: FeatureSketch = parts[0] as FeatureSketch;
  for (const part of parts.slice(1)) {
    const result = mergeFeatureSketches(merged, part);
    assert.ok(result.ok);
    merged = result.sketch;
  }
  assert.equal(merged.kind, 'numeric');
  if (merged.kind !== 'numeric') return;
  assert.deepEqual(merged.histogram, whole.histogram);
  assert.equal(merged.missing, whole.missing);
  assert.equal(merged.missing, 32); // 31 multiples of 97 below 3000, and the NaN
  assert.equal(merged.moments.count, whole.moments.count);
  assert.equal(merged.moments.min, whole.moments.min);
  assert.equal(merged.moments.max, whole.moments.max);
  close(merged.moments.mean, whole.moments.mean, 1e-12, 'mean');
  close(merged.moments.m2, whole.moments.m2, 1e-12, 'm2');
});

test('categorical: the merge of parts equals the whole under the cap; over it the most frequent stay', () => {
  const values = ['fr', 'de', null, 'fr', 'it', '', 'fr', 'de', 'es'];
  const whole = categorical(values);
  const merged = mergeFeatureSketches(
    categorical(values.slice(0, 4)),
    categorical(values.slice(4)),
  );
  assert.ok(merged.ok);
  assert.deepEqual(merged.sketch, whole);
  assert.deepEqual(whole, {
    kind: 'categorical',
    missing: 2,
    count: 7,
    maxCategories: 100,
    categories: { de: 2, es: 1, fr: 3, it: 1 },
    other: 0,
  });
  // Cap 2: a streaming sketcher keeps the first two names it sees; a merge keeps the top two.
  const capped = mergeFeatureSketches(
    categorical(['it', 'fr', 'es'], 2),
    categorical(['fr', 'de', 'de', 'fr'], 2),
  );
  assert.ok(capped.ok);
  assert.deepEqual(capped.sketch, {
    kind: 'categorical',
    missing: 0,
    count: 7,
    maxCategories: 2,
    categories: { de: 2, fr: 3 },
    other: 2,
  });
  const kinds = mergeFeatureSketches(numeric([1]), categorical(['a']));
  assert.equal(kinds.ok, false);
  // A category named like an Object.prototype key stays an ordinary category.
  const proto = categorical(['__proto__', 'constructor']);
  assert.ok(proto.kind === 'categorical');
  assert.deepEqual(Object.keys(proto.categories), ['__proto__', 'constructor']);
});

test('PSI of a fresh resample is small; of a shifted or rescaled sample, large', () => {
  const random = createRandom(11);
  const draw = (n: number, mu: number, sigma: number): number[] =>
    Array.from({ length: n }, () => normal(random, mu, sigma));
  const reference = numeric(draw(5000, 50, 10));
  const fresh = sketchPsi(reference, numeric(draw(2000, 50, 10)));
  assert.ok(fresh.ok);
  // Expected ~ (k - 1)(1/5000 + 1/2000) = 9 * 0.0007 = 0.0063 for 10 bins.
  assert.ok(fresh.psi < 0.03, `fresh resample PSI ${fresh.psi}`);
  assert.equal(fresh.bins.length, 11); // 10 decile bins + missing
  assert.equal(fresh.bins.at(-1), 'missing');
  const shifted = sketchPsi(reference, numeric(draw(2000, 58, 10)));
  assert.ok(shifted.ok);
  assert.ok(shifted.psi > 0.25, `shift by 0.8 sd: PSI ${shifted.psi}`);
  const wider = sketchPsi(reference, numeric(draw(2000, 50, 20)));
  assert.ok(wider.ok);
  assert.ok(wider.psi > 0.25, `sd doubled: PSI ${wider.psi}`);
  // Half the values going missing is a shift too, seen through the missing bin.
  const halfMissing = numeric([...draw(1000, 50, 10), ...new Array<null>(1000).fill(null)]);
  const missing = sketchPsi(reference, halfMissing);
  assert.ok(missing.ok);
  assert.ok(missing.psi > 1, `half missing: PSI ${missing.psi}`);
});

test('categorical PSI by hand: 50/50 against 40/50/10 (an unseen category falls in other)', () => {
  // Bins a, b, other, missing: reference 50/50/0/0, current 40/50/10/0.
  // -0.1 ln(0.8) + 0 + (0.1 - 0.0001) ln(0.1 / 0.0001) + 0 = 0.7123991075017365
  const reference = categorical([...Array<string>(50).fill('a'), ...Array<string>(50).fill('b')]);
  const current = categorical([
    ...Array<string>(40).fill('a'),
    ...Array<string>(50).fill('b'),
    ...Array<string>(10).fill('c'),
  ]);
  const result = sketchPsi(reference, current);
  assert.ok(result.ok);
  close(result.psi, 0.7123991075017365, 1e-13);
  assert.deepEqual(result.bins, ['a', 'b', 'other', 'missing']);
  assert.equal(sketchPsi(reference, numeric([1])).ok, false);
});

test('KS by hand: {1..5} against {3..8}: D = 0.5, p = Q(0.919027) = 0.367001', () => {
  // ECDFs at 1..8: ref .2 .4 .6 .8 1 1 1 1; cur 0 0 1/6 2/6 3/6 4/6 5/6 1 -> max gap 0.5 at 5.
  // n_e = 5*6/11 = 2.72727, lambda = (1.651446 + 0.12 + 0.11/1.651446) * 0.5 = 0.9190270
  const result = sketchKolmogorovSmirnov(numeric([1, 2, 3, 4, 5]), numeric([3, 4, 5, 6, 7, 8]));
  assert.ok(result.ok);
  assert.equal(result.statistic, 0.5);
  close(result.effectiveCount, 30 / 11, 1e-15);
  close(result.pValue, 0.3670013850902251, 1e-12, 'p');
  assert.equal(result.referenceCount, 5);
});

test('KS orders negative, zero and positive buckets: {-3..1} against {-1..3} gives D = 0.4', () => {
  // ref ECDF at -3..3: .2 .4 .6 .8 1 1 1; cur: 0 0 .2 .4 .6 .8 1 -> gaps .2 .4 .4 .4 .4 .2 0
  const result = sketchKolmogorovSmirnov(numeric([-3, -2, -1, 0, 1]), numeric([-1, 0, 1, 2, 3]));
  assert.ok(result.ok);
  close(result.statistic, 0.4, 1e-15);
  // n_e = 2.5, lambda = 0.7082836, Q = 0.6974049
  close(result.pValue, 0.6974048780205908, 1e-12, 'p');
  const same = sketchKolmogorovSmirnov(numeric([1, 2, 3]), numeric([3, 2, 1, null]));
  assert.ok(same.ok);
  assert.equal(same.statistic, 0);
  assert.equal(same.pValue, 1);
  assert.equal(sketchKolmogorovSmirnov(numeric([null]), numeric([1])).ok, false);
  assert.equal(sketchKolmogorovSmirnov(categorical(['a']), numeric([1])).ok, false);
});

test('Kolmogorov survival: literature values and the two series agree where they switch', () => {
  close(kolmogorovSurvival(1.0), 0.26999967167735456, 1e-13);
  close(kolmogorovSurvival(0.5), 0.9639452436648751, 1e-13);
  close(kolmogorovSurvival(1.36), 0.049485876755377876, 1e-12);
  close(kolmogorovSurvival(2.0), 0.0006709252557796953, 1e-12);
  assert.equal(kolmogorovSurvival(0), 1);
  close(kolmogorovSurvival(1.18 - 1e-12), kolmogorovSurvival(1.18), 1e-10);
});

test('KS of sketches: a fresh resample is not rejected, a shift of 0.2 sd is (n = 3000)', () => {
  const random = createRandom(5);
  const draw = (n: number, mu: number): number[] =>
    Array.from({ length: n }, () => normal(random, mu, 1));
  const reference = numeric(draw(3000, 0));
  const fresh = sketchKolmogorovSmirnov(reference, numeric(draw(3000, 0)));
  assert.ok(fresh.ok);
  assert.ok(fresh.pValue > 0.01, `fresh p ${fresh.pValue}`);
  const shifted = sketchKolmogorovSmirnov(reference, numeric(draw(3000, 0.2)));
  assert.ok(shifted.ok);
  assert.ok(shifted.pValue < 1e-6, `shifted p ${shifted.pValue}`);
  assert.ok(shifted.statistic > 0.05);
});

test('numeric PSI equals the traffic module sketch PSI (same deciles, same placement) plus an empty missing bin', () => {
  const random = createRandom(3);
  const reference = Array.from({ length: 3000 }, () => normal(random, 0, 3));
  const current = Array.from({ length: 1000 }, () => normal(random, 0.5, 3));
  const ours = sketchPsi(numeric(reference), numeric(current));
  const traffic = (values: number[]): HistogramSketch => {
    const sketch = new HistogramSketch(0.01);
    for (const value of values) sketch.add(value);
    return sketch;
  };
  const theirs = sketchStabilityIndex(traffic(reference), traffic(current));
  assert.ok(ours.ok && theirs.ok);
  assert.equal(ours.psi, theirs.psi);
  assert.deepEqual(ours.contributions.slice(0, -1), theirs.contributions);
  assert.equal(ours.contributions.at(-1), 0);
});

test('KS reads snapshots whose buckets are out of order (a hand-written file) the same way', () => {
  const a = numeric([-5, -1, 0, 2, 3, 40]);
  const b = numeric([-2, 0, 0, 1, 50, 60]);
  const shuffled: NumericSketch = {
    ...a,
    histogram: {
      ...a.histogram,
      positive: [...a.histogram.positive].reverse(),
      negative: [...a.histogram.negative].reverse(),
    },
  };
  const sorted = sketchKolmogorovSmirnov(a, b);
  const unsorted = sketchKolmogorovSmirnov(shuffled, b);
  assert.ok(sorted.ok && unsorted.ok);
  assert.equal(unsorted.statistic, sorted.statistic);
  // ECDFs at -5 -2 -1 0 1 2 3 40 50 60: a 1/6 1/6 2/6 3/6 3/6 4/6 5/6 1 1 1;
  // b 0 1/6 1/6 3/6 4/6 4/6 4/6 4/6 5/6 1 -> largest gap 2/6 at 40.
  close(sorted.statistic, 2 / 6, 1e-15);
});
