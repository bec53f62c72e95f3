import { test } from 'node:test';
import assert from 'node:assert/strict';
import { kilnVersion } from '../../../src/core/version.ts';
import { renderV2Error, v2ErrorStatus, v2Failure } from '../../../src/protocol/v2/errors.ts';
import { buildModelMetadata, buildServerMetadata } from '../../../src/protocol/v2/metadata.ts';

test('v2 error bodies are {"error": message} plus a stable code', () => {
  const failure = v2Failure(
    'KILN_INVALID_TENSOR',
    "input 'x': element 3 is a string, expected FP32 numbers",
    'x',
  );
  assert.deepEqual(failure, {
    ok: false,
    code: 'KILN_INVALID_TENSOR',
    message: "input 'x': element 3 is a string, expected FP32 numbers",
    input: 'x',
  });
  const body = renderV2Error(failure);
  assert.equal(
    body,
    `{"error":"input 'x': element 3 is a string, expected FP32 numbers","code":"KILN_INVALID_TENSOR"}`,
  );
  assert.deepEqual(JSON.parse(body), { error: failure.message, code: 'KILN_INVALID_TENSOR' });
  assert.equal(
    renderV2Error({ code: 'KILN_MODEL_NOT_FOUND', message: 'model m does not exist' }),
    '{"error":"model m does not exist","code":"KILN_MODEL_NOT_FOUND"}',
  );
  for (const status of Object.values(v2ErrorStatus)) assert.equal(status, 400);
});

test('model metadata lists versions as strings and tensors with -1 for variable dimensions', () => {
  const metadata = buildModelMetadata({
    name: 'fraud',
    versions: [3, '4'],
    platform: 'onnxruntime_onnx',
    inputs: [{ name: 'x', datatype: 'FP32', shape: [-1, 30] }],
    outputs: [{ name: 'y', datatype: 'FP32', shape: [-1] }],
  });
  assert.deepEqual(JSON.parse(JSON.stringify(metadata)), {
    name: 'fraud',
    versions: ['3', '4'],
    platform: 'onnxruntime_onnx',
    inputs: [{ name: 'x', datatype: 'FP32', shape: [-1, 30] }],
    outputs: [{ name: 'y', datatype: 'FP32', shape: [-1] }],
  });
});

test('server metadata names Kiln, its version and no extensions', () => {
  assert.deepEqual(buildServerMetadata(), { name: 'kiln', version: kilnVersion, extensions: [] });
});
