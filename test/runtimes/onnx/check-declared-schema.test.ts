// checkDeclaredSchema: a version's declared schema against the model's real tensors, both as a
// loaded runtime reports them and as the registry's formatInfo records them.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import type { ModelSchema, TensorSpec } from '../../../src/core/tensor.ts';
import { fileArtifact } from '../../../src/registry/formats/file-artifact.ts';
import { validateOnnx } from '../../../src/registry/formats/onnx.ts';
import {
  checkDeclaredSchema,
  type ModelTensors,
} from '../../../src/runtimes/onnx/check-declared-schema.ts';
import { cleanOrtMessage } from '../../../src/runtimes/onnx/clean-ort-message.ts';
import { onnxFixtures, registryFixtures } from './onnx-fixtures.ts';

const model: ModelTensors = {
  inputs: [
    { name: 'image', datatype: 'FP32', shape: [-1, 1, 28, 28] },
    { name: 'scale', datatype: 'FP64', shape: [1] },
  ],
  outputs: [
    { name: 'logits', datatype: 'FP32', shape: [-1, 10] },
    { name: 'label', datatype: 'INT64', shape: [-1] },
  ],
};

const image: TensorSpec = { name: 'image', datatype: 'FP32', shape: [-1, 1, 28, 28] };
const scale: TensorSpec = { name: 'scale', datatype: 'FP64', shape: [1] };
const logits: TensorSpec = { name: 'logits', datatype: 'FP32', shape: [-1, 10] };

function reasonFor(declared: ModelSchema, against: ModelTensors = model): string {
  const result = checkDeclaredSchema(declared, against);
  assert.equal(result.ok, false, 'the schema should have been rejected');
  return result.ok ? '' : result.reason;
}

void test('a matching schema is accepted, including a stricter shape and an output subset', () => {
  assert.deepEqual(checkDeclaredSchema({ inputs: [image, scale], outputs: [logits] }, model), {
    ok: true,
  });
  const fixedBatch = { ...image, shape: [8, 1, 28, 28] };
  assert.ok(checkDeclaredSchema({ inputs: [scale, fixedBatch], outputs: [] }, model).ok);
  // -1 on the declared side matches a fixed model dimension too.
  const loose = { ...scale, shape: [-1] };
  assert.ok(checkDeclaredSchema({ inputs: [image, loose], outputs: [logits] }, model).ok);
});

void test('a wrong datatype is named with both types', () => {
  assert.equal(
    reasonFor({ inputs: [{ ...image, datatype: 'FP64' }, scale], outputs: [] }),
    "input 'image': declared FP64 but the model takes FP32",
  );
  assert.equal(
    reasonFor({ inputs: [image, scale], outputs: [{ ...logits, datatype: 'FP16' }] }),
    "output 'logits': declared FP16 but the model gives FP32",
  );
});

void test('an incompatible shape or rank is named with both shapes', () => {
  assert.equal(
    reasonFor({ inputs: [{ ...image, shape: [-1, 3, 28, 28] }, scale], outputs: [] }),
    "input 'image': declared shape [-1, 3, 28, 28] but the model takes [-1, 1, 28, 28]",
  );
  assert.equal(
    reasonFor({ inputs: [{ ...image, shape: [-1, 784] }, scale], outputs: [] }),
    "input 'image': declared shape [-1, 784] but the model takes [-1, 1, 28, 28] (ranks differ)",
  );
});

