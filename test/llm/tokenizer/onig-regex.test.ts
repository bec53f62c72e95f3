// Oniguruma patterns from tokenizer.json compiled to JavaScript RegExps.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { compileOnigRegex } from '../../../src/llm/tokenizer/onig-regex.ts';
import { gpt2SplitPattern, parsePreTokenizer } from '../../../src/llm/tokenizer/pre-tokenizer.ts';

function matches(pattern: string, text: string): string[] {
  const compiled = compileOnigRegex(pattern);
  assert.ok(compiled.ok, compiled.ok ? '' : compiled.message);
  return [...text.matchAll(compiled.value)].map((m) => m[0]);
}

test('the GPT-2 split pattern', () => {
  assert.deepEqual(matches(gpt2SplitPattern, "I'm here  now, 42x!\n"), [
    'I',
    "'m",
    ' here',
    ' ',
    ' now',
    ',',
    ' 42',
    'x',
    '!',
    '\n',
  ]);
});

test('(?i:…) is case-insensitive inside the group only, with Unicode case folding', () => {
  assert.deepEqual(matches("(?i:'s|'re)|a", "'S 'Re 'rE A a"), ["'S", "'Re", "'rE", 'a']);
  // U+017F LATIN SMALL LETTER LONG S folds to 's', as it does in Oniguruma.
  assert.deepEqual(matches("(?i:'s)", "'\u017F"), ["'\u017F"]);
});

test('\\s is Unicode White_Space: U+0085 is space, U+FEFF is not', () => {
  assert.deepEqual(matches('\\s+', 'a\u0085b\uFEFFc\u3000d'), ['\u0085', '\u3000']);
  assert.deepEqual(matches('\\S+', 'a\u0085b\uFEFFc'), ['a', 'b\uFEFFc']);
  assert.deepEqual(matches('[^\\s]+', 'x\u2028y'), ['x', 'y']);
});

test('escapes: \\x{…}, identity escapes of punctuation, property classes with quantifiers', () => {
  assert.deepEqual(matches('\\x{4E2D}+', 'a中中b'), ['中中']);
  assert.deepEqual(matches("\\'\\p{L}+", "x'abc"), ["'abc"]);
  assert.deepEqual(matches('\\p{N}{1,3}', '12345'), ['123', '45']);
});

test('\\d and \\w are Unicode, as in Oniguruma; a word boundary is refused', () => {
  assert.deepEqual(matches('\\d+', '٣٤٥ ١٢ 7'), ['٣٤٥', '١٢', '7']);
  assert.deepEqual(matches('\\w+|[^\\w\\s]+', 'café_ü éx!'), ['café_ü', 'éx', '!']);
  assert.deepEqual(matches('[\\w-]+', 'né-e x'), ['né-e', 'x']);
  assert.deepEqual(matches('\\W+', 'ab, cd'), [', ']);
  for (const pattern of ['\\bab', '[\\W]'])
    assert.equal(compileOnigRegex(pattern).ok, false, pattern);
});

test('constructs JavaScript cannot express are refused by name', () => {
  for (const [pattern, construct] of [
    ['a++', 'possessive quantifier'],
    ['(?>ab)', 'atomic group'],
    ['(?i)abc', 'inline flags'],
    ['[abc', 'unterminated character class'],
    ['(?i:[a-z])', 'case-insensitive character range'],
  ] as const) {
    const compiled = compileOnigRegex(pattern);
    assert.equal(compiled.ok, false, pattern);
    assert.ok(
      !compiled.ok && compiled.message.includes(construct),
      compiled.ok ? '' : compiled.message,
    );
    assert.ok(!compiled.ok && compiled.message.startsWith('unsupported regex'));
  }
});

test('the Digits pre-tokenizer splits every numeric character, as Rust is_numeric does', () => {
  const parsed = parsePreTokenizer({ type: 'Digits', individual_digits: true });
  assert.ok(parsed.ok && parsed.value !== null);
  const pieces = parsed.value([{ text: 'x ½ 12²³', atStart: true }]).map((p) => p.text);
  assert.deepEqual(pieces, ['x ', '½', ' ', '1', '2', '²', '³']);
});
