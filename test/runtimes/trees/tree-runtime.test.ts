// The tree runtime behind the SPI: loading through loadTreeRuntime, the tensors it declares,
// infer's conversions and its answers to bad requests, and the models it refuses.

import assert from 'node:assert/strict';
import { copyFile, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';

import type { ModelSchema, Tensor } from '../../../src/core/tensor.ts';
import type {
  InferOutcome,
  ModelRuntime,
  RuntimeLoadOptions,
} from '../../../src/runtimes/runtime.ts';
import { bigintToFloat32 } from '../../../src/protocol/v2/datatypes.ts';
import { loadTreeRuntime } from '../../../src/runtimes/trees/load-tree-runtime.ts';
import { tempDir } from '../../helpers/temp-dir.ts';
import {
  float32Rows,
  lightgbmModel,
  maxAbsDiff,
  readJson,
  treeFixtures,
  type XgboostExpected,
} from './tree-test-helpers.ts';

function options(
  files: readonly string[],
  extra: Partial<RuntimeLoadOptions> = {},
): RuntimeLoadOptions {
  return { modelDir: treeFixtures, format: 'xgboost', files, schema: null, config: {}, ...extra };
}

async function loadRuntime(file: string, schema: ModelSchema | null = null): Promise<ModelRuntime> {
  const loaded = await loadTreeRuntime(options([file], { schema }));
  assert.ok(loaded.ok, loaded.ok ? '' : loaded.reason);
  return loaded.runtime;
}

async function reason(load: Promise<Awaited<ReturnType<typeof loadTreeRuntime>>>): Promise<string> {
  const loaded = await load;
  assert.equal(loaded.ok, false);
  return loaded.ok ? '' : loaded.reason;
}

function input(
  data: Tensor['data'],
  shape: number[],
  datatype: Tensor['datatype'] = 'FP32',
  name = 'input',
): Tensor {
  return { name, datatype, shape, data };
}

function outputOf(outcome: InferOutcome): Tensor {
  assert.ok(outcome.ok, outcome.ok ? '' : `${outcome.kind}: ${outcome.message}`);
  const tensor = outcome.outputs[0];
  assert.ok(tensor !== undefined);
  return tensor;
}

function failure(outcome: InferOutcome): { kind: string; message: string } {
  assert.equal(outcome.ok, false);
  return outcome.ok ? { kind: '', message: '' } : outcome;
}

const softprob = readJson<XgboostExpected>(`${treeFixtures}xgb-multi-softprob.expected.json`);
const softprobRows = float32Rows(softprob.rows);
const n = softprob.rows.length;

void test('an XGBoost multiclass model: declared tensors, probabilities and margins', async () => {
  const runtime = await loadRuntime('xgb-multi-softprob.json');
  assert.equal(runtime.name, 'trees/xgboost');
  assert.deepEqual(runtime.inputs, [{ name: 'input', datatype: 'FP32', shape: [-1, 6] }]);
  assert.deepEqual(runtime.outputs, [{ name: 'output', datatype: 'FP32', shape: [-1, 4] }]);
  await runtime.warmup();
  const probabilities = outputOf(await runtime.infer({ inputs: [input(softprobRows, [n, 6])] }));
  assert.equal(probabilities.name, 'output');
  assert.equal(probabilities.datatype, 'FP32');
  assert.deepEqual(probabilities.shape, [n, 4]);
  assert.ok(maxAbsDiff(probabilities.data as Float32Array, softprob.predictions.flat()) <= 1e-5);
  const margins = outputOf(
    await runtime.infer({
      inputs: [input(softprobRows, [n, 6])],
      parameters: { output_margin: true },
    }),
  );
  assert.deepEqual(margins.shape, [n, 4]);
  assert.ok(maxAbsDiff(margins.data as Float32Array, softprob.margins.flat()) <= 1e-5);
  assert.ok(runtime.memoryBytes() > 0);
});

void test('multi:softmax gives the class index per row, and margins per class', async () => {
  const expected = readJson<XgboostExpected>(`${treeFixtures}xgb-multi-softmax.expected.json`);
  const runtime = await loadRuntime('xgb-multi-softmax.json');
  assert.deepEqual(runtime.outputs[0]?.shape, [-1]);
  const rows = float32Rows(expected.rows);
  const classes = outputOf(
    await runtime.infer({ inputs: [input(rows, [expected.rows.length, 6])] }),
  );
  assert.deepEqual(classes.shape, [expected.rows.length]);
  assert.deepEqual([...(classes.data as Float32Array)], expected.predictions);
  const margins = outputOf(
    await runtime.infer({
      inputs: [input(rows, [expected.rows.length, 6])],
      parameters: { output_margin: 'true' },
    }),
  );
  assert.deepEqual(margins.shape, [expected.rows.length, 3]);
});

void test('FP64 and integer inputs are converted; FP64 rounds to float32 like XGBoost', async () => {
  const runtime = await loadRuntime('xgb-multi-softprob.json');
  const reference = outputOf(await runtime.infer({ inputs: [input(softprobRows, [n, 6])] })).data;
  const fp64 = outputOf(
    await runtime.infer({ inputs: [input(Float64Array.from(softprobRows), [n, 6], 'FP64')] }),
  );
  assert.deepEqual(fp64.data, reference);
  const ints = Int32Array.from([1, -2, 0, 3, 1, 0, 0, 0, 0, 0, 0, 0]);
  const fromInts = outputOf(await runtime.infer({ inputs: [input(ints, [2, 6], 'INT32')] }));
  const fromFloats = outputOf(
    await runtime.infer({ inputs: [input(Float32Array.from(ints), [2, 6])] }),
  );
  assert.deepEqual(fromInts.data, fromFloats.data);
  const bigints = BigInt64Array.from([1n, -2n, 0n, 3n, 1n, 0n]);
  const fromBig = outputOf(await runtime.infer({ inputs: [input(bigints, [1, 6], 'INT64')] }));
  assert.deepEqual(
    [...(fromBig.data as Float32Array)],
    [...(fromFloats.data as Float32Array).subarray(0, 4)],
  );

  // A double just under a float32 threshold rounds onto it: XGBoost sends it right.
  const document = readJson<{
    learner: {
      gradient_booster: {
        model: { trees: { split_conditions: number[]; split_indices: number[] }[] };
      };
    };
  }>(`${treeFixtures}xgb-multi-softprob.json`);
  const root = document.learner.gradient_booster.model.trees[0];
  assert.ok(root !== undefined);
  const threshold = Math.fround(root.split_conditions[0] ?? 0);
  const feature = root.split_indices[0] ?? 0;
  const below = threshold - Math.abs(threshold) * 2 ** -30;
  assert.equal(Math.fround(below), threshold);
  const row64 = new Float64Array(6);
  row64[feature] = below;
  const row32 = new Float32Array(6);
  row32[feature] = threshold;
  const viaDouble = outputOf(await runtime.infer({ inputs: [input(row64, [1, 6], 'FP64')] }));
  const viaFloat = outputOf(await runtime.infer({ inputs: [input(row32, [1, 6])] }));
  assert.deepEqual(viaDouble.data, viaFloat.data);
});

void test('bad requests are invalid_input values that say what was expected', async () => {
  const runtime = await loadRuntime('xgb-binary-logistic.json');
  const row = new Float32Array(8);
  const cases: [InferOutcome, RegExp][] = [
    [
      await runtime.infer({ inputs: [input(new Float32Array(14), [2, 7])] }),
      /expected 8 features per row, got 7/,
    ],
    [
      await runtime.infer({ inputs: [input(['a', 'b'], [1, 2], 'BYTES')] }),
      /datatype BYTES cannot be tree features/,
    ],
    [await runtime.infer({ inputs: [input(row, [8])] }), /shape \[8\] is not \[rows, features\]/],
    [await runtime.infer({ inputs: [input(row, [2, 8])] }), /needs 16 values, the data holds 8/],
    [
      await runtime.infer({ inputs: [input(row, [1, 8], 'FP32', 'x')] }),
      /input 'x': the model has no such input/,
    ],
    [await runtime.infer({ inputs: [] }), /takes one input, 'input' .*got 0/],
    [await runtime.infer({ inputs: [input(row, [1, 8]), input(row, [1, 8])] }), /got 2/],
    [
      await runtime.infer({ inputs: [input(row, [1, 8])], outputs: ['proba'] }),
      /output 'proba': the model has no such output/,
    ],
    [
      await runtime.infer({ inputs: [input(row, [1, 8])], parameters: { output_margin: 'yes' } }),
      /output_margin must be true or false/,
    ],
    [
      await runtime.infer({ inputs: [input(new Uint8Array(8), [1, 8], 'FP32')] }),
      /does not match datatype FP32/,
    ],
  ];
  for (const [outcome, message] of cases) {
    const problem = failure(outcome);
    assert.equal(problem.kind, 'invalid_input');
    assert.match(problem.message, message);
  }
  const empty = outputOf(
    await runtime.infer({ inputs: [input(new Float32Array(0), [0, 8])], outputs: ['output'] }),
  );
  assert.deepEqual(empty.shape, [0]);
});

void test('names, datatypes and shapes come from the declared schema, which must fit', async () => {
  const schema: ModelSchema = {
    inputs: [{ name: 'features', datatype: 'FP32', shape: [-1, 8] }],
    outputs: [{ name: 'probability', datatype: 'FP64', shape: [-1] }],
  };
  const runtime = await loadRuntime('xgb-binary-logistic.json', schema);
  assert.deepEqual(runtime.inputs, [{ name: 'features', datatype: 'FP32', shape: [-1, 8] }]);
  assert.deepEqual(runtime.outputs, [{ name: 'probability', datatype: 'FP64', shape: [-1] }]);
  const out = outputOf(
    await runtime.infer({ inputs: [input(new Float32Array(8), [1, 8], 'FP32', 'features')] }),
  );
  assert.equal(out.name, 'probability');
  assert.ok(out.data instanceof Float64Array);
  assert.deepEqual(out.shape, [1]);
  // A declared column ([-1, 1] or [-1, -1]) is what the answers have, not [N]: the same
  // values as the model's own [N] answer.
  const threeRows = { inputs: [input(new Float32Array(24), [3, 8], 'FP32', 'features')] };
  const plain = outputOf(
    await (
      await loadRuntime('xgb-binary-logistic.json')
    ).infer({ inputs: [input(new Float32Array(24), [3, 8])] }),
  );
  assert.deepEqual(plain.shape, [3]);
  for (const declaredShape of [
    [-1, 1],
    [-1, -1],
  ]) {
    const column = await loadRuntime('xgb-binary-logistic.json', {
      ...schema,
      outputs: [{ name: 'probability', datatype: 'FP32', shape: declaredShape }],
    });
    assert.deepEqual(column.outputs[0]?.shape, [-1, 1]);
    const rows = outputOf(await column.infer(threeRows));
    assert.deepEqual(rows.shape, [3, 1]);
    assert.deepEqual(Array.from(rows.data as Float32Array), Array.from(plain.data as Float32Array));
  }
  const misfits: [ModelSchema, RegExp][] = [
    [
      { ...schema, inputs: [{ name: 'x', datatype: 'FP32', shape: [-1, 7] }] },
      /takes \[-1, 8\] \(8 features\)/,
    ],
    [
      { ...schema, inputs: [{ name: 'x', datatype: 'BYTES', shape: [-1, 8] }] },
      /datatype BYTES cannot carry tree features/,
    ],
    [{ ...schema, outputs: [{ name: 'y', datatype: 'FP32', shape: [-1, 3] }] }, /gives \[-1\]/],
    [
      { ...schema, outputs: [{ name: 'y', datatype: 'INT64', shape: [-1] }] },
      /datatype INT64 is not what a tree model gives/,
    ],
    [
      { inputs: [...schema.inputs, ...schema.inputs], outputs: schema.outputs },
      /one input and gives one output/,
    ],
  ];
  for (const [declared, message] of misfits) {
    assert.match(
      await reason(loadTreeRuntime(options(['xgb-binary-logistic.json'], { schema: declared }))),
      message,
    );
  }
});

void test('unload releases the trees; later requests fail without throwing', async () => {
  const runtime = await loadRuntime('xgb-dart.json');
  await runtime.unload();
  assert.equal(runtime.memoryBytes(), 0);
  const problem = failure(await runtime.infer({ inputs: [input(new Float32Array(8), [1, 8])] }));
  assert.equal(problem.kind, 'failed');
});

void test('files the runtime cannot serve are refused with a reason, never thrown', async () => {
  const dir = await tempDir('kiln-trees-');
  const model = await readFile(`${treeFixtures}xgb-binary-logistic.json`, 'utf8');
  const document = JSON.parse(model) as {
    learner: { objective: { name: string }; gradient_booster: { name: string } };
  };
  const write = async (name: string, text: string | Uint8Array): Promise<string> => {
    await writeFile(join(dir, name), text);
    return name;
  };
  document.learner.objective.name = 'survival:aft';
  const aft = await write('aft.json', JSON.stringify(document));
  document.learner.objective.name = 'binary:logistic';
  document.learner.gradient_booster.name = 'gblinear';
  const linear = await write('linear.json', JSON.stringify(document));
  const ubj = await readFile(`${treeFixtures}xgb-binary-logistic.ubj`);
  const cases: [RuntimeLoadOptions, RegExp][] = [
    [options([await write('bad.json', '{ "learner": ')], { modelDir: dir }), /not valid JSON/],
    [
      options([await write('cut.ubj', ubj.subarray(0, ubj.length >> 1))], { modelDir: dir }),
      /not valid UBJSON/,
    ],
    [options([await write('empty.json', '{}')], { modelDir: dir }), /learner is missing/],
    [
      options([aft], { modelDir: dir }),
      /objective 'survival:aft' is not supported \(supported: binary:logistic/,
    ],
    [options([linear], { modelDir: dir }), /booster 'gblinear' is not a tree booster/],
    [
      options(['xgb-dart.json', 'xgb-binary-logistic.json']),
      /exactly one model file .*found xgb-dart.json, xgb-binary-logistic.json/,
    ],
    [options(['model.bst']), /exactly one model file \(.json or .ubj\); found none/],
    [options(['nope.json']), /nope.json: no such file/],
    [options(['../registry/xgb-binary.json']), /leaves the model folder/],
    [
      options(['xgb-dart.json'], { format: 'onnx' }),
      /serves xgboost and lightgbm models, not onnx/,
    ],
    [
      options([await write('bad.txt', 'tree\nversion=v3\n\nTree=0\n')], {
        modelDir: dir,
        format: 'lightgbm',
      }),
      /'end of trees' line is missing/,
    ],
  ];
  for (const [loadOptions, message] of cases)
    assert.match(await reason(loadTreeRuntime(loadOptions)), message);
});

void test('a LightGBM text model through the runtime (and the one text file among several)', async () => {
  const dir = await tempDir('kiln-trees-');
  const text = lightgbmModel({
    numFeatures: 2,
    objective: 'binary sigmoid:1',
    trees: [
      [
        'num_leaves=2',
        'num_cat=0',
        'split_feature=1',
        'threshold=0.5',
        'decision_type=2',
        'left_child=-1',
        'right_child=-2',
        'leaf_value=-1 1',
      ],
    ],
  });
  await writeFile(join(dir, 'model.txt'), text);
  await writeFile(join(dir, 'README.md'), '# notes\n');
  await copyFile(`${treeFixtures}xgb-dart.json`, join(dir, 'other.json'));
  const loaded = await loadTreeRuntime(
    options(['README.md', 'model.txt', 'other.json'], { modelDir: dir, format: 'lightgbm' }),
  );
  assert.ok(loaded.ok, loaded.ok ? '' : loaded.reason);
  const runtime = loaded.runtime;
  assert.equal(runtime.name, 'trees/lightgbm');
  // LightGBM computes in double: by default the model takes and gives FP64.
  assert.deepEqual(runtime.inputs, [{ name: 'input', datatype: 'FP64', shape: [-1, 2] }]);
  assert.deepEqual(runtime.outputs, [{ name: 'output', datatype: 'FP64', shape: [-1] }]);
  const out = outputOf(
    await runtime.infer({
      inputs: [input(new Float64Array([0, 0.5, 0, 0.6, 0, Number.NaN]), [3, 2], 'FP64')],
    }),
  );
  const sigmoid = (x: number): number => 1 / (1 + Math.exp(-x));
  assert.equal(out.datatype, 'FP64');
  assert.deepEqual([...(out.data as Float64Array)], [sigmoid(-1), sigmoid(1), sigmoid(-1)]);
  const linear = text.replace('leaf_value=-1 1', 'leaf_value=-1 1\nis_linear=1');
  await writeFile(join(dir, 'linear.txt'), linear);
  assert.match(
    await reason(loadTreeRuntime(options(['linear.txt'], { modelDir: dir, format: 'lightgbm' }))),
    /linear trees/,
  );
  assert.match(
    await reason(
      loadTreeRuntime(options(['README.md', 'other.json'], { modelDir: dir, format: 'lightgbm' })),
    ),
    /exactly one text model \(first line 'tree'\); found none among 2 files/,
  );
});

void test('a LightGBM model with a declared FP32 schema answers FP32, computed from doubles', async () => {
  const dir = await tempDir('kiln-trees-');
  // One split at 0.1 (a double that is not a float32): 0.1 itself goes left (x <= t).
  const text = lightgbmModel({
    numFeatures: 1,
    trees: [
      [
        'num_leaves=2',
        'num_cat=0',
        'split_feature=0',
        'threshold=0.10000000000000001',
        'decision_type=2',
        'left_child=-1',
        'right_child=-2',
        'leaf_value=0.1 0.7',
      ],
    ],
  });
  await writeFile(join(dir, 'model.txt'), text);
  const schema: ModelSchema = {
    inputs: [{ name: 'x', datatype: 'FP32', shape: [-1, 1] }],
    outputs: [{ name: 'y', datatype: 'FP32', shape: [-1] }],
  };
  const loaded = await loadTreeRuntime(
    options(['model.txt'], { modelDir: dir, format: 'lightgbm', schema }),
  );
  assert.ok(loaded.ok, loaded.ok ? '' : loaded.reason);
  const runtime = loaded.runtime;
  assert.deepEqual(runtime.inputs, schema.inputs);
  assert.deepEqual(runtime.outputs, schema.outputs);
  // FP64 input is still read as the double it is (LightGBM's precision), not via float32,
  // whose 0.1 is 0.10000000149… and goes right.
  const fromDouble = outputOf(
    await runtime.infer({ inputs: [input(new Float64Array([0.1]), [1, 1], 'FP64', 'x')] }),
  );
  const fromFloat = outputOf(
    await runtime.infer({ inputs: [input(new Float32Array([0.1]), [1, 1], 'FP32', 'x')] }),
  );
  assert.equal(fromDouble.datatype, 'FP32');
  assert.deepEqual([...(fromDouble.data as Float32Array)], [Math.fround(0.1)]);
  assert.deepEqual([...(fromFloat.data as Float32Array)], [Math.fround(0.7)]);
});

void test('64-bit integers round to float32 once, as a C cast does (no double rounding)', () => {
  const tie = 2n ** 60n + 2n ** 36n + 1n; // just over a float32 midpoint; a double drops the 1
  assert.equal(Math.fround(Number(tie)), 2 ** 60); // twice rounded: down to even
  assert.equal(bigintToFloat32(tie), 2 ** 60 + 2 ** 37);
  assert.equal(bigintToFloat32(-tie), -(2 ** 60 + 2 ** 37));
  assert.equal(bigintToFloat32(2n ** 60n + 2n ** 36n), 2 ** 60); // an exact tie: to even
  assert.equal(bigintToFloat32(2n ** 64n - 1n), 2 ** 64);
  assert.equal(bigintToFloat32(16_777_217n), 16_777_216); // 2^24 + 1: a tie below 2^53
  assert.equal(bigintToFloat32(-5n), -5);
  assert.equal(bigintToFloat32(0n), 0);
});