void test('missing, extra and duplicate tensors are named', () => {
  assert.equal(
    reasonFor({ inputs: [image], outputs: [] }),
    "input 'scale' (FP64 [1]) is required by the model but not declared",
  );
  assert.equal(
    reasonFor({ inputs: [image, scale, { ...scale, name: 'bias' }], outputs: [] }),
    "input 'bias' is declared but the model has no such input (its inputs: 'image', 'scale')",
  );
  assert.equal(
    reasonFor({ inputs: [image, scale], outputs: [{ ...logits, name: 'probabilities' }] }),
    "output 'probabilities' is declared but the model has no such output (its outputs: 'logits', 'label')",
  );
  assert.equal(
    reasonFor({ inputs: [image, scale, image], outputs: [] }),
    "input 'image' is declared twice",
  );
  // Every problem is reported at once, so one deploy attempt shows them all.
  assert.equal(
    reasonFor({ inputs: [{ ...image, datatype: 'UINT8' }], outputs: [] }),
    "input 'image': declared UINT8 but the model takes FP32; input 'scale' (FP64 [1]) is required by the model but not declared",
  );
});

/** The registry's formatInfo for one .onnx fixture (what a deploy sees without a replica). */
async function formatInfo(path: string): Promise<ModelTensors> {
  const check = await validateOnnx([await fileArtifact(path, 'model.onnx')]);
  assert.ok(check.ok, check.ok ? '' : check.reason);
  return check.info as unknown as ModelTensors;
}

void test("works on the registry's formatInfo: unknown ranks, non-tensors, initializers", async () => {
  const info = await formatInfo(join(registryFixtures, 'helper.onnx'));
  // 'bias' is an initializer also listed as a graph input: not required.
  const declared: ModelSchema = {
    inputs: [
      { name: 'words', datatype: 'BYTES', shape: [-1] },
      { name: 'x', datatype: 'FP32', shape: [-1, 3] },
    ],
    outputs: [{ name: 'count', datatype: 'INT64', shape: [1] }],
  };
  assert.deepEqual(checkDeclaredSchema(declared, info), { ok: true });

  const openRank: ModelTensors = {
    inputs: [{ name: 'x', datatype: 'FP32', shape: null }],
    outputs: [],
  };
  const anyShape: TensorSpec = { name: 'x', datatype: 'FP32', shape: [2, 3, 4] };
  assert.ok(checkDeclaredSchema({ inputs: [anyShape], outputs: [] }, openRank).ok);

  const zipmap = await formatInfo(join(onnxFixtures, 'iris-forest-zipmap.onnx'));
  const probabilities: TensorSpec = {
    name: 'output_probability',
    datatype: 'FP32',
    shape: [-1, 3],
  };
  assert.equal(
    reasonFor(
      { inputs: [{ name: 'input', datatype: 'FP32', shape: [-1, 4] }], outputs: [probabilities] },
      zipmap,
    ),
    "output 'output_probability': the model's output is a sequence, not a tensor",
  );
});

void test('cleanOrtMessage drops load prefixes, source locations, colours and our folder', () => {
  const dir = '/srv/kiln/staging/v3';
  const cases = [
    [
      `Load model from ${dir}/model.onnx failed:Protobuf parsing failed.`,
      'Protobuf parsing failed.',
    ],
    [
      `External data path validation failed for initializer: bias. Error: tensorprotoutils.cc:461 ValidateExternalDataPathFromDir External data path does not exist: "${dir}/weights.bin"`,
      'External data path validation failed for initializer: bias. Error: External data path does not exist: "weights.bin"',
    ],
    [
      "Non-zero status code returned while running Reshape node. Name:'' Status Message: /onnxruntime_src/onnxruntime/core/providers/cpu/tensor/reshape_helper.h:91 onnxruntime::ReshapeHelper::ReshapeHelper(const onnxruntime::TensorShape&, bool) input_shape_size == requested_shape_size was false.\n",
      "Non-zero status code returned while running Reshape node. Name:'' Status Message: input_shape_size == requested_shape_size was false.",
    ],
    ['\u001b[1;31m[ONNXRuntimeError] : 1 : FAIL : Something\nbroke\u001b[m', 'Something broke'],
    ['', 'onnxruntime gave no message'],
  ] as const;
  for (const [raw, clean] of cases) assert.equal(cleanOrtMessage(new Error(raw), dir), clean);
  assert.equal(cleanOrtMessage('a/b/c', ''), 'a/b/c');
});
