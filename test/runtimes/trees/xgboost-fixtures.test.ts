// Every model fixtures/trees/make_xgboost_fixtures.py wrote, against XGBoost's own
// predict(DMatrix) and predict(output_margin=True), row by row (NaN rows included), with
// each kernel. Tolerance: 1e-5 absolute. (XGBoost works in float32; in practice margins
// match bit for bit and probabilities within one float32 ulp.)

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

import { loadXgboostModel } from '../../../src/runtimes/trees/load-xgboost-model.ts';
import {
  float32Rows,
  kernels,
  maxAbsDiff,
  readJson,
  registryFixtures,
  treeFixtures,
  type XgboostExpected,
} from './tree-test-helpers.ts';

const tolerance = 1e-5;

const fixtures: readonly [name: string, extensions: readonly string[]][] = [
  ['xgb-binary-logistic', ['json', 'ubj']],
  ['xgb-binary-logitraw', ['json']],
  ['xgb-binary-hinge', ['json']],
  ['xgb-multi-softprob', ['json']],
  ['xgb-multi-softmax', ['json']],
  ['xgb-reg-squarederror', ['json']],
  ['xgb-reg-logistic', ['json']],
  ['xgb-count-poisson', ['json']],
  ['xgb-reg-tweedie', ['json']],
  ['xgb-reg-gamma', ['json']],
  ['xgb-rank-pairwise', ['json']],
  ['xgb-dart', ['json']],
  ['xgb-random-forest', ['json']],
  ['xgb-categorical', ['json']],
];

for (const [name, extensions] of fixtures) {
  for (const extension of extensions) {
    void test(`${name}.${extension}: predictions and margins equal XGBoost's for every row`, () => {
      const expected = readJson<XgboostExpected>(`${treeFixtures}${name}.expected.json`);
      const rows = float32Rows(expected.rows);
      const numRows = expected.rows.length;
      assert.ok(
        expected.rows.some((row) => row.every((v) => v === null)),
        'an all-NaN row',
      );
      for (const kernel of kernels) {
        const loaded = loadXgboostModel(readFileSync(`${treeFixtures}${name}.${extension}`), {
          kernel,
        });
        assert.ok(loaded.ok, loaded.ok ? '' : loaded.reason);
        const p = loaded.predictor;
        assert.equal(p.objective, expected.objective);
        assert.equal(p.numFeatures, expected.numFeature);
        assert.equal(p.numGroups, Math.max(1, expected.numClass));
        const predictions = p.predict(rows, numRows);
        const margins = p.predict(rows, numRows, true);
        const wantPredictions = expected.predictions.flat();
        const wantMargins = expected.margins.flat();
        assert.equal(predictions.length, wantPredictions.length, `${kernel}: prediction count`);
        assert.equal(margins.length, wantMargins.length, `${kernel}: margin count`);
        const predictionError = maxAbsDiff(predictions, wantPredictions);
        const marginError = maxAbsDiff(margins, wantMargins);
        assert.ok(predictionError <= tolerance, `${kernel}: predictions off by ${predictionError}`);
        assert.ok(marginError <= tolerance, `${kernel}: margins off by ${marginError}`);
        // predict64 gives the same float32 values, widened.
        assert.deepEqual(Float32Array.from(p.predict64(rows, numRows)), predictions);
      }
    });
  }
}

void test('feature names are kept for metadata', () => {
  const loaded = loadXgboostModel(readFileSync(`${treeFixtures}xgb-binary-logistic.json`));
  assert.ok(loaded.ok);
  assert.deepEqual(loaded.predictor.featureNames, ['f0', 'f1', 'f2', 'f3', 'f4', 'f5', 'f6', 'f7']);
  const unnamed = loadXgboostModel(readFileSync(`${treeFixtures}xgb-count-poisson.json`));
  assert.ok(unnamed.ok);
  assert.equal(unnamed.predictor.featureNames, null);
});

