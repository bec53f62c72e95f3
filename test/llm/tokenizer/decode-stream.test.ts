// Incremental detokenization: pushed ids give text deltas whose concatenation equals
// decode(all ids), never half a character, with SentencePiece's leading space handled.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { createRandom } from '../../../src/core/random.ts';
import { createTokenizer } from '../../../src/llm/tokenizer/create-tokenizer.ts';
import type { Tokenizer } from '../../../src/llm/tokenizer/tokenizer.ts';
import {
  byteLevelIds,
  byteLevelJson,
  sentencePieceIds,
  sentencePieceJson,
} from './tiny-tokenizers.ts';

function make(json: unknown): Tokenizer {
  const created = createTokenizer(json);
  assert.ok(created.ok, created.ok ? '' : created.message);
  return created.tokenizer;
}

const byteLevel = make(byteLevelJson());
const sentencePiece = make(sentencePieceJson());
const spHello = 276;
const spWorld = 281;
const spByte = (b: number): number => 3 + b;

/** The delta each push returned, then flush's. */
function stream(
  t: Tokenizer,
  ids: readonly number[],
  options: Parameters<Tokenizer['decodeStream']>[0] = {},
): string[] {
  const s = t.decodeStream(options);
  const deltas = ids.map((id) => s.push(id));
  deltas.push(s.flush());
  return deltas;
}

test('byte-level: the bytes of one character are held until it is complete', () => {
  // 🎉 is F0 9F 8E 89; each byte is its own id here (ids 0-255 are the bytes).
  assert.deepEqual(stream(byteLevel, [262, 0xf0, 0x9f, 0x8e, 0x89, 97]), [
    'Hello',
    '',
    '',
    '',
    '🎉',
    'a',
    '',
  ]);
  assert.deepEqual(stream(byteLevel, [0xc3, 0xa9]), ['', 'é', '']);
});

test('flush gives out an unfinished character as U+FFFD, as decode does', () => {
  assert.deepEqual(stream(byteLevel, [262, 0xf0, 0x9f]), ['Hello', '', '', '\uFFFD']);
  assert.equal(byteLevel.decode([262, 0xf0, 0x9f]), 'Hello\uFFFD');
  // An invalid byte followed by text is emitted once the text arrives.
  assert.deepEqual(stream(byteLevel, [0x89, 97]), ['', '\uFFFDa', '']);
});

test('SentencePiece: the first token loses its ▁ space, later ones keep it', () => {
  assert.deepEqual(stream(sentencePiece, [spHello, spWorld, spWorld]), [
    'Hello',
    ' world',
    ' world',
    '',
  ]);
  assert.equal(sentencePiece.decode([spHello, spWorld, spWorld]), 'Hello world world');
});

test('SentencePiece: after a prompt (prefixIds) the first generated token keeps its space', () => {
  const prompt = sentencePiece.encode('Hello');
  assert.deepEqual(stream(sentencePiece, [spWorld, spWorld], { prefixIds: prompt }), [
    ' world',
    ' world',
    '',
  ]);
  // Without the prompt it would be stripped.
  assert.deepEqual(stream(sentencePiece, [spWorld]), ['world', '']);
});

test('SentencePiece: a run of byte tokens is held until a non-byte token ends it', () => {
  // 中 = E4 B8 AD. Valid after its third byte, but a further byte could still turn the run
  // into U+FFFDs (decode replaces a whole invalid run), so the text waits for ▁world.
  assert.deepEqual(
    stream(sentencePiece, [spHello, spByte(0xe4), spByte(0xb8), spByte(0xad), spWorld]),
    ['Hello', '', '', '', '中 world', ''],
  );
  assert.deepEqual(stream(sentencePiece, [spByte(0xe4), spByte(0xb8), spByte(0xad)]), [
    '',
    '',
    '',
    '中',
  ]);
  assert.deepEqual(stream(sentencePiece, [spByte(0x41), spByte(0xe4), spHello]), [
    '',
    '',
    '\uFFFD\uFFFD Hello',
    '',
  ]);
});

test('SentencePiece: a prompt ending in a long byte-token run is context whole, not cut', () => {
  // The prompt ends with 😀😀 (eight byte tokens, more than the six ids of context kept);
  // generation adds a third 😀 to the same run, then ▁world ends it.
  const emoji = [0xf0, 0x9f, 0x98, 0x80].map(spByte);
  const prompt = [spHello, ...emoji, ...emoji];
  const generated = [...emoji, spWorld];
  const deltas = stream(sentencePiece, generated, { prefixIds: prompt });
  const all = sentencePiece.decode([...prompt, ...generated]);
  assert.equal(all, 'Hello😀😀😀 world');
  assert.equal(deltas.join(''), '😀 world');
});

test('skipSpecialTokens leaves BOS and EOS out of the stream', () => {
  const ids = [sentencePieceIds.bos, spHello, spWorld, sentencePieceIds.eos];
  assert.deepEqual(stream(sentencePiece, ids, { skipSpecialTokens: true }), [
    '',
    'Hello',
    ' world',
    '',
    '',
  ]);
  assert.deepEqual(stream(sentencePiece, ids), ['<s>', ' Hello', ' world', '</s>', '']);
  assert.deepEqual(
    stream(byteLevel, [byteLevelIds.bos, 262, byteLevelIds.eos], { skipSpecialTokens: true }),
    ['', 'Hello', '', ''],
  );
});

test('property: streamed text always equals decode(all ids), for random id sequences', () => {
  const random = createRandom(20240605);
  for (const [t, name] of [
    [byteLevel, 'byte-level'],
    [sentencePiece, 'sentencepiece'],
  ] as const) {
    for (let trial = 0; trial < 300; trial += 1) {
      const ids = Array.from({ length: 1 + random.int(12) }, () => random.int(t.vocabSize));
      for (const skipSpecialTokens of [false, true]) {
        const deltas = stream(t, ids, { skipSpecialTokens });
        const whole = t.decode(ids, { skipSpecialTokens });
        assert.equal(deltas.join(''), whole, `${name} ${JSON.stringify(ids)}`);
        // Every delta is well-formed text: no lone surrogate (half a character).
        for (const delta of deltas) assert.doesNotMatch(delta, /[\uD800-\uDFFF]/u);
      }
    }
  }
});

test('property: the same holds with a prompt before the generated ids', () => {
  const random = createRandom(7);
  for (let trial = 0; trial < 200; trial += 1) {
    const t = trial % 2 === 0 ? byteLevel : sentencePiece;
    const prompt = Array.from({ length: random.int(10) }, () => random.int(t.vocabSize));
    const generated = Array.from({ length: 1 + random.int(10) }, () => random.int(t.vocabSize));
    const deltas = stream(t, generated, { prefixIds: prompt });
    const before = t.decode(prompt);
    const after = t.decode([...prompt, ...generated]);
    // When the prompt ends mid-character, the character's U+FFFD is replaced by the
    // completed text; otherwise the deltas are exactly what the generated ids add.
    const common = commonPrefix(before, after);
    assert.equal(deltas.join(''), after.slice(common), JSON.stringify({ prompt, generated }));
  }
});

function commonPrefix(a: string, b: string): number {
  if (b.startsWith(a)) return a.length;
  let i = 0;
  while (i < a.length && a[i] === b[i]) i += 1;
  return i;
}
