import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ModelSchema } from '../../../src/core/tensor.ts';
import {
  checkInferRequest,
  decodeInferRequest,
  parseInferRequest,
} from '../../../src/protocol/v2/decode-request.ts';
import type { CompiledSchema } from '../../../src/protocol/v2/schema.ts';
import { compileSchema } from '../../../src/protocol/v2/schema.ts';

const model: ModelSchema = {
  inputs: [
    { name: 'x', datatype: 'FP32', shape: [-1, 4] },
    { name: 'z', datatype: 'INT64', shape: [-1] },
    { name: 'table', datatype: 'FP32', shape: [3, 2] },
  ],
  outputs: [
    { name: 'y', datatype: 'FP32', shape: [-1] },
    { name: 'p', datatype: 'FP32', shape: [-1, 2] },
  ],
};

const table = { name: 'table', datatype: 'FP32', shape: [3, 2], data: [1, 2, 3, 4, 5, 6] };
const x = (rows: number): object => ({
  name: 'x',
  datatype: 'FP32',
  shape: [rows, 4],
  data: new Array<number>(rows * 4).fill(0.5),
});
const z = (rows: number): object => ({
  name: 'z',
  datatype: 'INT64',
  shape: [rows],
  data: new Array<number>(rows).fill(1),
});

function refusal(body: object, schema: CompiledSchema, code: string): string {
  const result = decodeInferRequest(body, schema);
  assert.equal(result.ok, false, `expected a refusal for ${JSON.stringify(body)}`);
  assert.deepEqual(checkInferRequest(body, schema), result, 'checkInferRequest agrees');
  if (result.ok) return '';
  assert.equal(result.code, code);
  return result.message;
}

test('compileSchema indexes inputs by name with precomputed shape text and batch flags', () => {
  const schema = compileSchema(model, { maxBatch: 8 });
  assert.deepEqual([...schema.inputs.keys()], ['x', 'z', 'table']);
  assert.equal(schema.inputNames, 'x, z, table');
  assert.equal(schema.outputNames, 'y, p');
  assert.ok(schema.outputs.has('p'));
  assert.equal(schema.maxBatch, 8);
  const compiledX = schema.inputs.get('x');
  assert.equal(compiledX?.shapeText, '[-1, 4]');
  assert.equal(compiledX?.batched, true);
  assert.equal(compiledX?.allowNonFinite, true);
  assert.equal(schema.inputs.get('table')?.batched, false);
  const strict = compileSchema(model, { allowNonFinite: (name) => name !== 'x' });
  assert.equal(strict.inputs.get('x')?.allowNonFinite, false);
  assert.equal(strict.inputs.get('table')?.allowNonFinite, true);
  assert.equal(
    compileSchema(model, { allowNonFinite: false }).inputs.get('table')?.allowNonFinite,
    false,
  );
});

test('compileSchema refuses malformed schemas', () => {
  const bad = (inputs: unknown[], message: RegExp, options = {}): void => {
    assert.throws(
      () => compileSchema({ inputs, outputs: [] } as unknown as ModelSchema, options),
      message,
    );
  };
  bad(
    [
      { name: 'a', datatype: 'FP32', shape: [1] },
      { name: 'a', datatype: 'FP32', shape: [1] },
    ],
    /declared twice/,
  );
  bad([{ name: 'a', datatype: 'FLOAT', shape: [1] }], /unknown datatype FLOAT/);
  bad([{ name: 'a', datatype: 'FP32', shape: [-2] }], /dimensions are -1 or integers ≥ 0/);
  bad([{ name: 'a', datatype: 'FP32', shape: [1.5] }], /dimensions are -1 or integers ≥ 0/);
  bad([{ name: '', datatype: 'FP32', shape: [1] }], /without a name/);
  bad([], /maxBatch must be a positive integer/, { maxBatch: 0 });
});

test('a request that matches decodes, -1 matching any size', () => {
  const schema = compileSchema(model);
  const result = decodeInferRequest(
    { inputs: [z(3), table, x(3)], outputs: [{ name: 'p' }] },
    schema,
  );
  assert.ok(result.ok, result.ok ? '' : result.message);
  assert.deepEqual(
    result.request.inputs.map((t) => t.name),
    ['z', 'table', 'x'],
  );
  assert.deepEqual(result.request.outputs, ['p']);
});

