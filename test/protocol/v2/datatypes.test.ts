import { test } from 'node:test';
import assert from 'node:assert/strict';
import { tensorDatatypes } from '../../../src/core/tensor.ts';
import {
  bf16BitsFromNumber,
  datatypeInfo,
  fp16BitsFromNumber,
  isTensorDatatype,
  numberFromBf16Bits,
  numberFromFp16Bits,
} from '../../../src/protocol/v2/datatypes.ts';

// Reference bit patterns from numpy 2.4 (float64 → float16 in one rounding).
const fp16Reference: readonly (readonly [number, number])[] = [
  [1.0, 15360],
  [-2.0, 49152],
  [65504.0, 31743],
  [65519.99, 31743],
  [65520.0, 31744],
  [2 ** -24, 1],
  [2 ** -25, 0],
  [1.5 * 2 ** -25, 1],
  [2 ** -14, 1024],
  [0.1, 11878],
  [1 / 3, 13653],
  [-0.0, 32768],
  [1.00048828125, 15360],
  [1.00146484375, 15362],
  [2049.0, 26624],
  [2051.0, 26626],
  [1.0004882812509095, 15361], // double → float32 → float16 would give 15360
  [6.1e-5, 1023],
  [-3.5e-6, 32827],
  [1e-8, 0],
  [100000.0, 31744],
  [-0.0001851492239568219, 35345],
  [-0.0014624336122121297, 38397],
  [-1.2275831124373287e-7, 32770],
  [-0.000626210148750654, 37153],
  [-4729.823562188122, 60574],
  [4.439023707423999e-8, 1],
  [2.0899134901648352e-7, 4],
  [-8.328553868278594e-8, 32769],
  [-14192.955567294031, 62190],
  [0.294905338074037, 13496],
];

// Reference bit patterns from an exact (rational arithmetic) round-half-even in Python.
const bf16Reference: readonly (readonly [number, number])[] = [
  [1.0, 16256],
  [-2.0, 49152],
  [3.140625, 16457],
  [Math.PI, 16457],
  [1.00390625, 16256],
  [1.01171875, 16258],
  [3.3895313892515355e38, 32639],
  [2 ** -133, 1],
  [2 ** -134, 0],
  [1.5 * 2 ** -134, 1],
  [2 ** -126, 128],
  [0.1, 15821],
  [-0.0, 32768],
  [1e38, 32406],
  [3.3961775292304e38, 32639],
  [2 ** 128 - 2 ** 119, 32640],
  [2 ** 128 - 2 ** 119 - 2 ** 90, 32639],
  [1.0966350530105464e-5, 14136],
  [-9.928918393835245e-6, 46887],
  [8.41561468866992e-27, 5159],
  [-1095750884.041524, 52867],
  [6.08771474019385e-34, 2122],
  [-3.5019699703255535e-30, 36494],
  [2103506.040392302, 18944],
  [-2.826575697571997e35, 64090],
  [-1.1421886631088195e-36, 33730],
  [5.373420035246438e20, 25065],
];

test('FP16: number → bits rounds to nearest even in one step (numpy reference values)', () => {
  for (const [value, bits] of fp16Reference) {
    assert.equal(fp16BitsFromNumber(value), bits, `fp16(${value})`);
  }
  assert.equal(fp16BitsFromNumber(NaN), 0x7e00);
  assert.equal(fp16BitsFromNumber(Infinity), 0x7c00);
  assert.equal(fp16BitsFromNumber(-Infinity), 0xfc00);
});

test('BF16: number → bits rounds to nearest even in one step (exact reference values)', () => {
  for (const [value, bits] of bf16Reference) {
    assert.equal(bf16BitsFromNumber(value), bits, `bf16(${value})`);
  }
  assert.equal(bf16BitsFromNumber(NaN), 0x7fc0);
  assert.equal(bf16BitsFromNumber(-Infinity), 0xff80);
});

test('FP16 and BF16 bits → number is exact, and every finite pattern survives a round trip', () => {
  assert.equal(numberFromFp16Bits(0x3c00), 1);
  assert.equal(numberFromFp16Bits(0x7bff), 65504);
  assert.equal(numberFromFp16Bits(0x0001), 2 ** -24);
  assert.equal(numberFromFp16Bits(0x2e66), 0.0999755859375);
  assert.equal(numberFromFp16Bits(0xfc00), -Infinity);
  assert.ok(Number.isNaN(numberFromFp16Bits(0x7e01)));
  assert.ok(Object.is(numberFromFp16Bits(0x8000), -0));
  assert.equal(numberFromBf16Bits(0x3f80), 1);
  assert.equal(numberFromBf16Bits(0x7f7f), 3.3895313892515355e38);
  assert.equal(numberFromBf16Bits(0x0001), 2 ** -133);
  assert.equal(numberFromBf16Bits(0xc049), -3.140625);
  assert.ok(Number.isNaN(numberFromBf16Bits(0x7fc0)));
  for (let bits = 0; bits < 0x10000; bits++) {
    const half = numberFromFp16Bits(bits);
    if (!Number.isNaN(half)) assert.equal(fp16BitsFromNumber(half), bits);
    const brain = numberFromBf16Bits(bits);
    if (!Number.isNaN(brain)) assert.equal(bf16BitsFromNumber(brain), bits);
  }
});

test('BF16 of a float32 that needs no rounding is its top 16 bits', () => {
  const word = new Float32Array(1);
  const bitsOf = new Uint32Array(word.buffer);
  for (const value of [1.5, -0.15625, 2 ** 100, -(2 ** -120), 65536]) {
    word[0] = value;
    assert.equal(bf16BitsFromNumber(value), (bitsOf[0] ?? 0) >>> 16);
  }
});

test('the datatype table covers every v2 datatype with ranges, sizes and containers', () => {
  for (const datatype of tensorDatatypes) {
    const info = datatypeInfo[datatype];
    assert.equal(info.datatype, datatype);
    const data = info.allocate(3);
    assert.equal(data.length, 3);
    assert.ok(info.holds(data), datatype);
    if (info.bytesPerElement > 0) {
      assert.equal((data as Uint8Array).BYTES_PER_ELEMENT, info.bytesPerElement, datatype);
    }
  }
  assert.deepEqual([datatypeInfo.INT8.min, datatypeInfo.INT8.max], [-128, 127]);
  assert.deepEqual([datatypeInfo.UINT8.min, datatypeInfo.UINT8.max], [0, 255]);
  assert.deepEqual([datatypeInfo.UINT32.min, datatypeInfo.UINT32.max], [0, 4294967295]);
  assert.deepEqual(
    [datatypeInfo.INT64.minBig, datatypeInfo.INT64.maxBig],
    [-(2n ** 63n), 2n ** 63n - 1n],
  );
  assert.deepEqual([datatypeInfo.UINT64.minBig, datatypeInfo.UINT64.maxBig], [0n, 2n ** 64n - 1n]);
  assert.equal(Math.fround(datatypeInfo.FP32.overflowAt), Infinity);
  assert.notEqual(Math.fround(datatypeInfo.FP32.overflowAt - 2 ** 80), Infinity);
  assert.equal(datatypeInfo.BOOL.allocate(1) instanceof Uint8Array, true);
  assert.equal(datatypeInfo.FP16.holds(new Float32Array(1)), false);
  assert.ok(isTensorDatatype('BF16'));
  assert.ok(!isTensorDatatype('FLOAT32'));
  assert.ok(!isTensorDatatype(7));
});
