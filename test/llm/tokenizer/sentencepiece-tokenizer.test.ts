// SentencePiece-style BPE (Llama-2 / TinyLlama) on the hand-written tokenizer in
// tiny-tokenizers.ts: the Prepend/Replace normalizer form and the older Metaspace form,
// byte_fallback, fuse_unk, and the Replace/ByteFallback/Fuse/Strip decoder. Expected ids
// were produced by the Rust tokenizers library from the same JSON.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { createTokenizer } from '../../../src/llm/tokenizer/create-tokenizer.ts';
import type { Tokenizer } from '../../../src/llm/tokenizer/tokenizer.ts';
import { sentencePieceIds, sentencePieceJson } from './tiny-tokenizers.ts';

function make(options: Parameters<typeof sentencePieceJson>[0] = {}): Tokenizer {
  const created = createTokenizer(sentencePieceJson(options));
  assert.ok(created.ok, created.ok ? '' : created.message);
  return created.tokenizer;
}

const noBos = { addSpecialTokens: false } as const;
// Piece ids in the tiny vocabulary.
const piece = { space: 259, H: 260, a: 267, b: 268, Hello: 275, spaceHello: 276, spaceWorld: 281 };

test('Prepend("▁") + Replace(" ", "▁"): a space before every word, BOS in front', () => {
  const t = make();
  assert.deepEqual(t.encode('Hello world'), [
    sentencePieceIds.bos,
    piece.spaceHello,
    piece.spaceWorld,
  ]);
  assert.deepEqual(t.encode(' Hello', noBos), [piece.space, piece.spaceHello]);
  assert.deepEqual(t.encode('Hello  world', noBos), [
    piece.spaceHello,
    piece.space,
    piece.spaceWorld,
  ]);
  assert.deepEqual(t.encode(''), [sentencePieceIds.bos]);
  assert.deepEqual(t.encode('', noBos), []);
});

test('characters missing from the vocab fall back to their UTF-8 bytes as <0xNN> tokens', () => {
  const t = make();
  // 'é' is a piece; 'ö' is C3 B6 → <0xC3> <0xB6> (ids 3 + byte).
  assert.deepEqual(t.encode('Héllo, wörld', noBos), [
    259,
    260,
    271,
    272,
    263,
    270,
    277,
    3 + 0xc3,
    3 + 0xb6,
    265,
    280,
  ]);
  assert.deepEqual(t.encode('q', noBos), [piece.space, 3 + 0x71]);
  assert.deepEqual(t.encode('中文', noBos), [piece.space, 231, 187, 176, 233, 153, 138]);
  assert.deepEqual(t.encode('a\nb', noBos), [piece.space, piece.a, 3 + 0x0a, piece.b]);
});

test('decode turns ▁ back into spaces, byte runs into text, and strips one leading space', () => {
  const t = make();
  for (const text of [
    'Hello world',
    ' Hello',
    'Hello  world',
    'Héllo, wörld',
    '中文',
    'a\nb',
    '🎉!',
  ]) {
    assert.equal(t.decode(t.encode(text, noBos)), text);
  }
  assert.equal(t.decode(t.encode('Hello world')), '<s> Hello world');
  assert.equal(t.decode(t.encode('Hello world'), { skipSpecialTokens: true }), 'Hello world');
});

test('a byte run that is not valid UTF-8 decodes to one U+FFFD per byte', () => {
  const t = make();
  // E4 B8 (two of 中's three bytes) then "a": the whole run is invalid → two U+FFFD.
  assert.equal(t.decode([3 + 0xe4, 3 + 0xb8, piece.a]), '\uFFFD\uFFFDa');
  // An ASCII byte in an invalid run is replaced as well, as the Rust library does.
  assert.equal(t.decode([piece.a, 3 + 0x41, 3 + 0xe4]), 'a\uFFFD\uFFFD');
});

