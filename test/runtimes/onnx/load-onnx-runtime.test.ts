// Loading (metadata, config, refusals with reasons) and inference failures of the ONNX runtime.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFile, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Tensor } from '../../../src/core/tensor.ts';
import { loadOnnxRuntime } from '../../../src/runtimes/onnx/load-onnx-runtime.ts';
import type { InferOutcome, RuntimeConfig } from '../../../src/runtimes/runtime.ts';
import { tempDir } from '../../helpers/temp-dir.ts';
import {
  assertMatches,
  loadOptions,
  mustLoad,
  mustSucceed,
  onnxFixtures,
  readExpected,
  registryFixtures,
  toTensor,
} from './onnx-fixtures.ts';
import { compileSchema } from '../../../src/protocol/v2/schema.ts';
import { parseInferRequest } from '../../../src/protocol/v2/decode-request.ts';

async function loadReason(...args: Parameters<typeof loadOptions>): Promise<string> {
  const outcome = await loadOnnxRuntime(loadOptions(...args));
  assert.equal(outcome.ok, false, 'the model should have been refused');
  return outcome.ok ? '' : outcome.reason;
}

function assertInvalid(outcome: InferOutcome, pattern: RegExp): void {
  assert.equal(outcome.ok, false, 'the request should have been refused');
  if (outcome.ok) return;
  assert.equal(outcome.kind, 'invalid_input', outcome.message);
  assert.match(outcome.message, pattern);
}

const features = (rows: number, data?: Float32Array): Tensor => ({
  name: 'features',
  datatype: 'FP32',
  shape: [rows, 16],
  data: data ?? new Float32Array(rows * 16),
});

void test('metadata: datatypes, dynamic dimensions as -1, initializers are not inputs', async () => {
  const cnn = await mustLoad(loadOptions(onnxFixtures, ['cnn-digits.onnx']));
  assert.equal(cnn.name, 'onnx');
  assert.equal(cnn.specVersion, 1);
  assert.deepEqual(cnn.inputs, [{ name: 'image', datatype: 'FP32', shape: [-1, 1, 28, 28] }]);
  assert.deepEqual(cnn.outputs, [
    { name: 'logits', datatype: 'FP32', shape: [-1, 10] },
    { name: 'probabilities', datatype: 'FP32', shape: [-1, 10] },
  ]);
  await cnn.unload();
  // helper.onnx lists its initializer 'bias' among the graph inputs (IR < 4 style).
  const helper = await mustLoad(loadOptions(registryFixtures, ['helper.onnx']));
  assert.deepEqual(helper.inputs, [
    { name: 'words', datatype: 'BYTES', shape: [-1] },
    { name: 'x', datatype: 'FP32', shape: [-1, 3] },
  ]);
  assert.deepEqual(helper.outputs, [
    { name: 'words_out', datatype: 'BYTES', shape: [-1] },
    { name: 'count', datatype: 'INT64', shape: [1] },
    { name: 'y', datatype: 'FP32', shape: [-1, 3] },
  ]);
  await helper.unload();
});

void test('a corrupt or truncated .onnx is refused with onnxruntime message, cleaned', async () => {
  const dir = await tempDir();
  const bytes = await readFile(join(onnxFixtures, 'mlp.onnx'));
  await writeFile(join(dir, 'truncated.onnx'), bytes.subarray(0, 100));
  await writeFile(join(dir, 'garbage.onnx'), 'this is not a protobuf at all');
  for (const file of ['truncated.onnx', 'garbage.onnx']) {
    const reason = await loadReason(dir, [file]);
    assert.match(
      reason,
      new RegExp(`^onnxruntime could not load ${file}: Protobuf parsing failed`),
    );
    assert.ok(!reason.includes(dir), `no staging path in: ${reason}`);
  }
});

void test('missing external data is refused, naming the file without our folder', async () => {
  const dir = await tempDir();
  await copyFile(join(registryFixtures, 'onnx-external', 'model.onnx'), join(dir, 'model.onnx'));
  const reason = await loadReason(dir, ['model.onnx']);
  assert.match(reason, /^onnxruntime could not load model\.onnx: .*weights\.bin/);
  assert.ok(!reason.includes(dir), `no staging path in: ${reason}`);
  assert.ok(!/\.cc:\d+/.test(reason), `no C++ source location in: ${reason}`);
});

void test('the artifact must hold exactly one .onnx file and be of format onnx', async () => {
  assert.match(
    await loadReason(onnxFixtures, ['mlp.expected.json']),
    /exactly one \.onnx file; found none/,
  );
  assert.match(
    await loadReason(onnxFixtures, ['mlp.onnx', 'iris-forest.onnx']),
    /found mlp\.onnx, iris-forest\.onnx/,
  );
  const outcome = await loadOnnxRuntime({
    ...loadOptions(onnxFixtures, ['mlp.onnx']),
    format: 'xgboost',
  });
  assert.ok(!outcome.ok && /cannot serve a 'xgboost' model/.test(outcome.reason));
  assert.match(await loadReason(onnxFixtures, ['../registry/mlp.onnx']), /not a path inside/);
});

