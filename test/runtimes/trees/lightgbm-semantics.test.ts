// LightGBM's split rules, objectives and forest averaging on hand-written models, where the
// right answer can be read off the model: NumericalDecision's three missing types,
// CategoricalDecision's bitsets, each objective's ConvertOutput, and average_output.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { loadLightgbmModel } from '../../../src/runtimes/trees/load-lightgbm-model.ts';
import type { TreePredictor } from '../../../src/runtimes/trees/tree-predictor.ts';
import { kernels, lightgbmModel } from './tree-test-helpers.ts';

/** One split on feature 0: left leaf -1, right leaf 1. */
function stump(decisionType: number, threshold: number): string[] {
  return [
    'num_leaves=2',
    'num_cat=0',
    'split_feature=0',
    `threshold=${threshold}`,
    `decision_type=${decisionType}`,
    'left_child=-1',
    'right_child=-2',
    'leaf_value=-1 1',
    'shrinkage=1',
  ];
}

function constant(value: number): string[] {
  return ['num_leaves=1', 'num_cat=0', `leaf_value=${value}`, 'shrinkage=1'];
}

function loadAll(text: string): TreePredictor[] {
  return kernels.map((kernel) => {
    const loaded = loadLightgbmModel(text, { kernel });
    assert.ok(loaded.ok, loaded.ok ? '' : loaded.reason);
    return loaded.predictor;
  });
}

/** Raw score of each one-feature row, with every kernel (they must agree). */
function rawScores(text: string, xs: readonly number[]): number[] {
  const results = loadAll(text).map((p) => [
    ...p.predict64(Float64Array.from(xs), xs.length, true),
  ]);
  for (const other of results.slice(1)) assert.deepEqual(other, results[0]);
  return results[0] ?? [];
}

const z = Math.fround(1e-35); // LightGBM's kZeroThreshold

void test('numeric splits: x <= threshold goes left, in double precision', () => {
  const text = lightgbmModel({ numFeatures: 1, trees: [stump(2, 0.30000000000000004)] });
  const xs = [0.1, 0.30000000000000004, 0.3000000000000001, 0.3, -Infinity, Infinity];
  assert.deepEqual(rawScores(text, xs), [-1, -1, 1, -1, -1, 1]);
});

void test('missing type None: NaN counts as 0.0 whatever the default direction', () => {
  for (const decisionType of [0, 2]) {
    const above = lightgbmModel({ numFeatures: 1, trees: [stump(decisionType, 0.5)] });
    assert.deepEqual(rawScores(above, [Number.NaN, 0, 0.7]), [-1, -1, 1]);
    const below = lightgbmModel({ numFeatures: 1, trees: [stump(decisionType, -0.5)] });
    assert.deepEqual(rawScores(below, [Number.NaN, 0, -0.7]), [1, 1, -1]);
  }
});

void test('missing type NaN: NaN takes the default direction, zero is an ordinary value', () => {
  const right = lightgbmModel({ numFeatures: 1, trees: [stump(8, 0.5)] });
  assert.deepEqual(rawScores(right, [Number.NaN, 0, 0.7]), [1, -1, 1]);
  const left = lightgbmModel({ numFeatures: 1, trees: [stump(10, -0.5)] });
  assert.deepEqual(rawScores(left, [Number.NaN, 0, -0.7]), [-1, 1, -1]);
});

void test('missing type Zero: |x| <= kZeroThreshold and NaN take the default direction', () => {
  const xs = [0, -0, z, -z, z * 2, Number.NaN, 0.7, -0.7];
  const right = lightgbmModel({ numFeatures: 1, trees: [stump(4, 0.5)] });
  assert.deepEqual(rawScores(right, xs), [1, 1, 1, 1, -1, 1, 1, -1]);
  const left = lightgbmModel({ numFeatures: 1, trees: [stump(6, -0.5)] });
  assert.deepEqual(rawScores(left, xs), [-1, -1, -1, -1, 1, -1, 1, -1]);
});

