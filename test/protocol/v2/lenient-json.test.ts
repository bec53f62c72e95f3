import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseJsonLenient } from '../../../src/protocol/v2/lenient-json.ts';

function parsed(text: string | Buffer, exactIntegers = false): unknown {
  const result = parseJsonLenient(text, { exactIntegers });
  assert.ok(result.ok, result.ok ? '' : result.message);
  return result.value;
}

function failure(text: string): string {
  const result = parseJsonLenient(text);
  assert.equal(result.ok, false, `expected ${text} to be refused`);
  return result.ok ? '' : result.message;
}

function expectedMessage(text: string): string {
  try {
    JSON.parse(text);
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error(`${text} is valid JSON`);
}

test('standard JSON takes the fast path and equals JSON.parse; Buffers and a BOM are accepted', () => {
  const text = '{"a": [1, 2.5, -3e-7, true, null, "x"], "b": {"c": "NaN"}}';
  assert.deepEqual(parsed(text), JSON.parse(text));
  assert.deepEqual(parsed(Buffer.from(text, 'utf8')), JSON.parse(text));
  assert.deepEqual(parsed(Buffer.from(`\ufeff${text}`, 'utf8')), JSON.parse(text));
  assert.deepEqual(parsed('"é ☃ 😀"'), 'é ☃ 😀');
});

test("Python's bare NaN, Infinity and -Infinity tokens become the numbers they name", () => {
  const value = parsed('{"v": [NaN, Infinity, -Infinity, 1.5], "w": NaN, "x": -Infinity}');
  assert.deepEqual(value, { v: [NaN, Infinity, -Infinity, 1.5], w: NaN, x: -Infinity });
  assert.deepEqual(parsed('NaN'), NaN);
  assert.deepEqual(parsed('[NaN,NaN]'), [NaN, NaN]);
  assert.deepEqual(parsed('[\n\tInfinity\r\n]'), [Infinity]);
});

test('tokens inside strings (and keys named after them) are left untouched', () => {
  const text = String.raw`{"NaN": "NaN Infinity -Infinity", "q": "say \"NaN\" \\", "v": [NaN, "\"Infinity"]}`;
  assert.deepEqual(parsed(text), {
    NaN: 'NaN Infinity -Infinity',
    q: 'say "NaN" \\',
    v: [NaN, '"Infinity'],
  });
});

test('only whole tokens count: NaNa, xNaN, -NaN, +Infinity and NaN as a key are refused', () => {
  for (const text of [
    '[NaNa]',
    '[xNaN]',
    '[-NaN]',
    '[+Infinity]',
    '[Infinityy]',
    '{NaN: 1}',
    '{Infinity: 1}',
  ]) {
    failure(text);
  }
});

test('a user string that looks like an internal sentinel stays a string', () => {
  const text = String.raw`["\u0000kiln-nan", "\u0000kiln-0123-nan", NaN]`;
  assert.deepEqual(parsed(text), ['\u0000kiln-nan', '\u0000kiln-0123-nan', NaN]);
});

test('invalid JSON reports JSON.parse’s own message, with positions in the text the user sent', () => {
  // No tokens: exactly JSON.parse's message.
  assert.equal(failure('{"a": 1,}'), expectedMessage('{"a": 1,}'));
  assert.equal(failure(''), 'Unexpected end of JSON input');
  // A real error after an accepted NaN: reported where it is, not at the NaN.
  const text = '{"a": NaN "b": 1}';
  const message = failure(text);
  assert.equal(message, expectedMessage('{"a": 0.0 "b": 1}'));
  assert.match(message, /at position 10$/);
  assert.equal(text[10], '"');
  // V8 quotes the text in "Unexpected token" messages: the user's own text is shown.
  assert.equal(
    failure('{"a": NaN, "b": }'),
    `Unexpected token '}', "{"a": NaN, "b": }" is not valid JSON`,
  );
  const withTrue = failure('{"a": NaN, "b": True}');
  assert.match(withTrue, /^Unexpected token 'T', .*NaN, "b": True\}" is not valid JSON$/);
  const long = `[${'1, '.repeat(40)}NaN, Infinity, x, 2]`;
  assert.match(
    failure(long),
    /^Unexpected token 'x', \.\.\."[^"]*Infinity, x, 2\]" is not valid JSON$/,
  );
});

test('exactIntegers reads integer literals beyond ±(2^53−1) as bigint, everything else as before', () => {
  const text =
    '{"big": [9223372036854775807, -9223372036854775808, 18446744073709551615], "safe": [9007199254740991, -9007199254740991, 12], "float": [0.12345678901234567, 12345678901234567.5, 1234567890123456789e2], "s": "9223372036854775807", "n": NaN}';
  assert.deepEqual(parsed(text, true), {
    big: [9223372036854775807n, -9223372036854775808n, 18446744073709551615n],
    safe: [9007199254740991, -9007199254740991, 12],
    float: [0.12345678901234567, 12345678901234567.5, 1234567890123456789e2],
    s: '9223372036854775807',
    n: NaN,
  });
  // Without the option the same text parses with ordinary (rounded) numbers.
  assert.equal((parsed(text) as { big: number[] }).big[0], 9223372036854775807);
  // Invalid literals stay invalid: a leading zero, a big integer as a key.
  assert.equal(parseJsonLenient('[01234567890123456789]', { exactIntegers: true }).ok, false);
  assert.equal(parseJsonLenient('{12345678901234567890: 1}', { exactIntegers: true }).ok, false);
});