void test('a ZipMap output (sequence of maps) is refused, suggesting zipmap=False', async () => {
  const reason = await loadReason(onnxFixtures, ['iris-forest-zipmap.onnx']);
  assert.match(reason, /output 'output_probability' is a sequence, not a tensor/);
  assert.match(reason, /'zipmap': False/);
});

void test('thread and optimization settings are accepted and do not change results', async () => {
  const expected = readExpected('mlp');
  const configs: RuntimeConfig[] = [
    {},
    { intraOpThreads: 2, interOpThreads: 2 },
    { intraOpThreads: 0, interOpThreads: 0 },
    { graphOptimizationLevel: 'disabled' },
    { graphOptimizationLevel: 'basic' },
    { graphOptimizationLevel: 'extended', intraOpThreads: 1 },
    { graphOptimizationLevel: 'all', interOpThreads: 1 },
  ];
  for (const config of configs) {
    const runtime = await mustLoad(loadOptions(onnxFixtures, ['mlp.onnx'], { config }));
    const [scores] = mustSucceed(await runtime.infer({ inputs: expected.inputs.map(toTensor) }));
    assert.ok(scores !== undefined && expected.outputs[0] !== undefined);
    assertMatches(scores, expected.outputs[0]);
    await runtime.unload();
  }
});

void test('invalid thread and optimization settings are refused with a reason', async () => {
  const bad = [
    [{ intraOpThreads: -1 }, /intraOpThreads must be a whole number >= 0.*got -1/],
    [{ interOpThreads: 1.5 }, /interOpThreads must be a whole number >= 0.*got 1\.5/],
    [
      { graphOptimizationLevel: 'fast' } as unknown as RuntimeConfig,
      /graphOptimizationLevel must be one of disabled, basic, extended, all, got 'fast'/,
    ],
  ] as const;
  for (const [config, pattern] of bad) {
    assert.match(await loadReason(onnxFixtures, ['mlp.onnx'], { config }), pattern);
  }
});

void test('a declared schema is checked at load', async () => {
  const signature = readExpected('iris-forest').signature;
  const right = await mustLoad(
    loadOptions(onnxFixtures, ['iris-forest.onnx'], { schema: signature }),
  );
  await right.unload();
  const wrong = {
    inputs: [{ name: 'input', datatype: 'FP64' as const, shape: [-1, 4] }],
    outputs: signature.outputs,
  };
  assert.match(
    await loadReason(onnxFixtures, ['iris-forest.onnx'], { schema: wrong }),
    /^declared schema does not match the model: input 'input': declared FP64 but the model takes FP32$/,
  );
});

void test('wrong inputs are invalid_input, never an onnxruntime exception', async () => {
  const runtime = await mustLoad(loadOptions(onnxFixtures, ['mlp.onnx']));
  const infer = (inputs: Tensor[], outputs?: string[]) =>
    runtime.infer(outputs === undefined ? { inputs } : { inputs, outputs });
  const f64: Tensor = { ...features(2), datatype: 'FP64', data: new Float64Array(32) };
  assertInvalid(await infer([f64]), /^input 'features': got FP64 but the model takes FP32$/);
  assertInvalid(
    await infer([{ ...features(2), shape: [2, 8], data: new Float32Array(16) }]),
    /^input 'features': got shape \[2, 8\] but the model takes \[-1, 16\]$/,
  );
  assertInvalid(
    await infer([{ ...features(2), shape: [32] }]),
    /got shape \[32\] but the model takes \[-1, 16\]/,
  );
  assertInvalid(
    await infer([{ ...features(2), data: new Float32Array(31) }]),
    /shape \[2, 16\] holds 32 elements but the data has 31/,
  );
  assertInvalid(
    await infer([{ ...features(1), data: new Float64Array(16) }]),
    /FP32 data must be a Float32Array/,
  );
  assertInvalid(await infer([{ ...features(1), shape: [-1, 16] }]), /invalid dimension -1/);
  assertInvalid(await infer([]), /^missing input 'features' \(FP32 \[-1, 16\]\)$/);
  assertInvalid(await infer([features(1), features(1)]), /input 'features' is given twice/);
  assertInvalid(
    await infer([features(1), { ...features(1), name: 'extra' }]),
    /input 'extra': the model has no such input \(it takes 'features'\)/,
  );
  assertInvalid(
    await infer([features(1)], ['nope']),
    /output 'nope': the model has no such output/,
  );
  assertInvalid(await infer([features(1)], ['scores', 'scores']), /requested twice/);
  await runtime.unload();
});

void test('an error inside onnxruntime at run time is kind failed', async () => {
  const runtime = await mustLoad(loadOptions(onnxFixtures, ['fails-at-run.onnx']));
  const x = (rows: number): Tensor => ({
    name: 'x',
    datatype: 'FP32',
    shape: [rows, 4],
    data: new Float32Array(rows * 4),
  });
  mustSucceed(await runtime.infer({ inputs: [x(1)] }));
  const outcome = await runtime.infer({ inputs: [x(2)] });
  assert.ok(!outcome.ok && outcome.kind === 'failed', JSON.stringify(outcome));
  assert.match(outcome.message, /^onnxruntime: .*Reshape/);
  await runtime.unload();
});

