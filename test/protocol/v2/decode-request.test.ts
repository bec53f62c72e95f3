import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { TensorData } from '../../../src/core/tensor.ts';
import {
  checkInferRequest,
  checkInferRequestText,
  decodeInferRequest,
  parseInferRequest,
} from '../../../src/protocol/v2/decode-request.ts';
import { decoded, one, oneText, refusal } from './request-helpers.ts';

/** Decodes a JSON text (no schema); asserts success; returns the first input's data. */
function decodeData(text: string): TensorData {
  return decoded(text).inputs[0]?.data ?? [];
}

test('flat and nested data decode to the same row-major typed array', () => {
  const flat = decodeData(oneText('FP32', '[2,3]', '[1,2,3,4,5,6]'));
  const nested = decodeData(oneText('FP32', '[2,3]', '[[1,2,3],[4,5,6]]'));
  assert.deepEqual(flat, new Float32Array([1, 2, 3, 4, 5, 6]));
  assert.deepEqual(nested, flat);
  assert.deepEqual(
    decodeData(oneText('INT32', '[2,2,2]', '[[[1,2],[3,4]],[[5,6],[7,8]]]')),
    new Int32Array([1, 2, 3, 4, 5, 6, 7, 8]),
  );
  assert.deepEqual(decodeData(oneText('FP64', '[]', '[2.5]')), new Float64Array([2.5]));
  assert.deepEqual(decodeData(oneText('FP32', '[0,3]', '[]')), new Float32Array(0));
  assert.deepEqual(decodeData(oneText('FP32', '[2,0]', '[[],[]]')), new Float32Array(0));
});

test('every datatype decodes into its container, extremes included', () => {
  const cases: [string, string, TensorData][] = [
    ['BOOL', '[true,false,true]', new Uint8Array([1, 0, 1])],
    ['UINT8', '[0,255,7]', new Uint8Array([0, 255, 7])],
    ['UINT16', '[0,65535,7]', new Uint16Array([0, 65535, 7])],
    ['UINT32', '[0,4294967295,7]', new Uint32Array([0, 4294967295, 7])],
    ['INT8', '[-128,127,-0]', new Int8Array([-128, 127, 0])],
    ['INT16', '[-32768,32767,1]', new Int16Array([-32768, 32767, 1])],
    ['INT32', '[-2147483648,2147483647,1]', new Int32Array([-2147483648, 2147483647, 1])],
    [
      'INT64',
      '[-9223372036854775808,9223372036854775807,-9007199254740991]',
      new BigInt64Array([-(2n ** 63n), 2n ** 63n - 1n, -9007199254740991n]),
    ],
    [
      'UINT64',
      '[0,18446744073709551615,9007199254740991]',
      new BigUint64Array([0n, 2n ** 64n - 1n, 9007199254740991n]),
    ],
    ['FP16', '[1,65504,null]', new Uint16Array([0x3c00, 0x7bff, 0x7e00])],
    ['BF16', '[1,-2,Infinity]', new Uint16Array([0x3f80, 0xc000, 0x7f80])],
    [
      'FP32',
      '[0.1,-3.4028234663852886e38,1e-45]',
      new Float32Array([0.1, -3.4028234663852886e38, 1e-45]),
    ],
    [
      'FP64',
      '[0.1,1.7976931348623157e308,5e-324]',
      new Float64Array([0.1, 1.7976931348623157e308, 5e-324]),
    ],
    ['BYTES', '["a","","\\u00e9\\"x"]', ['a', '', 'é"x']],
  ];
  for (const [datatype, data, expected] of cases) {
    assert.deepEqual(decodeData(oneText(datatype, '[3]', data)), expected, datatype);
  }
});

test('INT64 from safe-integer numbers is exact, negative numbers included (no BigInt per element)', () => {
  const values = [
    0,
    -1,
    1,
    -(2 ** 32),
    2 ** 32 - 1,
    2 ** 32,
    -(2 ** 53 - 1),
    2 ** 53 - 1,
    -123456789012,
  ];
  const result = decodeInferRequest(one('INT64', [values.length], values), null);
  assert.ok(result.ok);
  assert.deepEqual(result.request.inputs[0]?.data, new BigInt64Array(values.map(BigInt)));
});