void test('categorical splits: int(x) in the bitset goes left; NaN and negatives go right', () => {
  // Categories {0, 3, 33}: word 0 has bits 0 and 3 (= 9), word 1 has bit 1 (= 2).
  const tree = [
    'num_leaves=2',
    'num_cat=1',
    'split_feature=0',
    'threshold=0',
    'decision_type=1',
    'left_child=-1',
    'right_child=-2',
    'leaf_value=-1 1',
    'cat_boundaries=0 2',
    'cat_threshold=9 2',
  ];
  for (const decisionType of [1, 5, 9]) {
    const text = lightgbmModel({
      numFeatures: 1,
      trees: [
        tree.map((line) =>
          line.startsWith('decision_type') ? `decision_type=${decisionType}` : line,
        ),
      ],
    });
    const xs = [0, 3, 33, 3.9, -0.5, 1, 2, 32, 64, 1e6, -1, -3, Number.NaN, 2 ** 31, 2 ** 32 + 3];
    // -0.5 truncates to category 0 (static_cast<int>); 2^32 + 3 is out of int range: right.
    assert.deepEqual(rawScores(text, xs), [-1, -1, -1, -1, -1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]);
  }
});

void test('objectives: each ConvertOutput, and raw scores untouched', () => {
  const v = 0.75;
  const cases: [objective: string | undefined, expected: number][] = [
    ['binary sigmoid:1', 1 / (1 + Math.exp(-v))],
    ['binary sigmoid:2.5', 1 / (1 + Math.exp(-2.5 * v))],
    ['regression', v],
    ['regression sqrt', v * v],
    ['regression_l1', v],
    ['huber', v],
    ['fair', v],
    ['quantile', v],
    ['mape', v],
    ['poisson', Math.exp(v)],
    ['gamma', Math.exp(v)],
    ['tweedie', Math.exp(v)],
    ['cross_entropy', 1 / (1 + Math.exp(-v))],
    ['cross_entropy_lambda', Math.log1p(Math.exp(v))],
    ['lambdarank', v],
    ['rank_xendcg', v],
    [undefined, v], // custom objective: no objective= line
  ];
  for (const [objective, expected] of cases) {
    const text = lightgbmModel({
      numFeatures: 1,
      trees: [constant(v)],
      ...(objective === undefined ? {} : { objective }),
    });
    for (const p of loadAll(text)) {
      assert.equal(p.predict64(new Float64Array([0]), 1)[0], expected, String(objective));
      assert.equal(p.predict64(new Float64Array([0]), 1, true)[0], v, String(objective));
    }
  }
  const negative = lightgbmModel({
    numFeatures: 1,
    objective: 'regression sqrt',
    trees: [constant(-v)],
  });
  assert.equal(loadAll(negative)[0]?.predict64(new Float64Array([0]), 1)[0], -v * v);
});

void test('multiclass softmax and one-vs-all sigmoids over num_tree_per_iteration columns', () => {
  const trees = [
    constant(0.5),
    constant(-1),
    constant(2),
    constant(0.25),
    constant(0),
    constant(-0.5),
  ];
  const softmax = lightgbmModel({
    numFeatures: 1,
    numClass: 3,
    objective: 'multiclass num_class:3',
    trees,
  });
  const raw = [0.75, -1, 1.5];
  const max = Math.max(...raw);
  const sum = raw.reduce((s, r) => s + Math.exp(r - max), 0);
  for (const p of loadAll(softmax)) {
    assert.equal(p.numOutputs, 3);
    assert.deepEqual([...p.predict64(new Float64Array([0]), 1, true)], raw);
    assert.deepEqual(
      [...p.predict64(new Float64Array([0]), 1)],
      raw.map((r) => Math.exp(r - max) / sum),
    );
  }
  const ova = lightgbmModel({
    numFeatures: 1,
    numClass: 3,
    objective: 'multiclassova num_class:3 sigmoid:1',
    trees,
  });
  for (const p of loadAll(ova)) {
    assert.deepEqual(
      [...p.predict64(new Float64Array([0]), 1)],
      raw.map((r) => 1 / (1 + Math.exp(-r))),
    );
  }
});

