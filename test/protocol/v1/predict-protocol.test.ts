// The v1 predict codec and the input-name forms, as pure functions: v1 bodies into plain v2
// bodies, v2 answers into `predictions` (digit for digit), named features into rows.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { adaptInferBody } from '../../../src/gateway/request-check.ts';
import { v1PredictToV2 } from '../../../src/protocol/v1/predict-request.ts';
import { v1PredictResponse } from '../../../src/protocol/v1/predict-response.ts';
import { compileInputNaming, renameRequestInputs } from '../../../src/protocol/v2/input-naming.ts';
import { compileSchema } from '../../../src/protocol/v2/schema.ts';

const treeSchema = compileSchema({
  inputs: [{ name: 'input', datatype: 'FP32', shape: [-1, 3] }],
  outputs: [{ name: 'output', datatype: 'FP32', shape: [-1] }],
});
const naming = compileInputNaming(treeSchema, { declared: false, featureNames: ['a', 'b', 'c'] });

test('answers keep the v2 digits: exact INT64, NaN as null, infinities as ±1e999', () => {
  const v2 =
    '{"model_name":"m","outputs":[{"name":"y","datatype":"INT64","shape":[2],"data":[9007199254740993,-1]}]}';
  assert.equal(v1PredictResponse(v2), '{"predictions":[9007199254740993,-1]}');
  const floats =
    '{"model_name":"m","outputs":[{"name":"p","datatype":"FP32","shape":[1,3],"data":[0.10000000149011612,null,-1e999]}]}';
  assert.equal(v1PredictResponse(floats), '{"predictions":[[0.10000000149011612,null,-1e999]]}');
  const nested = '{"outputs":[{"name":"t","datatype":"FP32","shape":[1,2,2],"data":[1,2,3,4]}]}';
  assert.equal(v1PredictResponse(nested), '{"predictions":[[[1,2],[3,4]]]}');
});

test('outputs that disagree on rows come back columnar, as TensorFlow Serving answers', () => {
  const v2 =
    '{"outputs":[{"name":"y","datatype":"FP32","shape":[2],"data":[1,2]},{"name":"n","datatype":"INT64","shape":[1],"data":[7]}]}';
  assert.equal(v1PredictResponse(v2), '{"outputs":{"y":[1,2],"n":[7]}}');
  assert.equal(v1PredictResponse('{"error":"x"}'), null);
  assert.equal(v1PredictResponse('{"outputs":[{"name":"y","shape":[3],"data":[1]}]}'), null);
});

test('instances as objects of a multi-input model are stacked per input', () => {
  const schema = compileSchema({
    inputs: [
      { name: 'words', datatype: 'BYTES', shape: [-1] },
      { name: 'x', datatype: 'FP32', shape: [-1, 2] },
    ],
    outputs: [{ name: 'y', datatype: 'FP32', shape: [-1] }],
  });
  const result = v1PredictToV2(
    {
      instances: [
        { words: 'hi', x: [1, 2] },
        { x: [3, 4], words: 'yo' },
      ],
    },
    schema,
    null,
  );
  assert.deepEqual(result, {
    ok: true,
    body: {
      inputs: [
        { name: 'words', datatype: 'BYTES', shape: [2], data: ['hi', 'yo'] },
        {
          name: 'x',
          datatype: 'FP32',
          shape: [2, 2],
          data: [
            [1, 2],
            [3, 4],
          ],
        },
      ],
    },
  });
  const lists = v1PredictToV2({ instances: [[1, 2]] }, schema, null);
  assert.equal(lists.ok, false);
  assert.match(
    (lists as { message: string }).message,
    /takes 2 inputs \(words, x\); send each instance as an object/,
  );
  const missing = v1PredictToV2({ instances: [{ x: [1, 2] }] }, schema, null);
  assert.match(
    (missing as { message: string }).message,
    /instances\[0\]: input 'words' is missing/,
  );
});

test('v1 bodies that are not rows are named', () => {
  const cases: [unknown, RegExp][] = [
    [[1, 2], /must be a JSON object, got an array/],
    [{ instances: {} }, /'instances' must be an array of rows, got an object/],
    [{ instances: [] }, /'instances' is empty/],
    [
      { instances: [1, [2]] },
      /ragged: instances\[1\] has a list of 1 value, instances\[0\] has one value/,
    ],
  ];
  for (const [body, message] of cases) {
    const result = v1PredictToV2(body, treeSchema, naming);
    assert.equal(result.ok, false, JSON.stringify(body));
    assert.match((result as { message: string }).message, message);
  }
});

test('named features: a feature must be one column, and rows must agree', () => {
  assert.ok(naming !== null);
  const wide = renameRequestInputs(
    { inputs: [{ name: 'a', datatype: 'FP32', shape: [2, 2], data: [1, 2, 3, 4] }, { name: 'b' }] },
    naming,
  );
  assert.match(
    (wide as { message: string }).message,
    /feature 'a': shape \[2, 2\]; a feature is one value a row/,
  );
  const uneven = renameRequestInputs(
    {
      inputs: [
        { name: 'a', datatype: 'FP32', shape: [2], data: [1, 2] },
        { name: 'b', datatype: 'FP32', shape: [1], data: [1] },
      ],
    },
    naming,
  );
  assert.match(
    (uneven as { message: string }).message,
    /features disagree on the number of rows: 'a' has 2, 'b' has 1/,
  );
  const mixed = renameRequestInputs(
    {
      inputs: [
        { name: 'input', datatype: 'FP32', shape: [1, 3], data: [1, 2, 3] },
        { name: 'b', datatype: 'FP32', shape: [1], data: [1] },
      ],
    },
    naming,
  );
  assert.match(
    (mixed as { message: string }).message,
    /mixes input 'input' .* with named features/,
  );
  // The model's own input name, or a single unknown input, is not a features request.
  const renamed = renameRequestInputs({ inputs: [{ name: 'q', shape: [1, 3] }] }, naming);
  assert.deepEqual(renamed, { ok: true, body: { inputs: [{ name: 'input', shape: [1, 3] }] } });
});