test('null is a missing value (NaN) for float datatypes; NaN and ±Infinity tokens are accepted', () => {
  const data = decodeData(oneText('FP32', '[5]', '[null, NaN, Infinity, -Infinity, 1.5]'));
  assert.deepEqual(data, new Float32Array([NaN, NaN, Infinity, -Infinity, 1.5]));
  assert.deepEqual(
    decodeData(oneText('FP64', '[2]', '[null, -Infinity]')),
    new Float64Array([NaN, -Infinity]),
  );
  assert.deepEqual(
    decodeData(oneText('BF16', '[2]', '[null, NaN]')),
    new Uint16Array([0x7fc0, 0x7fc0]),
  );
});

test('null for integer, BOOL and BYTES inputs is refused naming the input and element', () => {
  const expected =
    "input 'x': element 1 is null; missing values (null) are accepted only for FP16, FP32, FP64 and BF16 inputs";
  assert.equal(refusal(one('INT32', [3], [1, null, 3]), 'KILN_INVALID_TENSOR'), expected);
  assert.equal(refusal(one('UINT8', [3], [1, null, 3])), expected);
  assert.equal(refusal(one('INT64', [2], [1, null])), expected);
  assert.equal(refusal(one('BOOL', [2], [true, null])), expected);
  assert.equal(refusal(one('BYTES', [2], ['a', null])), expected);
});

test('wrong element kinds name the element, what it is and what was expected', () => {
  assert.equal(
    refusal(one('FP32', [4], [1, 2, 3, 'x'])),
    "input 'x': element 3 is a string, expected FP32 numbers",
  );
  assert.equal(
    refusal(
      one(
        'FP32',
        [2, 2],
        [
          [1, 2],
          [true, 4],
        ],
      ),
    ),
    "input 'x': element 2 (index [1, 0]) is a boolean, expected FP32 numbers",
  );
  assert.equal(
    refusal(one('FP64', [2], [1, 'NaN'])),
    "input 'x': element 1 is a string, expected FP64 numbers (send NaN, Infinity or -Infinity as bare tokens, or null for a missing value)",
  );
  assert.equal(
    refusal(one('INT32', [2], [1, {}])),
    "input 'x': element 1 is an object, expected INT32 integers",
  );
  assert.equal(
    refusal(one('BYTES', [2], ['a', 5])),
    "input 'x': element 1 is a number, expected BYTES strings",
  );
  assert.equal(
    refusal(one('BOOL', [2], [1, 0])),
    "input 'x': element 0 is a number, expected BOOL true/false (0 and 1 are not accepted)",
  );
  assert.equal(
    refusal(
      one(
        'FP32',
        [2, 2],
        [
          [1, 2],
          [3, [4]],
        ],
      ),
    ),
    "input 'x': element 3 (index [1, 1]) is an array, expected FP32 numbers",
  );
});

test('integers must be integers within their datatype’s range', () => {
  assert.equal(
    refusal(one('INT32', [2], [1, 1.5])),
    "input 'x': element 1 (1.5) is not an integer, expected INT32 integers",
  );
  assert.equal(
    refusal(one('UINT8', [2], [0, 256])),
    "input 'x': element 1 (256) is out of range for UINT8 (0..255)",
  );
  assert.equal(
    refusal(one('INT8', [1], [-129])),
    "input 'x': element 0 (-129) is out of range for INT8 (-128..127)",
  );
  assert.equal(
    refusal(one('UINT32', [1], [-1])),
    "input 'x': element 0 (-1) is out of range for UINT32 (0..4294967295)",
  );
  assert.equal(
    refusal(one('UINT64', [1], [-1])),
    "input 'x': element 0 (-1) is out of range for UINT64 (0..18446744073709551615)",
  );
  assert.equal(
    refusal(oneText('INT64', '[1]', '[9223372036854775808]')),
    "input 'x': element 0 (9223372036854775808) is out of range for INT64 (-9223372036854775808..9223372036854775807)",
  );
  assert.equal(
    refusal(oneText('UINT64', '[1]', '[18446744073709551616]')),
    "input 'x': element 0 (18446744073709551616) is out of range for UINT64 (0..18446744073709551615)",
  );
  assert.equal(
    refusal(oneText('INT16', '[1]', '[Infinity]')),
    "input 'x': element 0 (Infinity) is not an integer, expected INT16 integers",
  );
});

