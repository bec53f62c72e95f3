import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeUbjson, type UbjsonValue } from '../../../src/registry/formats/ubjson.ts';
import { fixtureBytes, seededBytes } from './fixtures.ts';

const bytes = (...parts: (string | number[] | Buffer)[]): Buffer =>
  Buffer.concat(
    parts.map((p) =>
      typeof p === 'string' ? Buffer.from(p, 'latin1') : Buffer.isBuffer(p) ? p : Buffer.from(p),
    ),
  );

function decode(input: Buffer): UbjsonValue {
  const result = decodeUbjson(input);
  assert.ok(result.ok, result.ok ? '' : result.reason);
  return result.value;
}

function reason(input: Buffer): string {
  const result = decodeUbjson(input);
  assert.equal(result.ok, false, 'expected a decode error');
  return result.ok ? '' : result.reason;
}

void test('scalars, big-endian', () => {
  assert.equal(decode(bytes('Z')), null);
  assert.equal(decode(bytes('T')), true);
  assert.equal(decode(bytes('F')), false);
  assert.equal(decode(bytes('i', [0xff])), -1);
  assert.equal(decode(bytes('U', [0xff])), 255);
  assert.equal(decode(bytes('I', [0x01, 0x00])), 256);
  assert.equal(decode(bytes('l', [0xff, 0xff, 0xff, 0xfe])), -2);
  assert.equal(decode(bytes('L', [0, 0, 0, 1, 0, 0, 0, 0])), 2 ** 32);
  assert.equal(
    decode(bytes('L', [0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff])),
    2n ** 63n - 1n,
  );
  assert.equal(decode(bytes('d', [0x3f, 0xc0, 0, 0])), 1.5);
  assert.equal(decode(bytes('D', [0x40, 0x09, 0x21, 0xfb, 0x54, 0x44, 0x2d, 0x18])), Math.PI);
  assert.equal(decode(bytes('C', 'x')), 'x');
  assert.equal(decode(bytes('S', 'i', [3], Buffer.from('h\u00e9', 'utf8'))), 'h\u00e9');
  assert.equal(decode(bytes('H', 'U', [4], '1e-3')), 0.001);
  assert.equal(decode(bytes('N', 'N', 'T')), true);
});

void test('containers: plain, counted, typed', () => {
  assert.deepEqual(decode(bytes('[', 'i', [1], 'S', 'U', [1], 'a', ']')), [1, 'a']);
  assert.deepEqual(decode(bytes('{', 'U', [1], 'k', '[', ']', '}')), { k: [] });
  assert.deepEqual(decode(bytes('[', '#', 'U', [2], 'T', 'Z')), [true, null]);
  assert.deepEqual(
    decode(bytes('{', '$', 'U', '#', 'i', [2], 'U', [1], 'a', [7], 'U', [1], 'b', [8])),
    { a: 7, b: 8 },
  );
  assert.deepEqual(decode(bytes('[', '$', 'Z', '#', 'i', [3])), [null, null, null]);
  assert.deepEqual(decode(bytes('[', '$', 'S', '#', 'i', [2], 'i', [1], 'x', 'i', [0])), ['x', '']);
});

void test('typed numeric arrays decode into typed arrays', () => {
  const floats = decode(
    bytes('[', '$', 'd', '#', 'L', [0, 0, 0, 0, 0, 0, 0, 2], [0x3f, 0x80, 0, 0, 0xc0, 0x00, 0, 0]),
  );
  assert.ok(floats instanceof Float32Array);
  assert.deepEqual(Array.from(floats), [1, -2]);
  const ints = decode(
    bytes('[', '$', 'l', '#', 'i', [3], [0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff, 0, 1, 0, 0]),
  );
  assert.ok(ints instanceof Int32Array);
  assert.deepEqual(Array.from(ints), [1, -1, 65536]);
  const longs = decode(
    bytes('[', '$', 'L', '#', 'i', [1], [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe]),
  );
  assert.ok(longs instanceof BigInt64Array);
  assert.deepEqual(Array.from(longs), [-2n]);
  const doubles = decode(bytes('[', '$', 'D', '#', 'i', [1], [0x3f, 0xf8, 0, 0, 0, 0, 0, 0]));
  assert.ok(doubles instanceof Float64Array);
  assert.deepEqual(Array.from(doubles), [1.5]);
  const shorts = decode(bytes('[', '$', 'I', '#', 'i', [1], [0x80, 0x00]));
  assert.ok(shorts instanceof Int16Array);
  assert.deepEqual(Array.from(shorts), [-32768]);
  const u8 = decode(bytes('[', '$', 'U', '#', 'i', [2], [1, 255]));
  assert.ok(u8 instanceof Uint8Array);
  // A typed array at an odd offset in the input still decodes (the output is freshly aligned).
  const odd = decode(bytes('[', 'i', [1], '[', '$', 'l', '#', 'i', [1], [0, 0, 0, 9], ']'));
  assert.deepEqual(
    (odd as UbjsonValue[]).map((v) => (v instanceof Int32Array ? Array.from(v) : v)),
    [1, [9]],
  );
});