test('feature names are used only when they fit the one input', () => {
  const two = compileSchema({
    inputs: [
      { name: 'x', datatype: 'FP32', shape: [-1, 3] },
      { name: 'z', datatype: 'FP32', shape: [-1, 3] },
    ],
    outputs: [],
  });
  assert.equal(compileInputNaming(two, { declared: false, featureNames: ['a', 'b', 'c'] }), null);
  assert.equal(
    compileInputNaming(treeSchema, { declared: true, featureNames: ['a', 'b'] }),
    null, // 2 names for 3 columns
  );
  assert.equal(
    compileInputNaming(treeSchema, { declared: true, featureNames: ['a', 'a', 'b'] }),
    null, // a name that cannot pick one column
  );
  assert.equal(compileInputNaming(treeSchema, undefined), null);
});

// Declared feature columns whose names are also Object.prototype's (a schema may name a
// feature anything): a row that leaves one out is missing it, not holding the inherited value.
const prototypeColumns = compileSchema({
  inputs: [
    { name: 'age', datatype: 'FP32', shape: [-1] },
    { name: 'toString', datatype: 'FP64', shape: [-1] },
  ],
  outputs: [{ name: 'p', datatype: 'FP32', shape: [-1] }],
});
const prototypeNaming = compileInputNaming(prototypeColumns, {
  declared: true,
  featureNames: null,
});

test('a row without a feature named like an Object.prototype member is missing it', () => {
  const missing = v1PredictToV2({ instances: [{ age: 1 }] }, prototypeColumns, prototypeNaming);
  assert.equal(missing.ok, false);
  assert.match(
    (missing as { message: string }).message,
    /instances\[0\]: missing feature toString/,
  );
  const allowed = v1PredictToV2(
    { instances: [{ age: 1 }], parameters: { allow_missing_features: true } },
    prototypeColumns,
    prototypeNaming,
  );
  assert.deepEqual(allowed, {
    ok: true,
    body: {
      inputs: [
        { name: 'age', datatype: 'FP32', shape: [1], data: [1] },
        { name: 'toString', datatype: 'FP64', shape: [1], data: [null] },
      ],
      parameters: { allow_missing_features: true },
    },
  });
});

test('filling missing feature columns trusts no row count the data does not hold', () => {
  assert.ok(prototypeNaming !== null);
  // A 100-byte body claiming 2^32 rows: no array of that length is built (it threw, leaving
  // the gateway's slot taken), and 3e7 rows are not allocated for one value either.
  for (const rows of [2 ** 32, 3e7]) {
    const body = {
      inputs: [{ name: 'age', datatype: 'FP32', shape: [rows], data: [1] }],
      parameters: { allow_missing_features: true },
    };
    assert.equal(renameRequestInputs(body, prototypeNaming), null, String(rows));
  }
  const fine = renameRequestInputs(
    {
      inputs: [{ name: 'age', datatype: 'FP32', shape: [2, 1], data: [[1], [2]] }],
      parameters: { allow_missing_features: true },
    },
    prototypeNaming,
  );
  assert.deepEqual((fine as { body: { inputs?: unknown[] } }).body.inputs?.[1], {
    name: 'toString',
    datatype: 'FP64',
    shape: [2],
    data: [null, null],
  });
});

test("a named INT64 feature past 2^53 gives the float32 model the plain INT64 tensor's value", () => {
  // 2^60 + 2^36 + 1 rounds to 2^60 + 2^37 in one rounding (XGBoost's cast, and what a plain
  // INT64 [1, 3] tensor gets, feature-rows.ts); through a double first it is a tie that
  // rounds down to 2^60. LightGBM's double takes one rounding to 2^60 + 2^36 either way.
  const big = '1152921573326323713';
  const text = (datatype: string): Buffer =>
    Buffer.from(
      `{"inputs":[{"name":"b","datatype":"FP32","shape":[1],"data":[2]},{"name":"a","datatype":"${datatype}","shape":[1],"data":[${big}]},{"name":"c","datatype":"FP64","shape":[1],"data":[3]}]}`,
    );
  const first = (model: typeof treeSchema, datatype: string): number => {
    const modelNaming = compileInputNaming(model, {
      declared: false,
      featureNames: ['a', 'b', 'c'],
    });
    const adapted = adaptInferBody(text(datatype), model, modelNaming, 'v2');
    assert.ok(adapted !== null && adapted.ok, JSON.stringify(adapted));
    return Number((adapted.request.inputs[0]?.data as ArrayLike<number>)[0]);
  };
  assert.equal(first(treeSchema, 'INT64'), 2 ** 60 + 2 ** 37);
  assert.equal(first(treeSchema, 'UINT64'), 2 ** 60 + 2 ** 37);
  const doubles = compileSchema({
    inputs: [{ name: 'input', datatype: 'FP64', shape: [-1, 3] }],
    outputs: [{ name: 'output', datatype: 'FP64', shape: [-1] }],
  });
  assert.equal(first(doubles, 'INT64'), 2 ** 60 + 2 ** 36);
});
