// The two kernels (branchless array walk, generated code) are interchangeable: on every
// fixture model and on random rows full of edge values (NaN, ±0, ±Infinity, tiny and huge
// numbers, thresholds themselves) they give bit-identical margins and the same leaves.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

import { loadLightgbmModel } from '../../../src/runtimes/trees/load-lightgbm-model.ts';
import { loadXgboostModel } from '../../../src/runtimes/trees/load-xgboost-model.ts';
import { nextUp } from '../../../src/runtimes/trees/tree-ensemble.ts';
import type {
  PredictorOptions,
  TreeLoadResult,
  TreePredictor,
} from '../../../src/runtimes/trees/tree-predictor.ts';
import {
  haveLightgbmFixtures,
  lightgbmFixtures,
  noLightgbmFixtures,
  treeFixtures,
} from './tree-test-helpers.ts';

const xgboostModels = [
  'xgb-binary-logistic.json',
  'xgb-multi-softprob.json',
  'xgb-reg-squarederror.json',
  'xgb-dart.json',
  'xgb-random-forest.json',
  'xgb-categorical.json',
  'bench-fraud.ubj',
];
const lightgbmModels = [
  'lgmulticlass.model',
  'lg_kddcup99.model',
  'genlin_fmtp_poisson_Frequency.model',
  'lg_rf_iris.model',
  'lg_breast_cancer.txt',
  'model_simple.txt',
];

function loaders(): [string, (o: PredictorOptions) => TreeLoadResult][] {
  const out: [string, (o: PredictorOptions) => TreeLoadResult][] = xgboostModels.map((file) => [
    file,
    (o) => loadXgboostModel(readFileSync(`${treeFixtures}${file}`), o),
  ]);
  // Absent reference files are reported as skipped tests below, never dropped silently.
  if (haveLightgbmFixtures) {
    for (const file of lightgbmModels) {
      out.push([
        file,
        (o) => loadLightgbmModel(readFileSync(`${lightgbmFixtures}${file}`, 'utf8'), o),
      ]);
    }
  }
  return out;
}

if (!haveLightgbmFixtures) {
  for (const file of lightgbmModels) {
    void test(`${file}: kernels agree bit for bit`, { skip: noLightgbmFixtures }, () => undefined);
  }
}

/** Seeded rows mixing ordinary values, the model's own thresholds and edge values. */
function edgeRows(p: TreePredictor, numRows: number, seed: number): Float64Array {
  let state = seed;
  const next = (): number => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return state / 2147483648;
  };
  const e = p.model.ensemble;
  const thresholds = [...e.splits.filter((_, i) => i % 2 === 1)].map((t, i) =>
    e.splits[2 * i] === -1 ? -t : t,
  );
  const specials = [
    Number.NaN,
    0,
    -0,
    1e-36,
    -1e-36,
    1e-30,
    Infinity,
    -Infinity,
    1e300,
    -1e300,
    3,
    100,
    -0.5,
  ];
  const rows = new Float64Array(numRows * p.numFeatures);
  for (let i = 0; i < rows.length; i += 1) {
    const u = next();
    if (u < 0.15) rows[i] = specials[Math.floor(next() * specials.length)] ?? 0;
    else if (u < 0.5) rows[i] = thresholds[Math.floor(next() * thresholds.length)] ?? 0;
    else rows[i] = (next() - 0.5) * 20;
  }
  return rows;
}

for (const [name, load] of loaders()) {
  void test(`${name}: the interpreter and generated code agree bit for bit`, () => {
    const interpreter = load({ kernel: 'interpreter' });
    const compiled = load({ kernel: 'compiled' });
    assert.ok(interpreter.ok && compiled.ok);
    assert.equal(interpreter.predictor.kernelKind, 'interpreter');
    assert.equal(compiled.predictor.kernelKind, 'compiled');
    const rows = edgeRows(interpreter.predictor, 1000, 7);
    const a = interpreter.predictor.predict64(rows, 1000, true);
    const b = compiled.predictor.predict64(rows, 1000, true);
    assert.deepEqual(b, a);
    assert.deepEqual(
      compiled.predictor.predictLeaf(rows, 1000),
      interpreter.predictor.predictLeaf(rows, 1000),
    );
    // Odd row counts exercise the lanes' remainder loop and partial blocks.
    for (const count of [1, 7, 9, 129]) {
      const slice = rows.subarray(0, count * interpreter.predictor.numFeatures);
      assert.deepEqual(
        interpreter.predictor.predict64(slice, count, true),
        a.subarray(0, count * interpreter.predictor.numGroups),
      );
    }
  });
}

for (const [name, load] of loaders()) {
  void test(`${name}: the array walk in WebAssembly agrees with it in JavaScript bit for bit`, () => {
    const interpreter = load({ kernel: 'interpreter' });
    const wasm = load({ kernel: 'wasm' });
    assert.ok(interpreter.ok && wasm.ok);
    // Categorical and zero-as-missing splits are the JavaScript walk's alone.
    const numeric = wasm.predictor.model.ensemble.kinds === null;
    assert.equal(wasm.predictor.kernelKind, numeric ? 'wasm' : 'interpreter');
    // More than one chunk of 1,024 rows, and odd counts for the lanes' remainder loop.
    for (const count of [1, 7, 9, 129, 2500]) {
      const rows = edgeRows(interpreter.predictor, count, 11);
      assert.deepEqual(
        wasm.predictor.predict64(rows, count, true),
        interpreter.predictor.predict64(rows, count, true),
      );
    }
  });
}

void test('auto picks the array walk for balanced numeric trees, code for lopsided or categorical', (t) => {
  const bench = loadXgboostModel(readFileSync(`${treeFixtures}bench-fraud.ubj`));
  assert.ok(bench.ok);
  assert.equal(bench.predictor.kernelKind, 'wasm');
  const categorical = loadXgboostModel(readFileSync(`${treeFixtures}xgb-categorical.json`));
  assert.ok(categorical.ok);
  assert.equal(categorical.predictor.kernelKind, 'compiled');
  if (!haveLightgbmFixtures)
    return t.skip('LightGBM reference files absent: lopsided-tree case skipped');
  const deep = loadLightgbmModel(readFileSync(`${lightgbmFixtures}lgmulticlass.model`, 'utf8'));
  assert.ok(deep.ok);
  assert.equal(deep.predictor.kernelKind, 'compiled');
});

void test('nextUp gives the next double, so x <= t is exactly x < nextUp(t)', () => {
  const bits = (x: number): bigint => {
    const view = new DataView(new ArrayBuffer(8));
    view.setFloat64(0, x);
    return view.getBigInt64(0);
  };
  for (const t of [0.5, 1e-300, 5e-324, 340.50000000000006, 1e308]) {
    assert.equal(bits(nextUp(t)) - bits(t), 1n, String(t)); // one step up the bit pattern
    assert.equal(bits(-t) - bits(nextUp(-t)), 1n, String(-t)); // negative: one step toward 0
  }
  assert.equal(nextUp(0), Number.MIN_VALUE);
  assert.equal(nextUp(-0), Number.MIN_VALUE);
  assert.equal(nextUp(-Number.MIN_VALUE), -0);
  assert.equal(nextUp(Number.MAX_VALUE), Infinity);
  assert.equal(nextUp(Infinity), Infinity);
  assert.ok(Number.isNaN(nextUp(Number.NaN)));
});
