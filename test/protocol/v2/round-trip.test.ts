// Property-style: random tensors of every datatype, shape and value (NaN, ±Infinity, -0,
// subnormals, integer extremes, awkward strings), encoded as v2 JSON, parsed and decoded
// again, flat and re-nested, must come back as the same tensors.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Tensor, TensorData, TensorDatatype } from '../../../src/core/tensor.ts';
import { elementCount, tensorDatatypes } from '../../../src/core/tensor.ts';
import { numberFromBf16Bits, numberFromFp16Bits } from '../../../src/protocol/v2/datatypes.ts';
import { decodeInferRequest, parseInferRequest } from '../../../src/protocol/v2/decode-request.ts';
import { encodeInferResponse, encodeTensorList } from '../../../src/protocol/v2/encode-response.ts';
import { parseJsonLenient } from '../../../src/protocol/v2/lenient-json.ts';
import type { SeededRandom } from './seeded-random.ts';
import { seededRandom } from './seeded-random.ts';

function randomShape(random: SeededRandom): number[] {
  const rank = random.int(0, 4);
  const shape: number[] = [];
  for (let d = 0; d < rank; d++) shape.push(random.int(0, rank > 2 ? 3 : 6));
  return shape;
}

function randomBigInt64(random: SeededRandom, signed: boolean): bigint {
  const choice = random.int(0, 9);
  if (choice === 0) return signed ? -(2n ** 63n) : 0n;
  if (choice === 1) return signed ? 2n ** 63n - 1n : 2n ** 64n - 1n;
  if (choice === 2) return BigInt(signed ? random.int(-1000, 1000) : random.int(0, 1000));
  const bits = (BigInt(random.bits32()) << 32n) | BigInt(random.bits32());
  return signed ? BigInt.asIntN(64, bits) : bits;
}

function randomString(random: SeededRandom): string {
  const pieces = [
    'a',
    'é',
    '😀',
    '"',
    '\\',
    '\n',
    '\u0000',
    'NaN',
    'Infinity',
    ' ',
    '\ud800',
    '12345678901234567890',
  ];
  let text = '';
  for (let i = random.int(0, 5); i > 0; i--) text += random.pick(pieces);
  return text;
}

function randomData(random: SeededRandom, datatype: TensorDatatype, count: number): TensorData {
  const words = new Uint32Array(count * 2);
  for (let i = 0; i < words.length; i++) words[i] = random.bits32();
  switch (datatype) {
    case 'BOOL':
      return Uint8Array.from({ length: count }, () => random.int(0, 1));
    case 'UINT8':
      return new Uint8Array(words.buffer, 0, count);
    case 'INT8':
      return new Int8Array(words.buffer, 0, count);
    case 'UINT16':
      return new Uint16Array(words.buffer, 0, count);
    case 'INT16':
      return new Int16Array(words.buffer, 0, count);
    case 'UINT32':
      return new Uint32Array(words.buffer, 0, count);
    case 'INT32':
      return new Int32Array(words.buffer, 0, count);
    case 'FP16':
    case 'BF16':
      return new Uint16Array(words.buffer, 0, count);
    case 'FP32':
      return new Float32Array(words.buffer, 0, count);
    case 'FP64':
      return new Float64Array(words.buffer, 0, count);
    case 'INT64':
      return BigInt64Array.from({ length: count }, () => randomBigInt64(random, true));
    case 'UINT64':
      return BigUint64Array.from({ length: count }, () => randomBigInt64(random, false));
    case 'BYTES':
      return Array.from({ length: count }, () => randomString(random));
  }
}

/** Comparable values: NaN payloads and the sign of zero are not carried by JSON. */
function comparable(datatype: TensorDatatype, data: TensorData): unknown[] {
  const float = (v: number): unknown => (Number.isNaN(v) ? 'NaN' : v === 0 ? 0 : v);
  if (datatype === 'FP16')
    return Array.from(data as Uint16Array, (b) => float(numberFromFp16Bits(b)));
  if (datatype === 'BF16')
    return Array.from(data as Uint16Array, (b) => float(numberFromBf16Bits(b)));
  if (datatype === 'FP32' || datatype === 'FP64') return Array.from(data as Float32Array, float);
  return Array.from(data as ArrayLike<unknown>);
}

/** Re-nests flat data to match `shape` (the other form v2 allows). */
function nest(flat: readonly unknown[], shape: readonly number[]): unknown[] {
  if (shape.length <= 1) return [...flat];
  let level: unknown[] = [...flat];
  for (let d = shape.length - 1; d >= 1; d--) {
    const size = shape[d] ?? 0;
    const next: unknown[] = [];
    const groups = elementCount(shape.slice(0, d));
    for (let g = 0; g < groups; g++) next.push(level.slice(g * size, (g + 1) * size));
    level = next;
  }
  return level;
}

function assertSameTensors(
  actual: readonly Tensor[],
  expected: readonly Tensor[],
  context: string,
): void {
  assert.equal(actual.length, expected.length, context);
  for (let i = 0; i < expected.length; i++) {
    const a = actual[i] as Tensor;
    const e = expected[i] as Tensor;
    assert.equal(a.name, e.name, context);
    assert.equal(a.datatype, e.datatype, context);
    assert.deepEqual(a.shape, e.shape, context);
    assert.equal(a.data.constructor, e.data.constructor, `${context}: ${e.datatype} container`);
    assert.deepEqual(
      comparable(a.datatype, a.data),
      comparable(e.datatype, e.data),
      `${context}: ${e.datatype}`,
    );
  }
}

test('encode → parse → decode gives back the same tensors (random datatypes, shapes, values)', () => {
  const random = seededRandom(20240611);
  for (let round = 0; round < 400; round++) {
    const tensors: Tensor[] = [];
    for (let i = random.int(1, 3); i > 0; i--) {
      const datatype = random.pick(tensorDatatypes);
      const shape = randomShape(random);
      tensors.push({
        name: `t${tensors.length}`,
        datatype,
        shape,
        data: randomData(random, datatype, elementCount(shape)),
      });
    }
    const context = `round ${round}`;
    // 1. The response, parsed with exact integers, decoded as if it were a request.
    const responseText = encodeInferResponse(
      { outputs: tensors },
      { modelName: 'm', id: `r${round}` },
    );
    const parsed = parseJsonLenient(responseText, { exactIntegers: true });
    assert.ok(parsed.ok, context);
    const body = parsed.value as { id: string; outputs: { shape: number[]; data: unknown[] }[] };
    const fromResponse = decodeInferRequest({ id: body.id, inputs: body.outputs }, null);
    assert.ok(fromResponse.ok, fromResponse.ok ? '' : `${context}: ${fromResponse.message}`);
    assert.equal(fromResponse.request.id, `r${round}`);
    assertSameTensors(fromResponse.request.inputs, tensors, `${context} (response)`);
    // 2. The same tensors as a request text, through the raw-body path.
    const requestText = `{"inputs":${encodeTensorList(tensors)}}`;
    const fromText = parseInferRequest(requestText, null);
    assert.ok(fromText.ok, fromText.ok ? '' : `${context}: ${fromText.message}`);
    assertSameTensors(fromText.request.inputs, tensors, `${context} (text)`);
    // 3. Nested data instead of flat.
    const nested = body.outputs.map((o) => ({ ...o, data: nest(o.data, o.shape) }));
    const fromNested = decodeInferRequest({ inputs: nested }, null);
    assert.ok(fromNested.ok, fromNested.ok ? '' : `${context}: ${fromNested.message}`);
    assertSameTensors(fromNested.request.inputs, tensors, `${context} (nested)`);
  }
});