void test('a "__proto__" key is data, not a prototype change', () => {
  const value = decode(bytes('{', 'i', [9], '__proto__', '{', 'i', [1], 'x', 'T', '}', '}'));
  assert.equal(Object.getPrototypeOf(value), Object.prototype);
  assert.deepEqual(Object.keys(value as object), ['__proto__']);
});

void test('malformed input is an error value with an offset', () => {
  assert.match(reason(bytes('')), /data ended where a value was expected at byte 0/);
  assert.match(reason(bytes('l', [0, 0])), /data ended: 4 bytes needed, 2 left at byte 1/);
  assert.match(reason(bytes('S', 'i', [10], 'abc')), /data ended/);
  assert.match(reason(bytes('S', 'i', [0xff])), /invalid length -1/);
  assert.match(reason(bytes('S', 'd', [0, 0, 0, 0])), /expected an integer length/);
  assert.match(reason(bytes('[', 'T')), /data ended/);
  assert.match(reason(bytes('{', 'i', [1], 'a')), /data ended/);
  assert.match(reason(bytes('{', 'i', [1], 'a', 'T')), /no '}'/);
  assert.match(reason(bytes('?')), /unknown marker 0x3f at byte 0/);
  assert.match(reason(bytes('T', 'T')), /unexpected data after the top-level value at byte 1/);
  assert.match(reason(bytes('[', '$', 'd', 'T')), /followed by a '#' count/);
  assert.match(reason(bytes('H', 'i', [3], 'abc')), /not a number/);
});

void test('counts larger than the data are refused before allocating', () => {
  const huge = [0, 0, 0x10, 0, 0, 0, 0, 0]; // 2^44 elements
  assert.match(
    reason(bytes('[', '$', 'd', '#', 'L', huge)),
    /count 17592186044416 exceeds the data left/,
  );
  assert.match(reason(bytes('[', '#', 'L', huge)), /exceeds the data left/);
  assert.match(reason(bytes('[', '$', 'Z', '#', 'L', huge)), /exceeds the data left/);
  assert.match(
    reason(bytes('[', '$', 'd', '#', 'i', [3], [0, 0, 0, 0])),
    /data ended: 12 bytes needed/,
  );
});

void test('deep nesting is refused instead of overflowing the stack', () => {
  const deep = Buffer.alloc(100_000, '[');
  assert.match(reason(deep), /nesting deeper than 256/);
  assert.ok(decodeUbjson(Buffer.from('[[[]]]')).ok);
  assert.equal(decodeUbjson(Buffer.from('[[[]]]'), { maxDepth: 2 }).ok, false);
});

void test('every prefix of a real XGBoost .ubj is refused, and random bytes never throw', () => {
  const model = fixtureBytes('xgb-binary.ubj');
  assert.ok(decodeUbjson(model).ok);
  for (let length = 0; length < model.length; length += 3) {
    assert.equal(decodeUbjson(model.subarray(0, length)).ok, false, `prefix ${length}`);
  }
  for (let seed = 1; seed <= 500; seed += 1) {
    const result = decodeUbjson(seededBytes(seed, 1 + (seed % 300)));
    assert.equal(typeof result.ok, 'boolean');
  }
});
