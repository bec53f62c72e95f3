import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decoded, input, one, oneText, refusal } from './request-helpers.ts';

test('request structure errors are precise', () => {
  const cases: [unknown, string][] = [
    [[], 'the request body must be a JSON object, got an array'],
    [{}, "'inputs' must be an array of tensors, got nothing"],
    [{ inputs: [] }, "'inputs' is empty; send at least one input tensor"],
    [{ inputs: [5] }, 'inputs[0] must be an object, got a number'],
    [
      { inputs: [{ datatype: 'FP32', shape: [1], data: [1] }] },
      "inputs[0]: 'name' must be a non-empty string",
    ],
    [{ inputs: [input('FP32', [1], [1]), input('FP32', [1], [1])] }, "input 'x' appears twice"],
    [
      one('FLOAT32', [1], [1]),
      'input \'x\': unknown datatype "FLOAT32"; expected one of BOOL, UINT8, UINT16, UINT32, UINT64, INT8, INT16, INT32, INT64, FP16, FP32, FP64, BF16, BYTES',
    ],
    [
      one('FP32', [2, -1], [1]),
      "input 'x': 'shape' must be an array of non-negative integers, got [2,-1]",
    ],
    [
      one('FP32', '2', [1]),
      "input 'x': 'shape' must be an array of non-negative integers, got \"2\"",
    ],
    [{ inputs: [{ name: 'x', datatype: 'FP32', shape: [1] }] }, "input 'x': 'data' is missing"],
    [{ id: 7, inputs: [input('FP32', [1], [1])] }, "'id' must be a string, got a number"],
    [
      { parameters: { a: [1] }, inputs: [input('FP32', [1], [1])] },
      "'parameters': 'a' must be a string, number or boolean, got an array",
    ],
    [
      { inputs: [input('FP32', [1], [1], { parameters: { b: null } })] },
      "input 'x': 'parameters': 'b' must be a string, number or boolean, got null",
    ],
    [
      { inputs: [input('FP32', [1], [1])], outputs: 'y' },
      '\'outputs\' must be an array of {"name"} objects, got a string',
    ],
    [
      { inputs: [input('FP32', [1], [1])], outputs: [{ name: 'y' }, { name: 'y' }] },
      "output 'y' is requested twice",
    ],
    [
      { inputs: [input('FP32', [1], [1])], outputs: [{}] },
      "outputs[0] must be an object with a non-empty 'name'",
    ],
  ];
  for (const [body, message] of cases) {
    assert.equal(refusal(body as object, 'KILN_INVALID_INFER_REQUEST'), message);
  }
});

test('binary tensor data and classification are refused as unsupported extensions', () => {
  const binary = {
    inputs: [{ name: 'x', datatype: 'FP32', shape: [2], parameters: { binary_data_size: 8 } }],
  };
  assert.equal(
    refusal(binary, 'KILN_UNSUPPORTED_EXTENSION'),
    "input 'x': binary tensor data extension is not supported; send JSON data",
  );
  const classification = {
    inputs: [input('FP32', [1], [1])],
    outputs: [{ name: 'y', parameters: { classification: 3 } }],
  };
  assert.equal(
    refusal(classification, 'KILN_UNSUPPORTED_EXTENSION'),
    "output 'y': the classification extension is not supported",
  );
});

test('id, parameters, input parameters and requested outputs come through', () => {
  const request = decoded(
    '{"id":"r-1","parameters":{"output_margin":true,"k":3},"inputs":[{"name":"x","datatype":"FP32","shape":[1],"data":[1],"parameters":{"content_type":"np"}}],"outputs":[{"name":"y","parameters":{"binary_data":true}},{"name":"z"}]}',
  );
  assert.equal(request.id, 'r-1');
  assert.deepEqual(request.parameters, { output_margin: true, k: 3 });
  assert.deepEqual(request.outputs, ['y', 'z']);
  assert.deepEqual(request.inputs[0]?.parameters, { content_type: 'np' });
  const bare = decoded(oneText('FP32', '[1]', '[1]'));
  assert.deepEqual(Object.keys(bare), ['inputs']);
  assert.deepEqual(Object.keys(bare.inputs[0] ?? {}), ['name', 'datatype', 'shape', 'data']);
  // An empty outputs list means all outputs, as when it is absent.
  assert.equal(
    decoded('{"inputs":[{"name":"x","datatype":"FP32","shape":[1],"data":[1]}],"outputs":[]}')
      .outputs,
    undefined,
  );
});