test('INT64 beyond 2^53 in an already-parsed body is refused rather than silently rounded', () => {
  const message = refusal(one('INT64', [1], [2 ** 60 + 1]));
  assert.match(message, /^input 'x': element 0 \(1152921504606847000\) is beyond ±\(2\^53−1\)/);
  assert.match(message, /parseInferRequest/);
  // From the text, the same value is read exactly.
  assert.deepEqual(
    decodeData(oneText('INT64', '[1]', '[1152921504606846977]')),
    new BigInt64Array([2n ** 60n + 1n]),
  );
});

test('float values beyond the datatype’s range are refused, not turned into Infinity', () => {
  assert.equal(
    refusal(one('FP32', [1], [1e39])),
    "input 'x': element 0 (1e+39) is out of range for FP32",
  );
  assert.equal(
    refusal(one('FP16', [2], [1, 65520])),
    "input 'x': element 1 (65520) is out of range for FP16",
  );
  assert.equal(
    refusal(one('BF16', [1], [-1e39])),
    "input 'x': element 0 (-1e+39) is out of range for BF16",
  );
  assert.deepEqual(decodeData(oneText('FP16', '[1]', '[65519]')), new Uint16Array([0x7bff]));
});

test('data must hold exactly the shape’s elements, flat or nested level by level', () => {
  assert.equal(
    refusal(one('FP32', [2, 3], [1, 2, 3, 4, 5])),
    "input 'x': data holds 5 elements, shape [2, 3] needs 6",
  );
  assert.equal(
    refusal(
      one(
        'FP32',
        [2, 3],
        [
          [1, 2, 3],
          [4, 5],
        ],
      ),
    ),
    "input 'x': nested data does not match shape [2, 3]: data[1] has 2 elements, expected 3",
  );
  assert.equal(
    refusal(
      one(
        'FP32',
        [2, 3],
        [
          [1, 2, 3],
          [4, 5, 6],
          [7, 8, 9],
        ],
      ),
    ),
    "input 'x': nested data does not match shape [2, 3]: data has 3 elements, expected 2",
  );
  assert.equal(
    refusal(
      one(
        'FP32',
        [2, 2, 2],
        [
          [
            [1, 2],
            [3, 4],
          ],
          [[5, 6], 7],
        ],
      ),
    ),
    "input 'x': nested data does not match shape [2, 2, 2]: data[1][1] is a number, expected an array of 2",
  );
  assert.equal(refusal(one('FP32', [2], 5)), "input 'x': 'data' must be an array, got a number");
  // A shape that claims far more than the JSON holds is refused before allocating anything.
  assert.equal(
    refusal(one('FP32', [2, 1e12], [[1], [2]])),
    "input 'x': nested data does not match shape [2, 1000000000000]: data[0] has 1 elements, expected 1000000000000",
  );
});

test('invalid JSON is KILN_INVALID_JSON with the parser’s message', () => {
  const result = parseInferRequest('{"inputs": [NaN,]}', null);
  assert.deepEqual(result, {
    ok: false,
    code: 'KILN_INVALID_JSON',
    message:
      'request body is not valid JSON: Unexpected token \']\', "{"inputs": [NaN,]}" is not valid JSON',
  });
  assert.deepEqual(checkInferRequestText(Buffer.from('{"inputs": [NaN,]}'), null), result);
});

test('the validate-only path finds an error deep in a tensor larger than its scratch buffer', () => {
  for (const datatype of ['FP32', 'FP64', 'FP16', 'INT32', 'INT64', 'BOOL', 'BYTES']) {
    const good = datatype === 'BOOL' ? true : datatype === 'BYTES' ? 's' : 1;
    const data: unknown[] = new Array<unknown>(5000).fill(good);
    assert.ok(checkInferRequest(one(datatype, [50, 100], data), null).ok, datatype);
    data[4321] = datatype === 'BYTES' ? 1 : 'bad';
    const message = refusal(one(datatype, [50, 100], data));
    assert.match(message, /^input 'x': element 4321 \(index \[43, 21\]\) is a/, datatype);
    const rows = Array.from({ length: 2 }, (_, r) => data.slice(r * 2500, (r + 1) * 2500));
    assert.match(
      refusal(one(datatype, [2, 2500], rows)),
      /^input 'x': element 4321 \(index \[1, 1821\]\)/,
    );
  }
});