void test('only the requested outputs run and come back, in the order asked', async () => {
  const expected = readExpected('cnn-digits');
  const runtime = await mustLoad(loadOptions(onnxFixtures, ['cnn-digits.onnx']));
  const inputs = expected.inputs.map(toTensor);
  const one = mustSucceed(await runtime.infer({ inputs, outputs: ['probabilities'] }));
  assert.deepEqual(
    one.map((o) => o.name),
    ['probabilities'],
  );
  const both = mustSucceed(await runtime.infer({ inputs, outputs: ['probabilities', 'logits'] }));
  assert.deepEqual(
    both.map((o) => o.name),
    ['probabilities', 'logits'],
  );
  const all = mustSucceed(await runtime.infer({ inputs, outputs: [] }));
  assert.deepEqual(
    all.map((o) => o.name),
    ['logits', 'probabilities'],
  );
  await runtime.unload();
});

void test('an empty batch runs and returns an empty batch', async () => {
  const runtime = await mustLoad(loadOptions(onnxFixtures, ['mlp.onnx']));
  const [scores] = mustSucceed(await runtime.infer({ inputs: [features(0)] }));
  assert.deepEqual(scores?.shape, [0, 4]);
  assert.equal(scores?.data.length, 0);
  await runtime.unload();
});

void test('warmup, memoryBytes and unload', async () => {
  for (const file of ['mlp.onnx', 'cnn-digits.onnx', 'iris-logistic.onnx', 'all-types.onnx']) {
    const runtime = await mustLoad(loadOptions(onnxFixtures, [file]));
    await runtime.warmup();
    assert.equal(runtime.memoryBytes(), (await stat(join(onnxFixtures, file))).size);
    await runtime.unload();
    const after = await runtime.infer({ inputs: [] });
    assert.ok(!after.ok && after.kind === 'failed' && /unloaded/.test(after.message));
    await runtime.unload(); // twice is harmless
  }
});

void test('a BF16 model is refused, in our words as well as onnxruntime', async () => {
  const reason = await loadReason(onnxFixtures, ['bf16.onnx']);
  assert.match(
    reason,
    /^onnxruntime could not load bf16\.onnx: .*input 'x' is BF16, which onnxruntime-node cannot/,
  );
});

void test('a graph that leaves the rank open shows shape [] marked anyRank and takes any shape', async () => {
  const runtime = await mustLoad(loadOptions(onnxFixtures, ['open-rank.onnx']));
  assert.deepEqual(runtime.inputs, [{ name: 'x', datatype: 'FP32', shape: [], anyRank: true }]);
  await runtime.warmup();
  // A worker without a declared schema checks requests against the runtime's own: any rank
  // passes, the datatype is still checked.
  const schema = compileSchema({ inputs: runtime.inputs, outputs: runtime.outputs });
  const body = (datatype: string, shape: number[]): string =>
    JSON.stringify({ inputs: [{ name: 'x', datatype, shape, data: [1, 2, 3, 4, 5, 6] }] });
  assert.equal(parseInferRequest(body('FP32', [2, 3]), schema).ok, true);
  assert.equal(parseInferRequest(body('FP32', [6]), schema).ok, true);
  const wrongType = parseInferRequest(body('INT32', [2, 3]), schema);
  assert.equal(wrongType.ok, false);
  for (const shape of [[], [3], [2, 2, 1]]) {
    const data = Float32Array.from({ length: shape.reduce((a, b) => a * b, 1) }, (_, i) => i);
    const [y] = mustSucceed(
      await runtime.infer({ inputs: [{ name: 'x', datatype: 'FP32', shape, data }] }),
    );
    assert.deepEqual(y?.shape, shape);
    assert.deepEqual(y?.data, data);
  }
  await runtime.unload();
});

void test('unload waits for runs in flight, and concurrent runs each get their own rows', async () => {
  const expected = readExpected('mlp');
  const runtime = await mustLoad(loadOptions(onnxFixtures, ['mlp.onnx']));
  const [input] = expected.inputs.map(toTensor);
  const [want] = expected.outputs;
  assert.ok(input !== undefined && want !== undefined);
  // Row r alone: rows are independent, so each single-row run must match its expected row.
  const single = (row: number): Tensor => ({
    ...input,
    shape: [1, 16],
    data: (input.data as Float32Array).slice(row * 16, row * 16 + 16),
  });
  const runs = Array.from({ length: 20 }, (_, row) => runtime.infer({ inputs: [single(row)] }));
  const unloaded = runtime.unload();
  const outcomes = await Promise.all(runs);
  await unloaded;
  outcomes.forEach((outcome, row) => {
    const [scores] = mustSucceed(outcome);
    assert.ok(scores !== undefined);
    assertMatches(scores, { ...want, shape: [1, 4], data: want.data.slice(row * 4, row * 4 + 4) });
  });
});
