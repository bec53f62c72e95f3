// PSI over fixed bins against hand-computed cases, bins cut at the baseline's quantiles, and
// the mergeable histogram sketch of outputs: its quantiles within the stated relative
// accuracy, merge of parts equal to the sketch of the whole, and PSI of sketches close to
// the PSI of the raw values (seeded data throughout).

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { createRandom } from '../../src/core/random.ts';
import {
  HistogramSketch,
  type HistogramSketchSnapshot,
} from '../../src/traffic/histogram-sketch.ts';
import { populationStabilityIndex } from '../../src/traffic/population-stability-index.ts';
import { countIntoBins, quantileBinEdges } from '../../src/traffic/quantile-bin-edges.ts';
import { sketchStabilityIndex } from '../../src/traffic/sketch-stability-index.ts';
import { assertClose } from './statistics-reference.ts';

test('PSI of 25/25/25/25 against 10/20/30/40, worked by hand: 0.2282174', () => {
  // (0.10 - 0.25) ln(0.10/0.25) = -0.15 * -0.9162907 = 0.1374436
  // (0.20 - 0.25) ln(0.20/0.25) = -0.05 * -0.2231436 = 0.0111572
  // (0.30 - 0.25) ln(0.30/0.25) =  0.05 *  0.1823216 = 0.0091161
  // (0.40 - 0.25) ln(0.40/0.25) =  0.15 *  0.4700036 = 0.0705005
  // sum = 0.2282174 (to 16 digits 0.22821740957339182)
  const result = populationStabilityIndex([25, 25, 25, 25], [100, 200, 300, 400]);
  assert.ok(result.ok);
  assertClose(result.psi, 0.22821740957339182, 1e-14);
  assertClose(result.contributions[0] ?? Number.NaN, 0.15 * Math.log(2.5), 1e-14);
  assert.deepEqual(result.baselineShares, [0.25, 0.25, 0.25, 0.25]);
});

test('PSI replaces an empty bin share by epsilon = 1e-4: 50/50/0 against 40/50/10 gives 0.7123991', () => {
  // -0.1 ln(0.8) + 0 + (0.1 - 0.0001) ln(0.1 / 0.0001) = 0.0223144 + 0.0999 * 6.9077553
  const result = populationStabilityIndex([50, 50, 0], [40, 50, 10]);
  assert.ok(result.ok);
  assertClose(result.psi, 0.7123991075017365, 1e-13);
  const identical = populationStabilityIndex([3, 0, 7], [30, 0, 70]);
  assert.ok(identical.ok);
  assert.equal(identical.psi, 0);
});

test('PSI: bad input comes back as a reason', () => {
  const reasons = [
    populationStabilityIndex([1, 2, 3], [1, 2]),
    populationStabilityIndex([1], [1]),
    populationStabilityIndex([0, 0], [1, 2]),
    populationStabilityIndex([1, 2], [0, 0]),
    populationStabilityIndex([1, -2], [1, 2]),
    populationStabilityIndex([1, Number.NaN], [1, 2]),
    populationStabilityIndex([1, 2], [1, 2], 0),
  ].map((result) => (result.ok ? 'ok' : result.reason));
  assert.deepEqual(reasons, [
    'bins-mismatch',
    'invalid-parameter',
    'empty-group',
    'empty-group',
    'count-out-of-range',
    'not-finite',
    'invalid-parameter',
  ]);
});

test('bins from the baseline quantiles: 1..100 in quartiles cut at 25.75, 50.5, 75.25 (type 7)', () => {
  const baseline = Array.from({ length: 100 }, (_, i) => i + 1);
  const bins = quantileBinEdges(baseline, 4);
  assert.ok(bins.ok);
  assert.deepEqual(bins.edges, [25.75, 50.5, 75.25]);
  assert.deepEqual(countIntoBins(bins.edges, baseline), [25, 25, 25, 25]);
  assert.deepEqual(countIntoBins(bins.edges, [-5, 25.75, 25.76, 1000]), [2, 1, 0, 1]);
  // Ties collapse duplicate cuts: fewer bins, never empty-by-construction ones.
  const tied = quantileBinEdges([0, 0, 0, 0, 0, 0, 0, 0, 1, 2], 10);
  assert.ok(tied.ok);
  assert.equal(tied.edges.length, 3);
  [0, 0.2, 1.1].forEach((edge, i) => assertClose(tied.edges[i] ?? Number.NaN, edge, 1e-14));
  assert.equal(tied.edges[0], 0);
  const reasons = [
    quantileBinEdges([], 10),
    quantileBinEdges([1, 2], 1),
    quantileBinEdges([1, Infinity]),
  ].map((result) => (result.ok ? 'ok' : result.reason));
  assert.deepEqual(reasons, ['empty-group', 'invalid-parameter', 'not-finite']);
});

