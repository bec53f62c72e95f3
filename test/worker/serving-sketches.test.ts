import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Tensor } from '../../src/core/tensor.ts';
import type { DataProfile } from '../../src/observability/profile/data-profile.ts';
import { ServingSketches } from '../../src/worker/drift/serving-sketches.ts';
import { mergeDataProfiles } from '../../src/observability/profile/merge-feature-sketches.ts';
import { maxSketchSlices } from '../../src/protocol/drift/sketch-report.ts';
import { otherSlice } from '../../src/protocol/traffic/traffic-report.ts';

const identity = { replicaId: 'r1', endpoint: 'fraud', model: 'fraud', version: 3 };

function matrix(rows: readonly (readonly number[])[]): Tensor {
  return {
    name: 'input',
    datatype: 'FP32',
    shape: [rows.length, rows[0]!.length],
    data: new Float32Array(rows.flat()),
  };
}

function scores(values: readonly number[]): Tensor {
  return {
    name: 'predict',
    datatype: 'FP32',
    shape: [values.length],
    data: new Float32Array(values),
  };
}

test('features are named by the model feature names, outputs by output name; take starts afresh', () => {
  let now = 1_000;
  const sketches = new ServingSketches(
    identity,
    () => ({ featureNames: ['age', 'income'] }),
    () => now,
  );
  sketches.record(
    null,
    [
      matrix([
        [30, 1000],
        [40, Number.NaN],
      ]),
    ],
    [scores([0.25, 0.5])],
  );
  now = 2_000;
  const report = sketches.take();
  assert.equal(report.windowStart, new Date(1_000).toISOString());
  assert.equal(report.windowEnd, new Date(2_000).toISOString());
  assert.equal(report.endpoint, 'fraud');
  assert.equal(report.version, 3);
  const overall = report.overall!;
  assert.equal(overall.rows, 2);
  assert.deepEqual(Object.keys(overall.features), ['age', 'income']);
  const income = overall.features.income!;
  assert.equal(income.kind, 'numeric');
  assert.equal(income.kind === 'numeric' ? income.missing : -1, 1);
  const age = overall.features.age!;
  assert.equal(age.kind === 'numeric' ? age.moments.mean : -1, 35);
  assert.deepEqual(Object.keys(overall.outputs), ['predict']);
  assert.deepEqual(report.slices, {});
  const next = sketches.take();
  assert.equal(next.overall, null);
  assert.equal(next.windowStart, new Date(2_000).toISOString());
});

test('without feature names a matrix column is NAME[j]; declared columns keep their names; BYTES is categorical', () => {
  const sketches = new ServingSketches(identity, () => ({ featureNames: null }));
  const country: Tensor = { name: 'country', datatype: 'BYTES', shape: [2], data: ['FR', 'DE'] };
  const amount: Tensor = {
    name: 'amount',
    datatype: 'FP64',
    shape: [2, 1],
    data: new Float64Array([1, 2]),
  };
  sketches.record(
    'FR',
    [
      matrix([
        [1, 2, 3],
        [4, 5, 6],
      ]),
      country,
      amount,
    ],
    [scores([0, 1])],
  );
  const report = sketches.take();
  assert.deepEqual(Object.keys(report.overall!.features).sort(), [
    'amount',
    'country',
    'input[0]',
    'input[1]',
    'input[2]',
  ]);
  const sketch = report.overall!.features.country!;
  assert.equal(sketch.kind, 'categorical');
  assert.deepEqual(sketch.kind === 'categorical' ? sketch.categories : null, { DE: 1, FR: 1 });
  assert.equal(report.slices.FR!.rows, 2);
});

test('slices are capped: later values share the other slice; parts merge into the whole', () => {
  const sketches = new ServingSketches(identity, () => ({ featureNames: null }));
  const whole = new ServingSketches(identity, () => ({ featureNames: null }));
  for (let i = 0; i < maxSketchSlices + 5; i++) {
    sketches.record(`s${i}`, [matrix([[i, i * 2]])], [scores([i / 100])]);
    whole.record(null, [matrix([[i, i * 2]])], [scores([i / 100])]);
  }
  const report = sketches.take();
  assert.equal(Object.keys(report.slices).length, maxSketchSlices + 1);
  assert.equal(report.slices[otherSlice]!.rows, 5);
  // The slices partition the overall rows; merged back they are the overall sketch.
  let merged: DataProfile | null = null;
  for (const profile of Object.values(report.slices)) {
    if (merged === null) merged = profile;
    else {
      const result = mergeDataProfiles(merged, profile);
      assert.ok(result.ok);
      merged = result.profile;
    }
  }
  assert.ok(merged !== null);
  const reference = whole.take().overall!;
  const histogram = (p: typeof reference): unknown =>
    Object.fromEntries(
      Object.entries(p.features).map(([n, s]) => [n, s.kind === 'numeric' ? s.histogram : s]),
    );
  assert.deepEqual(histogram(merged), histogram(reference));
  assert.equal(merged.rows, reference.rows);
});
