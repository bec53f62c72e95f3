import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  decodeTensorRequest,
  encodeTensorRequest,
} from '../../../src/protocol/channel/tensor-frames.ts';
import { parseInferRequest } from '../../../src/protocol/v2/decode-request.ts';

// A v2 request with one input of every fixed-size datatype, decoded by the v2 codec exactly
// as the gateway decodes it.
const body = {
  id: 'req-7',
  parameters: { output_margin: true },
  outputs: [{ name: 'y' }],
  inputs: [
    { name: 'b', datatype: 'BOOL', shape: [2], data: [true, false] },
    { name: 'u8', datatype: 'UINT8', shape: [1, 2], data: [0, 255] },
    { name: 'u16', datatype: 'UINT16', shape: [1], data: [65535] },
    { name: 'u32', datatype: 'UINT32', shape: [1], data: [4294967295] },
    { name: 'u64', datatype: 'UINT64', shape: [1], data: [18446744073709551615n] },
    { name: 'i8', datatype: 'INT8', shape: [2], data: [-128, 127] },
    { name: 'i16', datatype: 'INT16', shape: [1], data: [-32768] },
    { name: 'i32', datatype: 'INT32', shape: [1], data: [-2147483648] },
    {
      name: 'i64',
      datatype: 'INT64',
      shape: [2],
      data: [-9223372036854775808n, 9007199254740993n],
    },
    { name: 'f16', datatype: 'FP16', shape: [2], data: [1.5, -2] },
    { name: 'bf16', datatype: 'BF16', shape: [1], data: [3] },
    {
      name: 'f32',
      datatype: 'FP32',
      shape: [2, 3],
      data: [0.1, null, 3, -4, 5e-39, 6],
      parameters: { note: 'x' },
    },
    { name: 'f64', datatype: 'FP64', shape: [1], data: [0.1] },
    { name: 'empty', datatype: 'FP32', shape: [0, 4], data: [] },
  ],
};
// JSON.stringify cannot write bigints: write them as bare integer literals.
const text = JSON.stringify(body, (_key, value: unknown) =>
  typeof value === 'bigint' ? `@@${value}@@` : value,
).replace(/"@@(-?\d+)@@"/g, '$1');

function decoded() {
  const result = parseInferRequest(text, null);
  if (!result.ok) assert.fail(result.message);
  return result.request;
}

test('every fixed-size datatype survives a tensors frame bit for bit', () => {
  const request = decoded();
  const frame = encodeTensorRequest(request, '250', 'high');
  assert.ok(frame !== null);
  const back = decodeTensorRequest(frame.meta, frame.body);
  if (!back.ok) assert.fail(back.message);
  assert.equal(back.timeoutHeader, '250');
  assert.equal(back.priorityHeader, 'high');
  assert.equal(back.request.id, 'req-7');
  assert.deepEqual(back.request.parameters, request.parameters);
  assert.deepEqual(back.request.outputs, request.outputs);
  assert.equal(back.request.inputs.length, request.inputs.length);
  request.inputs.forEach((input, i) => {
    const got = back.request.inputs[i]!;
    assert.equal(got.name, input.name);
    assert.equal(got.datatype, input.datatype);
    assert.deepEqual(got.shape, input.shape);
    assert.deepEqual(got.parameters, input.parameters);
    assert.equal(got.data.constructor, input.data.constructor, input.name);
    // Compared as bytes: NaN (the null) and denormals must come back identical.
    const bytes = (d: unknown): Buffer => {
      const view = d as ArrayBufferView;
      return Buffer.from(view.buffer, view.byteOffset, view.byteLength);
    };
    assert.deepEqual(bytes(got.data), bytes(input.data), input.name);
  });
  // The copy is the worker's own: changing the frame's bytes changes nothing decoded.
  frame.body.fill(0);
  assert.equal((back.request.inputs[11]!.data as Float32Array)[3], -4);
});

test('a request with a BYTES input is not sent as tensors', () => {
  const result = parseInferRequest(
    JSON.stringify({ inputs: [{ name: 's', datatype: 'BYTES', shape: [1], data: ['hi'] }] }),
    null,
  );
  assert.ok(result.ok);
  assert.equal(encodeTensorRequest(result.request, undefined, undefined), null);
});

test('a malformed tensors frame is refused with a reason, never thrown', () => {
  const frame = encodeTensorRequest(decoded(), undefined, undefined)!;
  const cases: [string, Buffer, RegExp][] = [
    ['not json', frame.body, /not JSON/],
    ['{}', frame.body, /without inputs/],
    ['{"i":[["x","FP32",[2],0,8]]}', Buffer.alloc(4), /malformed input entry/],
    ['{"i":[["x","FP32",[3],0,8]]}', Buffer.alloc(8), /8 bytes for 3 FP32/],
    ['{"i":[["x","NOPE",[1],0,4]]}', Buffer.alloc(4), /malformed input entry/],
    ['{"i":[["x","BYTES",[1],0,4]]}', Buffer.alloc(4), /malformed input entry/],
    ['{"i":[["x","FP32",[-1],0,4]]}', Buffer.alloc(4), /malformed input entry/],
  ];
  for (const [meta, bytes, message] of cases) {
    const result = decodeTensorRequest(meta, bytes);
    assert.equal(result.ok, false, meta);
    if (!result.ok) assert.match(result.message, message, meta);
  }
});
