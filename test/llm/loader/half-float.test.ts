import { test } from 'node:test';
import assert from 'node:assert/strict';
import { bfloat16ToFloat32, float16ToFloat32 } from '../../../src/llm/loader/half-float.ts';

function widen16(kind: 'F16' | 'BF16', bits: readonly number[]): Float32Array {
  const out = new Float32Array(bits.length);
  (kind === 'F16' ? float16ToFloat32 : bfloat16ToFloat32)(Uint16Array.from(bits), out, 0);
  return out;
}

function float32Bits(values: Float32Array): number[] {
  return Array.from(new Uint32Array(values.buffer, values.byteOffset, values.length));
}

void test('F16 special values decode exactly', () => {
  const cases: [number, number][] = [
    [0x0000, 0],
    [0x3c00, 1],
    [0xc000, -2],
    [0x3555, 0.333251953125],
    [0x7bff, 65504], // largest finite
    [0x0400, 2 ** -14], // smallest normal
    [0x0001, 2 ** -24], // smallest subnormal
    [0x03ff, 1023 * 2 ** -24], // largest subnormal
    [0x8001, -(2 ** -24)],
    [0x7c00, Infinity],
    [0xfc00, -Infinity],
  ];
  const out = widen16(
    'F16',
    cases.map(([bits]) => bits),
  );
  assert.deepEqual(
    Array.from(out),
    cases.map(([, value]) => value),
  );
  const negativeZero = widen16('F16', [0x8000])[0];
  assert.ok(Object.is(negativeZero, -0), 'F16 0x8000 is negative zero');
});

void test('F16 NaNs stay NaN with their payload in the top mantissa bits', () => {
  const out = widen16('F16', [0x7e00, 0xfe00, 0x7c01, 0x7dff]);
  assert.ok(Array.from(out).every(Number.isNaN));
  assert.deepEqual(float32Bits(out), [0x7fc00000, 0xffc00000, 0x7f802000, 0x7fbfe000]);
});

void test('every one of the 65,536 F16 patterns decodes to the value the format defines', () => {
  const bits = Array.from({ length: 65536 }, (_, i) => i);
  const out = widen16('F16', bits);
  for (const pattern of bits) {
    const sign = pattern & 0x8000 ? -1 : 1;
    const exponent = (pattern >> 10) & 0x1f;
    const mantissa = pattern & 0x3ff;
    const value = out[pattern] ?? 0;
    if (exponent === 0x1f) {
      if (mantissa === 0) assert.equal(value, sign * Infinity);
      else assert.ok(Number.isNaN(value), `0x${pattern.toString(16)} should be NaN`);
      continue;
    }
    const expected =
      exponent === 0
        ? sign * mantissa * 2 ** -24
        : sign * (1 + mantissa / 1024) * 2 ** (exponent - 15);
    assert.ok(Object.is(value, expected), `0x${pattern.toString(16)}: ${value} vs ${expected}`);
  }
});

void test('BF16 values decode exactly: the top half of a float32', () => {
  const cases: [number, number][] = [
    [0x3f80, 1],
    [0xc000, -2],
    [0x4049, 3.140625],
    [0x7f7f, 3.3895313892515355e38], // largest finite
    [0x0080, 2 ** -126], // smallest normal
    [0x0001, 2 ** -133], // smallest subnormal
    [0x007f, 127 * 2 ** -133], // largest subnormal
    [0x7f80, Infinity],
    [0xff80, -Infinity],
  ];
  const out = widen16(
    'BF16',
    cases.map(([bits]) => bits),
  );
  assert.deepEqual(
    Array.from(out),
    cases.map(([, value]) => value),
  );
  assert.ok(Object.is(widen16('BF16', [0x8000])[0], -0), 'BF16 0x8000 is negative zero');
  const nans = widen16('BF16', [0x7fc0, 0xffc1, 0x7f81]);
  assert.ok(Array.from(nans).every(Number.isNaN));
  assert.deepEqual(float32Bits(nans), [0x7fc00000, 0xffc10000, 0x7f810000]);
});

void test('conversion writes at the target offset and nowhere else', () => {
  const target = new Float32Array([9, 9, 9, 9, 9]);
  float16ToFloat32(Uint16Array.from([0x3c00, 0x4000]), target, 2);
  assert.deepEqual(Array.from(target), [9, 9, 1, 2, 9]);
  bfloat16ToFloat32(Uint16Array.from([0x4040]), target, 0);
  assert.deepEqual(Array.from(target), [3, 9, 1, 2, 9]);
});