/** Seeded log-normal-ish outputs around `centre`, some negative, some exactly zero. */
function outputs(seed: number, length: number, centre: number): number[] {
  const random = createRandom(seed);
  return Array.from({ length }, (_, i) => {
    if (i % 97 === 0) return 0;
    const magnitude = centre * Math.exp(random.next() - 0.5);
    return i % 13 === 0 ? -magnitude : magnitude;
  });
}

test('histogram sketch quantiles are within the relative accuracy (1%) of the exact order statistic', () => {
  const values = outputs(7, 10_000, 50);
  const sketch = new HistogramSketch(0.01);
  for (const value of values) assert.equal(sketch.add(value), true);
  assert.equal(sketch.add(Number.NaN), false);
  assert.equal(sketch.count, values.length);
  const sorted = [...values].sort((a, b) => a - b);
  for (const q of [0, 0.01, 0.05, 0.25, 0.5, 0.9, 0.99, 1]) {
    const exact = sorted[Math.floor(q * (sorted.length - 1))] ?? Number.NaN;
    const estimate = sketch.quantile(q) ?? Number.NaN;
    assert.ok(
      Math.abs(estimate - exact) <= 0.01 * Math.abs(exact) + 1e-12,
      `q = ${q}: ${estimate} vs ${exact}`,
    );
  }
  assert.equal(new HistogramSketch().quantile(0.5), null);
});

test('histogram sketches merge exactly: the merged parts equal the sketch of the whole', () => {
  const values = outputs(11, 5_000, 3);
  const whole = new HistogramSketch(0.02);
  for (const value of values) whole.add(value);
  const merged = new HistogramSketch(0.02);
  for (const [start, end] of [
    [0, 1],
    [1, 1700],
    [1700, 1700],
    [1700, 5000],
  ] as const) {
    const part = new HistogramSketch(0.02);
    for (const value of values.slice(start, end)) part.add(value);
    // Parts travel as JSON snapshots.
    const restored = HistogramSketch.fromSnapshot(
      JSON.parse(JSON.stringify(part.snapshot())) as HistogramSketchSnapshot,
    );
    assert.ok(restored.ok);
    assert.ok(merged.merge(restored.sketch).ok);
  }
  assert.deepEqual(merged.snapshot(), whole.snapshot());
  assert.equal(merged.count, whole.count);
  const mismatch = merged.merge(new HistogramSketch(0.01));
  assert.equal(mismatch.ok ? null : mismatch.reason, 'bins-mismatch');
  const broken = HistogramSketch.fromSnapshot({
    relativeAccuracy: 0.02,
    zeroCount: 0,
    positive: [[1, -4]],
    negative: [],
  });
  assert.equal(broken.ok ? null : broken.reason, 'count-out-of-range');
});

test('PSI of sketches tracks the PSI of the raw values, and tells a shifted output distribution from the same one', () => {
  const baselineValues = outputs(21, 20_000, 10);
  const sameValues = outputs(22, 20_000, 10);
  const shiftedValues = outputs(23, 20_000, 12);
  const sketchOf = (values: readonly number[]): HistogramSketch => {
    const sketch = new HistogramSketch(0.005);
    for (const value of values) sketch.add(value);
    return sketch;
  };
  const exactPsi = (current: readonly number[]): number => {
    const bins = quantileBinEdges(baselineValues, 10);
    assert.ok(bins.ok);
    const result = populationStabilityIndex(
      countIntoBins(bins.edges, baselineValues),
      countIntoBins(bins.edges, current),
    );
    assert.ok(result.ok);
    return result.psi;
  };
  const same = sketchStabilityIndex(sketchOf(baselineValues), sketchOf(sameValues));
  const shifted = sketchStabilityIndex(sketchOf(baselineValues), sketchOf(shiftedValues));
  assert.ok(same.ok && shifted.ok);
  assert.ok(same.psi < 0.01, `same distribution: PSI ${same.psi}`);
  assert.ok(shifted.psi > 0.25, `shifted by 20%: PSI ${shifted.psi}`);
  // Tolerance: a bucket within 0.5% of a cut may land in the next bin.
  assert.ok(
    Math.abs(same.psi - exactPsi(sameValues)) < 0.005,
    `${same.psi} vs ${exactPsi(sameValues)}`,
  );
  assert.ok(Math.abs(shifted.psi - exactPsi(shiftedValues)) < 0.05 * exactPsi(shiftedValues));
  const empty = sketchStabilityIndex(new HistogramSketch(0.005), sketchOf(sameValues));
  assert.equal(empty.ok ? null : empty.reason, 'empty-group');
  const mismatch = sketchStabilityIndex(new HistogramSketch(0.01), sketchOf(sameValues));
  assert.equal(mismatch.ok ? null : mismatch.reason, 'bins-mismatch');
});
