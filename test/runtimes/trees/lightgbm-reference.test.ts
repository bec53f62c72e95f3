// Real LightGBM models against LightGBM's own predictions (../shared/fixtures/lightgbm,
// beside the repository; see its README.md), at the tolerances the files' upstream used: 1e-7 for the multiclass
// model, 1e-6 for kddcup99 and poisson. Each test skips, saying why, when the folder is
// absent. Rows are read as doubles, as LightGBM's predict read them.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

import { loadLightgbmModel } from '../../../src/runtimes/trees/load-lightgbm-model.ts';
import type {
  PredictorOptions,
  TreePredictor,
} from '../../../src/runtimes/trees/tree-predictor.ts';
import {
  haveLightgbmFixtures,
  kernels,
  lightgbmFixtures,
  maxAbsDiff,
  noLightgbmFixtures,
  readTable,
} from './tree-test-helpers.ts';

function load(file: string, options: PredictorOptions = {}): TreePredictor {
  const loaded = loadLightgbmModel(readFileSync(`${lightgbmFixtures}${file}`, 'utf8'), options);
  assert.ok(loaded.ok, loaded.ok ? '' : loaded.reason);
  return loaded.predictor;
}

/** Predicts every row with each kernel and checks the flat outputs against `expected`. */
function check(
  model: string,
  rows: number[][],
  expected: number[][],
  outputMargin: boolean,
  tolerance: number,
): void {
  const x = new Float64Array(rows.flat());
  for (const kernel of kernels) {
    const p = load(model, { kernel });
    const got = p.predict64(x, rows.length, outputMargin);
    const error = maxAbsDiff(got, expected.flat());
    assert.ok(error <= tolerance, `${model} (${kernel} kernel): off by ${error} > ${tolerance}`);
  }
}

void test('multiclass (5 classes): raw scores and softmax probabilities within 1e-7', (t) => {
  if (!haveLightgbmFixtures) return t.skip(noLightgbmFixtures);
  const rows = readTable(`${lightgbmFixtures}multiclass_test.tsv`, 1); // column 0 is the label
  assert.equal(rows.length, 500);
  const raw = readTable(`${lightgbmFixtures}lgmulticlass_true_raw_predictions.txt`);
  const probabilities = readTable(`${lightgbmFixtures}lgmulticlass_true_predictions.txt`);
  check('lgmulticlass.model', rows, raw, true, 1e-7);
  check('lgmulticlass.model', rows, probabilities, false, 1e-7);
  assert.equal(load('lgmulticlass.model').numOutputs, 5);
});

void test('kddcup99 (13 classes, categorical splits): raw scores within 1e-6', (t) => {
  if (!haveLightgbmFixtures) return t.skip(noLightgbmFixtures);
  const rows = readTable(`${lightgbmFixtures}kddcup99_test.tsv`);
  const raw = readTable(`${lightgbmFixtures}lg_kddcup99_true_predictions.txt`);
  assert.equal(rows.length, raw.length);
  check('lg_kddcup99.model', rows, raw, true, 1e-6);
});

void test('poisson regression: exp of the raw score within 1e-6', (t) => {
  if (!haveLightgbmFixtures) return t.skip(noLightgbmFixtures);
  const rows = readTable(`${lightgbmFixtures}genlin_fmtp_poisson_Frequency_features.tsv`);
  const expected = readTable(
    `${lightgbmFixtures}genlin_fmtp_poisson_Frequency_true_predictions.txt`,
  );
  assert.equal(rows.length, 1000);
  check('genlin_fmtp_poisson_Frequency.model', rows, expected, false, 1e-6);
});

void test('random forest (average_output, saved by LightGBM < 2.2.3): the plain average', (t) => {
  if (!haveLightgbmFixtures) return t.skip(noLightgbmFixtures);
  // libsvm: label first, then 0-based index:value; an absent index is a zero in the
  // sparse row the predictions were made from (every iris row lists all four).
  const rows = readFileSync(`${lightgbmFixtures}iris_test.libsvm`, 'utf8')
    .trim()
    .split('\n')
    .map((line) => {
      const row = [0, 0, 0, 0];
      for (const pair of line.trim().split(/\s+/).slice(1)) {
        const [index = '', value = ''] = pair.split(':');
        row[Number(index)] = Number(value);
      }
      return row;
    });
  const expected = readTable(`${lightgbmFixtures}lg_rf_iris_true_predictions.txt`);
  // This model's leaves already hold probabilities (0.119 = sigmoid(-2), 0.881 =
  // sigmoid(2)), and the expected values are averages of them with no sigmoid on top.
  check('lg_rf_iris.model', rows, expected, false, 1e-7);
});

