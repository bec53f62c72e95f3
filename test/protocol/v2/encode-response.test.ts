import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Tensor } from '../../../src/core/tensor.ts';
import {
  encodeInferResponse,
  encodeTensor,
  encodeTensorData,
} from '../../../src/protocol/v2/encode-response.ts';

const t = (tensor: Tensor): Tensor => tensor;

test('the envelope carries model name, version, id and parameters only when given', () => {
  const outputs = [
    t({ name: 'y', datatype: 'FP32', shape: [2], data: new Float32Array([1, 2.5]) }),
  ];
  assert.equal(
    encodeInferResponse(
      { outputs },
      { modelName: 'fraud', modelVersion: '3', id: 'r-1', parameters: { a: 1 } },
    ),
    '{"model_name":"fraud","model_version":"3","id":"r-1","parameters":{"a":1},"outputs":[{"name":"y","datatype":"FP32","shape":[2],"data":[1,2.5]}]}',
  );
  assert.equal(
    encodeInferResponse({ outputs: [] }, { modelName: 'a"b' }),
    '{"model_name":"a\\"b","outputs":[]}',
  );
});

test('each datatype’s data is written as v2 JSON', () => {
  const cases: [Tensor, string][] = [
    [
      t({ name: 'b', datatype: 'BOOL', shape: [3], data: new Uint8Array([1, 0, 1]) }),
      '[true,false,true]',
    ],
    [t({ name: 'u', datatype: 'UINT8', shape: [2], data: new Uint8Array([0, 255]) }), '[0,255]'],
    [
      t({ name: 'u', datatype: 'UINT32', shape: [1], data: new Uint32Array([4294967295]) }),
      '[4294967295]',
    ],
    [
      t({ name: 'i', datatype: 'INT8', shape: [2], data: new Int8Array([-128, 127]) }),
      '[-128,127]',
    ],
    [t({ name: 'i', datatype: 'INT16', shape: [1], data: new Int16Array([-32768]) }), '[-32768]'],
    [
      t({ name: 'i', datatype: 'INT32', shape: [1], data: new Int32Array([-2147483648]) }),
      '[-2147483648]',
    ],
    [
      t({
        name: 'i',
        datatype: 'INT64',
        shape: [3],
        data: new BigInt64Array([-(2n ** 63n), 2n ** 63n - 1n, 2n ** 53n + 1n]),
      }),
      '[-9223372036854775808,9223372036854775807,9007199254740993]',
    ],
    [
      t({
        name: 'u',
        datatype: 'UINT64',
        shape: [2],
        data: new BigUint64Array([0n, 2n ** 64n - 1n]),
      }),
      '[0,18446744073709551615]',
    ],
    [
      t({
        name: 'h',
        datatype: 'FP16',
        shape: [4],
        data: new Uint16Array([0x3c00, 0x2e66, 0x0001, 0xfbff]),
      }),
      '[1,0.0999755859375,5.960464477539063e-8,-65504]',
    ],
    [
      t({ name: 'h', datatype: 'BF16', shape: [2], data: new Uint16Array([0x4049, 0x7f7f]) }),
      '[3.140625,3.3895313892515355e+38]',
    ],
    [
      t({ name: 'f', datatype: 'FP32', shape: [2], data: new Float32Array([0.1, -2]) }),
      '[0.10000000149011612,-2]',
    ],
    [
      t({ name: 'f', datatype: 'FP64', shape: [2], data: new Float64Array([0.1, 5e-324]) }),
      '[0.1,5e-324]',
    ],
    [
      t({ name: 's', datatype: 'BYTES', shape: [3], data: ['a', '"q"\n', 'é'] }),
      '["a","\\"q\\"\\n","é"]',
    ],
  ];
  for (const [tensor, json] of cases) {
    assert.equal(encodeTensorData(tensor.datatype, tensor.data), json, tensor.datatype);
  }
});

test('NaN is written as null and ±Infinity as ±1e999: valid JSON that reads back as the same values', () => {
  const data = new Float32Array([NaN, Infinity, -Infinity, 1, -0]);
  const json = encodeTensorData('FP32', data);
  assert.equal(json, '[null,1e999,-1e999,1,0]');
  assert.deepEqual(JSON.parse(json), [null, Infinity, -Infinity, 1, 0]);
  assert.equal(encodeTensorData('FP64', new Float64Array([-Infinity])), '[-1e999]');
  assert.equal(
    encodeTensorData('FP16', new Uint16Array([0x7e00, 0x7c00, 0xfc00])),
    '[null,1e999,-1e999]',
  );
  assert.equal(encodeTensorData('BF16', new Uint16Array([0x7fc0, 0xff80])), '[null,-1e999]');
});

test('a tensor object has name, datatype, shape, parameters (if any) and flat data', () => {
  assert.equal(
    encodeTensor({
      name: 'p',
      datatype: 'FP64',
      shape: [2, 2],
      data: new Float64Array([1, 2, 3, 4]),
      parameters: { content_type: 'np' },
    }),
    '{"name":"p","datatype":"FP64","shape":[2,2],"parameters":{"content_type":"np"},"data":[1,2,3,4]}',
  );
  assert.equal(
    encodeTensor({ name: 's', datatype: 'INT32', shape: [], data: new Int32Array([7]) }),
    '{"name":"s","datatype":"INT32","shape":[],"data":[7]}',
  );
});

test('an output whose data does not fit its datatype or shape is a bug, and throws', () => {
  assert.throws(
    () => encodeTensor({ name: 'y', datatype: 'FP32', shape: [3], data: new Float32Array(2) }),
    /cannot encode tensor 'y': 2 elements for shape \[3\] \(3\)/,
  );
  assert.throws(
    () => encodeTensor({ name: 'y', datatype: 'FP32', shape: [2], data: new Float64Array(2) }),
    /its data is not the array FP32 uses/,
  );
  assert.throws(
    () => encodeTensor({ name: 'y', datatype: 'FP32', shape: [-1], data: new Float32Array(1) }),
    /shape \[-1\] is not concrete/,
  );
});
