// Byte-level BPE (GPT-2 / Llama-3 style) on the hand-written tokenizer in tiny-tokenizers.ts.
// Expected ids were produced by the Rust tokenizers library from the same JSON.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { byteLevelAlphabet } from '../../../src/llm/tokenizer/byte-level-alphabet.ts';
import { createTokenizer } from '../../../src/llm/tokenizer/create-tokenizer.ts';
import type { Tokenizer } from '../../../src/llm/tokenizer/tokenizer.ts';
import { byteLevelIds, byteLevelJson } from './tiny-tokenizers.ts';

function make(options: Parameters<typeof byteLevelJson>[0] = {}): Tokenizer {
  const created = createTokenizer(byteLevelJson(options));
  assert.ok(created.ok, created.ok ? '' : created.message);
  return created.tokenizer;
}

test('bytes_to_unicode maps printable bytes to themselves and the rest from U+0100 up', () => {
  const { byteToChar, charToByte } = byteLevelAlphabet;
  assert.equal(byteToChar.length, 256);
  assert.equal(byteToChar[0x41], 'A');
  assert.equal(byteToChar[0x20], 'Ġ');
  assert.equal(byteToChar[0x0a], 'Ċ');
  assert.equal(byteToChar[0x00], 'Ā');
  assert.equal(byteToChar[0xad], 'Ń'); // soft hyphen: the last non-printable Latin-1 byte
  assert.equal(byteToChar[0xe9], 'é');
  assert.equal(new Set(byteToChar).size, 256);
  assert.equal(charToByte.get('Ġ'), 0x20);
});

test('encodes by merge rank after the GPT-2 split', () => {
  const t = make();
  assert.deepEqual(t.encode('Hello world', { addSpecialTokens: false }), [262, 267]);
  // "the" splits as t + he (no "the" token); "'s" is its own pre-token.
  assert.deepEqual(t.encode("the world's", { addSpecialTokens: false }), [116, 257, 267, 268]);
  // A leading space is its own pre-token before a word only when the word starts a new one.
  assert.deepEqual(t.encode(' Hello', { addSpecialTokens: false }), [32, 262]);
  assert.deepEqual(
    t.encode('Hello\n\nworld  ', { addSpecialTokens: false }),
    [262, 10, 10, 119, 264, 266, 32, 32],
  );
  assert.deepEqual(t.encode('xyz', { addSpecialTokens: false }), [120, 121, 122]);
});

test('adds BOS through the post-processor unless told not to', () => {
  const t = make();
  assert.deepEqual(t.encode('Hello world'), [byteLevelIds.bos, 262, 267]);
  assert.deepEqual(t.encode(''), [byteLevelIds.bos]);
  assert.deepEqual(t.encode('', { addSpecialTokens: false }), []);
  assert.equal(t.vocabSize, 275);
});

test('merges written as [a, b] arrays equal merges written as "a b"', () => {
  assert.deepEqual(
    make({ mergesAsArrays: true }).encode('Hello world'),
    make().encode('Hello world'),
  );
});

test('multi-byte UTF-8 is encoded byte by byte and round-trips', () => {
  const t = make();
  // 🎉 is F0 9F 8E 89, merged into one token; é is C3 A9, two byte tokens.
  assert.deepEqual(
    t.encode('🎉 party', { addSpecialTokens: false }),
    [271, 32, 112, 97, 114, 116, 121],
  );
  assert.deepEqual(t.encode('héllo', { addSpecialTokens: false }), [104, 195, 169, 259, 111]);
  for (const text of ['🎉 party', 'héllo', 'Привет, мир', '日本語', 'a\u0301', '\u0000\u007f']) {
    assert.equal(t.decode(t.encode(text, { addSpecialTokens: false })), text);
  }
});