test('missing, unknown and mismatched inputs are named with what the model wants', () => {
  const schema = compileSchema(model);
  assert.equal(
    refusal({ inputs: [x(1), table] }, schema, 'KILN_INPUT_MISMATCH'),
    "missing input 'z'",
  );
  assert.equal(
    refusal({ inputs: [x(1)] }, schema, 'KILN_INPUT_MISMATCH'),
    "missing inputs 'z', 'table'",
  );
  assert.equal(
    refusal(
      { inputs: [x(1), z(1), table, { ...table, name: 'y' }] },
      schema,
      'KILN_INPUT_MISMATCH',
    ),
    "unknown input 'y'; the model takes: x, z, table",
  );
  assert.equal(
    refusal(
      { inputs: [{ ...x(1), datatype: 'FP64' }, z(1), table] },
      schema,
      'KILN_INPUT_MISMATCH',
    ),
    "input 'x': expected datatype FP32, got FP64",
  );
  assert.equal(
    refusal(
      { inputs: [{ ...x(1), shape: [2, 3], data: [1, 2, 3, 4, 5, 6] }, z(1), table] },
      schema,
      'KILN_INPUT_MISMATCH',
    ),
    "input 'x': expected shape [-1, 4], got [2, 3]",
  );
  assert.equal(
    refusal({ inputs: [{ ...x(1), shape: [4] }, z(1), table] }, schema, 'KILN_INPUT_MISMATCH'),
    "input 'x': expected shape [-1, 4], got [4]",
  );
  assert.equal(
    refusal({ inputs: [x(1), x(1), z(1), table] }, schema, 'KILN_INVALID_INFER_REQUEST'),
    "input 'x' appears twice",
  );
});

test('batched inputs (first dimension -1) must agree on the batch size; fixed ones are left out', () => {
  const schema = compileSchema(model);
  assert.equal(
    refusal({ inputs: [x(2), z(3), table] }, schema, 'KILN_INPUT_MISMATCH'),
    "inputs disagree on the batch size (first dimension): 'x' has 2, 'z' has 3",
  );
  assert.ok(decodeInferRequest({ inputs: [x(3), z(3), table] }, schema).ok);
});

test('maxBatch bounds the batch dimension', () => {
  const schema = compileSchema(model, { maxBatch: 4 });
  assert.ok(decodeInferRequest({ inputs: [x(4), z(4), table] }, schema).ok);
  assert.equal(
    refusal({ inputs: [x(5), z(5), table] }, schema, 'KILN_BATCH_TOO_LARGE'),
    "batch size 5 exceeds the model's maximum of 4; split the request",
  );
});

test('requested outputs must be outputs of the model', () => {
  const schema = compileSchema(model);
  assert.equal(
    refusal(
      { inputs: [x(1), z(1), table], outputs: [{ name: 'q' }] },
      schema,
      'KILN_INPUT_MISMATCH',
    ),
    "unknown output 'q'; the model gives: y, p",
  );
});

test('allowNonFinite: false refuses NaN, ±Infinity and null for that input only', () => {
  const schema = compileSchema(model, { allowNonFinite: (name) => name !== 'x' });
  const text = (values: string): string =>
    `{"inputs":[{"name":"x","datatype":"FP32","shape":[1,4],"data":[${values}]},{"name":"z","datatype":"INT64","shape":[1],"data":[1]},{"name":"table","datatype":"FP32","shape":[3,2],"data":[NaN,1,2,3,4,Infinity]}]}`;
  assert.ok(parseInferRequest(text('1,2,3,4'), schema).ok);
  const message = (values: string): string => {
    const result = parseInferRequest(text(values), schema);
    return result.ok ? '' : result.message;
  };
  assert.equal(
    message('1,2,NaN,4'),
    "input 'x': element 2 (index [0, 2]) is NaN; this model does not accept missing or non-finite values here",
  );
  assert.equal(
    message('1,-Infinity,3,4'),
    "input 'x': element 1 (index [0, 1]) is -Infinity; this model does not accept missing or non-finite values here",
  );
  assert.equal(
    message('null,2,3,4'),
    "input 'x': element 0 (index [0, 0]) is null (a missing value); this model does not accept missing or non-finite values here",
  );
});

test('the exact-integer re-read works with a schema and in validate-only mode', () => {
  const schema = compileSchema(model);
  const text = `{"inputs":[{"name":"x","datatype":"FP32","shape":[1,4],"data":[1,2,3,4]},{"name":"z","datatype":"INT64","shape":[1],"data":[-9223372036854775807]},{"name":"table","datatype":"FP32","shape":[3,2],"data":[1,2,3,4,5,6]}]}`;
  const result = parseInferRequest(text, schema);
  assert.ok(result.ok);
  assert.deepEqual(result.request.inputs[1]?.data, new BigInt64Array([-(2n ** 63n) + 1n]));
});