void test('breast cancer: the leaf every row reaches in each of the 39 trees (pred_leaf)', (t) => {
  if (!haveLightgbmFixtures) return t.skip(noLightgbmFixtures);
  const rows = readTable(`${lightgbmFixtures}lg_breast_cancer_data.txt`);
  const expected = readTable(`${lightgbmFixtures}lg_breast_cancer_data_pred_leaves.txt`);
  for (const kernel of kernels) {
    const p = load('lg_breast_cancer.txt', { kernel });
    assert.equal(p.numTrees, 39);
    const leaves = p.predictLeaf(new Float64Array(rows.flat()), rows.length);
    assert.deepEqual([...leaves], expected.flat(), kernel);
  }
});

void test('model_simple.txt: a categorical split and a default-left split, by hand', (t) => {
  if (!haveLightgbmFixtures) return t.skip(noLightgbmFixtures);
  // Both trees: X2 == 100 (bit 4 of cat_threshold word 3; NaN goes right) → leaf 0;
  // else X1 <= 340.5 → leaf 1, else leaf 2. Missing type None: NaN in X1 acts as 0.
  const tree0 = [0.56697267424823339, 0.3584987837673016, 0.41213915936587919];
  const tree1 = [0.12883103567558912, -0.063872842243335157, -0.016484332942214807];
  const raw = (leaf: number): number => (tree0[leaf] ?? 0) + (tree1[leaf] ?? 0);
  const cases: [number, number, number][] = [
    [0, 0, 1],
    [1000, 0, 2],
    [800, 0, 2],
    [800, 100, 0],
    [0, 100, 0],
    [1000, Number.NaN, 2],
    [Number.NaN, Number.NaN, 1],
    [340.5, 3, 1],
    [340.50000000000006, 100.9, 0], // int(100.9) = 100
  ];
  const x = new Float64Array(cases.flatMap(([a, b]) => [a, b]));
  for (const kernel of kernels) {
    const p = load('model_simple.txt', { kernel });
    const got = p.predict64(x, cases.length, true);
    cases.forEach(([a, b, leaf], i) => assert.equal(got[i], raw(leaf), `${kernel}: (${a}, ${b})`));
    const probabilities = p.predict64(x, cases.length);
    cases.forEach(([, , leaf], i) => {
      assert.ok(Math.abs((probabilities[i] ?? 0) - 1 / (1 + Math.exp(-raw(leaf)))) < 1e-15);
    });
  }
});

void test('single-tree fragments: one leaf, two leaves, three leaves with a category', (t) => {
  if (!haveLightgbmFixtures) return t.skip(noLightgbmFixtures);
  const header = (features: number): string =>
    `tree\nversion=v3\nnum_class=1\nnum_tree_per_iteration=1\nmax_feature_idx=${features - 1}\nobjective=regression\n\n`;
  const fragment = (file: string, features: number): TreePredictor => {
    const text = `${header(features)}${readFileSync(`${lightgbmFixtures}${file}`, 'utf8')}\n\nend of trees\n`;
    const loaded = loadLightgbmModel(text);
    assert.ok(loaded.ok, loaded.ok ? '' : loaded.reason);
    return loaded.predictor;
  };
  const predictOne = (p: TreePredictor, row: number[]): number =>
    p.predict64(new Float64Array(row), 1)[0] ?? Number.NaN;
  const one = fragment('tree_1leaf.txt', 1);
  for (const x of [0, 10, -10, Number.NaN]) assert.equal(predictOne(one, [x]), 0.123);
  const two = fragment('tree_2leaves.txt', 1); // x <= 5 → 0.43; NaN acts as 0
  assert.equal(predictOne(two, [0]), 0.43);
  assert.equal(predictOne(two, [5]), 0.43);
  assert.equal(predictOne(two, [5.1]), 0.59);
  assert.equal(predictOne(two, [Number.NaN]), 0.43);
  const three = fragment('tree_3leaves.txt', 2); // f1 == 100 → 0.54; else f0 <= 756 → 0.35
  assert.equal(predictOne(three, [0, 0]), 0.35);
  assert.equal(predictOne(three, [1000, 0]), 0.38);
  assert.equal(predictOne(three, [Number.NaN, 0]), 0.35);
  assert.equal(predictOne(three, [Number.NaN, 10]), 0.35);
  assert.equal(predictOne(three, [Number.NaN, 100]), 0.54);
});