void test('average_output: predictions average the trees, raw scores stay their sum', () => {
  const forest = (version: string, parameters: string[]): string =>
    lightgbmModel({
      numFeatures: 1,
      objective: 'binary sigmoid:1',
      extraHeader: ['average_output'],
      trees: [constant(1), constant(3)],
      parameters,
    }).replace('version=v3', `version=${version}`);
  const sigmoid2 = 1 / (1 + Math.exp(-2));
  for (const p of loadAll(forest('v3', ['[boosting: rf]']))) {
    assert.equal(p.predict64(new Float64Array([0]), 1, true)[0], 4);
    assert.equal(p.predict64(new Float64Array([0]), 1)[0], sigmoid2);
  }
  // Saved by LightGBM before 2.2.3: leaves were already transformed, the average is final.
  for (const p of loadAll(forest('v2', ['[boosting: rf]']))) {
    assert.equal(p.predict64(new Float64Array([0]), 1)[0], 2);
  }
  // A v2 file from LightGBM 2.3 (it lists feature_fraction_bynode) transforms the average.
  for (const p of loadAll(forest('v2', ['[boosting: rf]', '[feature_fraction_bynode: 1]']))) {
    assert.equal(p.predict64(new Float64Array([0]), 1)[0], sigmoid2);
  }
});

void test('models LightGBM would not serve, or we do not, are refused with the reason', () => {
  const good = lightgbmModel({ numFeatures: 2, objective: 'regression', trees: [stump(2, 0.5)] });
  const cases: [string, RegExp][] = [
    ['', /first line must be 'tree'/],
    ['not a model', /first line must be 'tree'/],
    [good.replace('end of trees', ''), /'end of trees' line is missing/],
    [
      good.replace('objective=regression', 'objective=my_loss'),
      /objective 'my_loss' is not supported/,
    ],
    [good.replace('shrinkage=1', 'is_linear=1\nshrinkage=1'), /linear trees .* are not supported/],
    [
      good.replace('split_feature=0', 'split_feature=5'),
      /splits on feature 5, but the model has 2 features/,
    ],
    [good.replace('leaf_value=-1 1', 'leaf_value=-1'), /leaf_value has 1 entries, expected 2/],
    [good.replace('threshold=0.5', 'threshold=abc'), /threshold is missing or holds a non-number/],
    [good.replace('left_child=-1', 'left_child=0'), /do not form a tree/],
    // Leaf references past 32 bits: ~ would wrap them onto real leaves (or past the end).
    [
      good.replace('left_child=-1', 'left_child=-2147483649'),
      /points at a child that does not exist/,
    ],
    [
      good.replace('left_child=-1', 'left_child=-4294967297'),
      /points at a child that does not exist/,
    ],
    [good.replace('left_child=-1', 'left_child=-3'), /points at a child that does not exist/],
    [good.replace('decision_type=2', 'decision_type=12'), /unknown missing type/],
    [good.replace('max_feature_idx=1', 'max_feature_idx=x'), /max_feature_idx=x is not an integer/],
    [
      good.replace('num_tree_per_iteration=1', 'num_tree_per_iteration=2'),
      /do not split into iterations of 2/,
    ],
  ];
  for (const [text, reason] of cases) {
    const loaded = loadLightgbmModel(text);
    assert.equal(loaded.ok, false, String(reason));
    assert.match(loaded.ok ? '' : loaded.reason, reason);
  }
});

void test('a very wide model keeps the WebAssembly walk with bounded scratch, and counts it', () => {
  // 300,000 features, one split on the last: 1,024 rows of scratch would be 2.4 GB.
  const width = 300_000;
  const text = lightgbmModel({
    numFeatures: width,
    objective: 'regression',
    trees: [
      stump(2, 0.5).map((line) =>
        line === 'split_feature=0' ? `split_feature=${width - 1}` : line,
      ),
    ],
  });
  const loaded = loadLightgbmModel(text, { kernel: 'wasm' });
  assert.ok(loaded.ok, loaded.ok ? '' : loaded.reason);
  const predictor = loaded.predictor;
  assert.equal(predictor.kernelKind, 'wasm');
  assert.ok(predictor.memoryBytes() > 4 * 1024 * 1024, 'the kernel memory is counted');
  assert.ok(predictor.memoryBytes() < 64 * 1024 * 1024, `${predictor.memoryBytes()} bytes`);
  // Three rows: the split feature below, above, and missing.
  const rows = new Float64Array(3 * width);
  rows[width - 1] = 0;
  rows[2 * width - 1] = 1;
  rows[3 * width - 1] = Number.NaN;
  assert.deepEqual([...predictor.predict64(rows, 3)], [-1, 1, -1]);
});