test('decoding invalid UTF-8 gives one U+FFFD per maximal invalid subpart', () => {
  const t = make();
  // F0 9F 8E (three of 🎉's four bytes) then "a": one replacement character for the three.
  assert.equal(t.decode([270, 97]), '\uFFFDa');
  // A lone continuation byte (0x89), then a lone lead byte (0xC3) at the end.
  assert.equal(t.decode([0x89, 104, 0xc3]), '\uFFFDh\uFFFD');
});

test('Llama-3 style: Split with (?i:…) contractions, digits in threes, then ByteLevel', () => {
  const t = make({ llama3Split: true, ignoreMerges: true });
  assert.deepEqual(t.encode('Hello world', { addSpecialTokens: false }), [262, 267]);
  // "'s" after HELLO is split off; "'S" too (case-insensitive), but no merge covers it.
  // " xyz" is one pre-token here (the regex keeps the space), so ignore_merges finds no
  // "Ġxyz" and BPE runs.
  assert.deepEqual(
    t.encode("HELLO's It'S xyz", { addSpecialTokens: false }),
    [72, 69, 76, 76, 79, 268, 32, 73, 116, 39, 83, 32, 120, 121, 122],
  );
  assert.deepEqual(
    t.encode('123456 ab\r\n\ncd', { addSpecialTokens: false }),
    [49, 50, 51, 52, 53, 54, 32, 97, 98, 13, 10, 10, 99, 100],
  );
  assert.deepEqual(t.encode('🎉🎉', { addSpecialTokens: false }), [271, 271]);
});

test('ignore_merges takes a whole word that is in the vocab as one token', () => {
  assert.deepEqual(
    make({ llama3Split: true, ignoreMerges: true }).encode('xyz', { addSpecialTokens: false }),
    [272],
  );
  assert.deepEqual(
    make({ llama3Split: true }).encode('xyz', { addSpecialTokens: false }),
    [120, 121, 122],
  );
});

test('special tokens in the text become their ids, and decode can skip them', () => {
  const t = make();
  const ids = t.encode('<|begin_of_text|>Hello<|end_of_text|>', { addSpecialTokens: false });
  assert.deepEqual(ids, [byteLevelIds.bos, 262, byteLevelIds.eos]);
  assert.equal(t.decode(ids), '<|begin_of_text|>Hello<|end_of_text|>');
  assert.equal(t.decode(ids, { skipSpecialTokens: true }), 'Hello');
  assert.equal(t.isSpecialId(byteLevelIds.eos), true);
  assert.equal(t.isSpecialId(262), false);
});

test('token lookups', () => {
  const t = make();
  assert.equal(t.tokenId('Ġworld'), 267);
  assert.equal(t.tokenId('<|end_of_text|>'), byteLevelIds.eos);
  assert.equal(t.tokenId('nope'), undefined);
  assert.equal(t.idToToken(262), 'Hello');
  assert.equal(t.idToToken(byteLevelIds.bos), '<|begin_of_text|>');
  assert.equal(t.idToToken(9999), undefined);
});

test('decode leaves out ids that have no token', () => {
  const t = make();
  assert.equal(t.decode([262, 9999, -1, 1.5, 267]), 'Hello world');
});

test('lone surrogates in the input are encoded as U+FFFD', () => {
  const t = make();
  assert.deepEqual(
    t.encode('a\uD800b', { addSpecialTokens: false }),
    t.encode('a\uFFFDb', { addSpecialTokens: false }),
  );
});

test('a long prompt round-trips, and the word cache never changes a result', () => {
  const text = 'Hello world, the world is here. 🎉\n'.repeat(200);
  const warm = make();
  const first = warm.encode(text, { addSpecialTokens: false });
  assert.equal(warm.decode(first), text);
  assert.deepEqual(warm.encode(text, { addSpecialTokens: false }), first);
  // Per line: Hello Ġworld , Ġthe Ġworld Ġ i s Ġ he r e . Ġ 🎉 Ċ
  const line = [262, 267, 44, 258, 267, 32, 105, 115, 32, 257, 114, 101, 46, 32, 271, 10];
  assert.deepEqual(first, Array.from({ length: 200 }, () => line).flat());
});
