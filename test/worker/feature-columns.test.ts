// Declared feature columns for tree models: when a schema is one, and how a request's columns
// (any order, any numeric datatype) become the runtime's [N, F] FP64 rows.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { featureColumnLayout } from '../../src/worker/feature-columns.ts';

const outputs = [{ name: 'p', datatype: 'FP32' as const, shape: [-1] }];

test('a schema is feature columns when every input is one numeric value a row', () => {
  const columns = {
    inputs: [
      { name: 'a', datatype: 'FP32' as const, shape: [-1] },
      { name: 'b', datatype: 'INT64' as const, shape: [-1, 1] },
    ],
    outputs,
  };
  assert.deepEqual(featureColumnLayout('xgboost', columns)?.runtimeSchema, {
    inputs: [{ name: 'input', datatype: 'FP64', shape: [-1, 2] }],
    outputs,
  });
  assert.equal(featureColumnLayout('onnx', columns), null);
  assert.equal(featureColumnLayout('lightgbm', null), null);
  const matrix = { inputs: [{ name: 'x', datatype: 'FP32' as const, shape: [-1, 1] }], outputs };
  assert.equal(featureColumnLayout('lightgbm', matrix), null); // the model's own [-1, 1] input
  const one = { inputs: [{ name: 'x', datatype: 'FP32' as const, shape: [-1] }], outputs };
  assert.notEqual(featureColumnLayout('lightgbm', one), null);
  const mixed = {
    inputs: [...columns.inputs, { name: 'c', datatype: 'FP32' as const, shape: [-1, 3] }],
    outputs,
  };
  assert.equal(featureColumnLayout('xgboost', mixed), null);
  const words = {
    inputs: [...columns.inputs, { name: 'w', datatype: 'BYTES' as const, shape: [-1] }],
    outputs,
  };
  assert.equal(featureColumnLayout('xgboost', words), null);
});

test('columns are joined into rows in the declared order, whatever order they came in', () => {
  const layout = featureColumnLayout('lightgbm', {
    inputs: [
      { name: 'a', datatype: 'FP32', shape: [-1] },
      { name: 'b', datatype: 'INT64', shape: [-1, 1] },
      { name: 'c', datatype: 'FP16', shape: [-1] },
    ],
    outputs,
  });
  assert.ok(layout !== null);
  const joined = layout.join({
    id: 'r',
    parameters: { output_margin: true },
    inputs: [
      { name: 'c', datatype: 'FP16', shape: [2], data: new Uint16Array([0x3c00, 0x7e00]) },
      { name: 'a', datatype: 'FP32', shape: [2], data: new Float32Array([0.5, -1]) },
      { name: 'b', datatype: 'INT64', shape: [2, 1], data: new BigInt64Array([7n, -9n]) },
    ],
  });
  assert.equal(joined.id, 'r');
  assert.deepEqual(joined.parameters, { output_margin: true });
  assert.deepEqual(joined.inputs, [
    {
      name: 'input',
      datatype: 'FP64',
      shape: [2, 3],
      data: new Float64Array([0.5, 7, 1, -1, -9, Number.NaN]),
    },
  ]);
});

test('an INT64 column past 2^53 reaches XGBoost in one rounding, as its cast of the column does', () => {
  // 2^60 + 2^36 + 1 is 2^60 + 2^37 in float32 (one rounding, as a plain INT64 tensor gets);
  // through a double it becomes a tie that rounds down to 2^60. LightGBM reads one double.
  const schema = {
    inputs: [
      { name: 'a', datatype: 'INT64' as const, shape: [-1] },
      { name: 'b', datatype: 'FP64' as const, shape: [-1] },
    ],
    outputs,
  };
  const request = {
    inputs: [
      {
        name: 'a',
        datatype: 'INT64' as const,
        shape: [1],
        data: new BigInt64Array([2n ** 60n + 2n ** 36n + 1n]),
      },
      { name: 'b', datatype: 'FP64' as const, shape: [1], data: new Float64Array([0.1]) },
    ],
  };
  const xgboost = featureColumnLayout('xgboost', schema)?.join(request).inputs[0];
  const [big, small] = Array.from(xgboost?.data as ArrayLike<number>, Math.fround);
  assert.equal(big, 2 ** 60 + 2 ** 37);
  assert.equal(small, Math.fround(0.1));
  const lightgbm = featureColumnLayout('lightgbm', schema)?.join(request).inputs[0];
  assert.deepEqual(lightgbm?.data, new Float64Array([2 ** 60 + 2 ** 36, 0.1]));
});