void test('the registry fixtures (xgb-binary.json and .ubj) give expected.json probabilities', () => {
  const expected = readJson<{
    xgboost: {
      inputs: (number | null)[][];
      probabilities: number[];
      featureNames: string[];
      numTrees: number;
    };
  }>(`${registryFixtures}expected.json`).xgboost;
  for (const extension of ['json', 'ubj']) {
    const loaded = loadXgboostModel(readFileSync(`${registryFixtures}xgb-binary.${extension}`));
    assert.ok(loaded.ok, loaded.ok ? '' : loaded.reason);
    assert.equal(loaded.predictor.numTrees, expected.numTrees);
    assert.deepEqual(loaded.predictor.featureNames, expected.featureNames);
    const rows = float32Rows(expected.inputs);
    const got = loaded.predictor.predict(rows, expected.inputs.length);
    assert.ok(
      maxAbsDiff(got, expected.probabilities) <= tolerance,
      `${extension}: ${[...got].join(', ')}`,
    );
  }
});

void test('the benchmark model (200 trees, UBJSON) agrees with XGBoost on its probe rows', () => {
  const probe = readJson<{ rows: (number | null)[][]; predictions: number[] }>(
    `${treeFixtures}bench-fraud.rows.json`,
  );
  for (const kernel of kernels) {
    const loaded = loadXgboostModel(readFileSync(`${treeFixtures}bench-fraud.ubj`), { kernel });
    assert.ok(loaded.ok);
    assert.equal(loaded.predictor.numTrees, 200);
    const got = loaded.predictor.predict(float32Rows(probe.rows), probe.rows.length);
    assert.ok(maxAbsDiff(got, probe.predictions) <= tolerance, kernel);
  }
});

void test('predictLeaf reports XGBoost node ids, the same for every kernel', () => {
  const expected = readJson<XgboostExpected>(`${treeFixtures}xgb-binary-logistic.expected.json`);
  const rows = float32Rows(expected.rows);
  const leaves = kernels.map((kernel) => {
    const loaded = loadXgboostModel(readFileSync(`${treeFixtures}xgb-binary-logistic.json`), {
      kernel,
    });
    assert.ok(loaded.ok);
    return loaded.predictor.predictLeaf(rows, expected.rows.length);
  });
  assert.equal(leaves[0]?.length, expected.rows.length * 20);
  assert.deepEqual(leaves[1], leaves[0]);
  assert.deepEqual(leaves[2], leaves[0]);
  // Every id is a leaf of its tree: left_children == -1 there.
  const document = readJson<{
    learner: { gradient_booster: { model: { trees: { left_children: number[] }[] } } };
  }>(`${treeFixtures}xgb-binary-logistic.json`);
  const trees = document.learner.gradient_booster.model.trees;
  leaves[0]?.forEach((id, i) => assert.equal(trees[i % 20]?.left_children[id], -1));
});

void test('base_score as XGBoost 2.x/3.x write it: a list, one value or one per class', () => {
  const text = readFileSync(`${treeFixtures}xgb-multi-softprob.json`, 'utf8');
  const expected = readJson<XgboostExpected>(`${treeFixtures}xgb-multi-softprob.expected.json`);
  const rows = float32Rows(expected.rows);
  const numRows = expected.rows.length;
  const withBase = (base: string): Float32Array => {
    const edited = text.replace('"base_score":"5E-1"', `"base_score":"${base}"`);
    assert.notEqual(edited, text);
    const loaded = loadXgboostModel(Buffer.from(edited));
    assert.ok(loaded.ok, loaded.ok ? '' : loaded.reason);
    return loaded.predictor.predict(rows, numRows, true);
  };
  assert.ok(maxAbsDiff(withBase('[5E-1]'), expected.margins.flat()) === 0);
  const perClass = withBase('[1.5E0,5E-1,5E-1,-5E-1]');
  const shift = [1, 0, 0, -1];
  expected.margins.flat().forEach((m, i) => {
    // float32 sums starting elsewhere round differently: equal within the tolerance.
    assert.ok(Math.abs((perClass[i] ?? 0) - (m + (shift[i % 4] ?? 0))) <= tolerance);
  });
  const wrong = loadXgboostModel(
    Buffer.from(text.replace('"base_score":"5E-1"', '"base_score":"[1,2]"')),
  );
  assert.match(wrong.ok ? '' : wrong.reason, /base_score lists 2 values for 4 output groups/);
});