test('special tokens split the text; each piece gets its own ▁ prefix', () => {
  const t = make();
  assert.deepEqual(t.encode('Hello</s>world <s>', noBos), [
    piece.spaceHello,
    sentencePieceIds.eos,
    piece.spaceWorld,
    piece.space,
    sentencePieceIds.bos,
  ]);
  assert.equal(
    t.decode([piece.spaceHello, sentencePieceIds.eos, piece.spaceWorld]),
    'Hello</s> world',
  );
});

test('unknown characters without byte fallback become <unk>, fused or not', () => {
  const fused = make({ byteFallback: false });
  assert.deepEqual(fused.encode('Hello qqz world', noBos), [
    piece.spaceHello,
    piece.space,
    0,
    piece.spaceWorld,
  ]);
  const unfused = make({ byteFallback: false, fuseUnk: false });
  assert.deepEqual(unfused.encode('Hello qqz world', noBos), [
    piece.spaceHello,
    piece.space,
    0,
    0,
    0,
    piece.spaceWorld,
  ]);
  assert.deepEqual(unfused.encode('中', noBos), [piece.space, 0]);
  assert.equal(unfused.decode([piece.spaceHello, piece.space, 0, 0]), 'Hello <unk><unk>');
});

test('Metaspace pre-tokenizer, prepend_scheme "first": only the text at offset 0 gets ▁', () => {
  const t = make({ style: 'metaspace' });
  assert.deepEqual(t.encode('Hello world', noBos), [piece.spaceHello, piece.spaceWorld]);
  assert.deepEqual(t.encode(' Hello', noBos), [piece.spaceHello]);
  assert.deepEqual(t.encode('</s>Hello world', noBos), [
    sentencePieceIds.eos,
    piece.Hello,
    piece.spaceWorld,
  ]);
  assert.equal(t.decode([sentencePieceIds.eos, piece.Hello, piece.spaceWorld]), '</s>Hello world');
  assert.equal(t.decode([piece.spaceHello, piece.spaceWorld]), 'Hello world');
});

test('Metaspace split, "always", "never", and the legacy add_prefix_space form', () => {
  const split = make({ style: 'metaspace', metaspace: { prepend_scheme: 'first', split: true } });
  assert.deepEqual(split.encode('Hello  world', noBos), [
    piece.spaceHello,
    piece.space,
    piece.spaceWorld,
  ]);
  const always = make({ style: 'metaspace', metaspace: { prepend_scheme: 'always', split: true } });
  assert.deepEqual(always.encode('</s>Hello world', noBos), [
    sentencePieceIds.eos,
    piece.spaceHello,
    piece.spaceWorld,
  ]);
  const never = make({ style: 'metaspace', metaspace: { prepend_scheme: 'never', split: false } });
  assert.deepEqual(never.encode('Hello world', noBos), [piece.Hello, piece.spaceWorld]);
  assert.equal(never.decode([piece.Hello, piece.spaceWorld]), 'Hello world');
  const legacy = make({ style: 'metaspace', metaspace: { add_prefix_space: true } });
  assert.deepEqual(legacy.encode('</s>Hello world', noBos), [
    sentencePieceIds.eos,
    piece.spaceHello,
    piece.spaceWorld,
  ]);
});

test('a whole-prompt "word" of thousands of characters encodes and round-trips', () => {
  // No pre-tokenizer: the entire normalized text is one BPE word.
  const t = make();
  const text = 'Hello world, Hello wörld 中 '.repeat(300);
  const ids = t.encode(text, noBos);
  assert.equal(t.decode(ids), text);
  // Per repetition: ▁Hello ▁world , ▁Hello ▁w <0xC3> <0xB6> r ld ▁ <0xE4> <0xB8> <0xAD>;
  // the last space stays a lone ▁ (the next "Hello" would have taken it).
  const repetition = [276, 281, 270, 276, 277, 198, 185, 265, 280, 259, 231, 187, 176];
  assert.deepEqual(ids, [...Array.from({ length: 300 }, () => repetition).flat(), piece.space]);
});
