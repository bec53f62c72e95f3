// Input datatype policies: 'exact' (the declared datatype only, e.g. ONNX) and 'numeric'
// (tree models: any datatype that holds numbers, which the runtime converts).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ModelSchema } from '../../../src/core/tensor.ts';
import {
  checkInferRequest,
  decodeInferRequest,
  parseInferRequest,
} from '../../../src/protocol/v2/decode-request.ts';
import { inputDatatypePolicy, numericDatatypes } from '../../../src/protocol/v2/input-datatypes.ts';
import { compileSchema } from '../../../src/protocol/v2/schema.ts';

const treeSchema: ModelSchema = {
  inputs: [{ name: 'input', datatype: 'FP64', shape: [-1, 2] }],
  outputs: [{ name: 'output', datatype: 'FP64', shape: [-1] }],
};

const sample: Readonly<Record<string, readonly unknown[]>> = {
  BOOL: [true, false, false, true],
  FP16: [0.5, 1, 2, 4],
  BF16: [0.5, 1, 2, 4],
};

function request(datatype: string, data: readonly unknown[] = sample[datatype] ?? [1, 2, 3, 4]) {
  return { inputs: [{ name: 'input', datatype, shape: [2, 2], data }] };
}

test('the tree formats take numeric inputs; every other format exactly the declared one', () => {
  assert.equal(inputDatatypePolicy('lightgbm'), 'numeric');
  assert.equal(inputDatatypePolicy('xgboost'), 'numeric');
  assert.equal(inputDatatypePolicy('onnx'), 'exact');
  assert.equal(inputDatatypePolicy('external'), 'exact');
  assert.equal(inputDatatypePolicy('hf-llm'), 'exact');
  assert.equal(compileSchema(treeSchema).inputs.get('input')?.datatypes, 'exact');
});

test('a numeric input decodes every numeric datatype as sent (the runtime converts)', () => {
  const schema = compileSchema(treeSchema, { inputDatatypes: 'numeric' });
  for (const datatype of numericDatatypes) {
    const body = request(datatype);
    const decoded = decodeInferRequest(body, schema);
    assert.ok(decoded.ok, `${datatype}: ${decoded.ok ? '' : decoded.message}`);
    assert.deepEqual(checkInferRequest(body, schema), { ok: true });
    const tensor = decoded.request.inputs[0];
    assert.equal(tensor?.datatype, datatype);
    assert.equal(tensor?.data.length, 4);
  }
  // INT64 stays exact past 2^53 through the numeric policy too.
  const big = parseInferRequest(
    '{"inputs":[{"name":"input","datatype":"INT64","shape":[1,2],"data":[9007199254740993,1]}]}',
    schema,
  );
  assert.ok(big.ok, big.ok ? '' : big.message);
  assert.equal((big.request.inputs[0]?.data as BigInt64Array)[0], 9007199254740993n);
});

test('a numeric input still refuses BYTES, strings among numbers, and wrong shapes', () => {
  const schema = compileSchema(treeSchema, { inputDatatypes: 'numeric' });
  const bytes = decodeInferRequest(request('BYTES', ['a', 'b', 'c', 'd']), schema);
  assert.equal(bytes.ok, false);
  if (!bytes.ok) {
    assert.equal(bytes.code, 'KILN_INPUT_MISMATCH');
    assert.match(bytes.message, /^input 'input': datatype BYTES does not hold numbers/);
    assert.match(bytes.message, /the model takes FP64 \(or any of FP64, FP32, .*BOOL/);
  }
  const strings = decodeInferRequest(request('FP64', [1, '2.5', 3, 4]), schema);
  assert.equal(strings.ok, false);
  if (!strings.ok) {
    assert.equal(strings.code, 'KILN_INVALID_TENSOR');
    assert.match(strings.message, /input 'input': element 1 .*is a string, expected FP64 numbers/);
  }
  const shape = decodeInferRequest(
    { inputs: [{ name: 'input', datatype: 'INT32', shape: [1, 3], data: [1, 2, 3] }] },
    schema,
  );
  assert.equal(shape.ok, false);
  if (!shape.ok) assert.match(shape.message, /expected shape \[-1, 2\], got \[1, 3\]/);
});

test('an exact input keeps refusing any other datatype', () => {
  const schema = compileSchema(treeSchema);
  const result = decodeInferRequest(request('FP32'), schema);
  assert.equal(result.ok, false);
  if (!result.ok) {
    assert.equal(result.code, 'KILN_INPUT_MISMATCH');
    assert.equal(result.message, "input 'input': expected datatype FP64, got FP32");
  }
});
