// Added tokens: cut out of the text before BPE, with their flags (single_word, lstrip,
// rstrip, normalized, special). Expected ids were produced by the Rust tokenizers library
// from the same JSON.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { createTokenizer } from '../../../src/llm/tokenizer/create-tokenizer.ts';
import type { Tokenizer } from '../../../src/llm/tokenizer/tokenizer.ts';
import { addedToken, byteLevelIds, byteLevelJson, sentencePieceJson } from './tiny-tokenizers.ts';

const ids = { mask: 275, orl: 276, end: 277, tool: 278 };
const noBos = { addSpecialTokens: false } as const;

function byteLevelWithAdded(): Tokenizer {
  const created = createTokenizer(
    byteLevelJson({
      added: [
        addedToken(byteLevelIds.bos, '<|begin_of_text|>', { special: true }),
        addedToken(byteLevelIds.eos, '<|end_of_text|>', { special: true }),
        addedToken(ids.mask, '<mask>', { lstrip: true, rstrip: true, normalized: false }),
        addedToken(ids.orl, 'orl', { singleWord: true }),
        addedToken(ids.end, '<|end', { special: true }),
        addedToken(ids.tool, '[tool]', { rstrip: true, normalized: false }),
      ],
    }),
  );
  assert.ok(created.ok, created.ok ? '' : created.message);
  return created.tokenizer;
}

test('lstrip and rstrip swallow the white space around the token', () => {
  const t = byteLevelWithAdded();
  assert.deepEqual(t.encode('a <mask> b', noBos), [97, ids.mask, 98]);
  // The second <mask>'s lstrip finds its spaces already taken by the first one's rstrip.
  assert.deepEqual(t.encode('a  <mask>  <mask> b', noBos), [97, ids.mask, ids.mask, 98]);
  assert.deepEqual(t.encode('[tool]  x', noBos), [ids.tool, 120]);
  assert.equal(t.decode([97, ids.mask, 98]), 'a<mask>b');
});

test('single_word matches only where no word character touches the token', () => {
  const t = byteLevelWithAdded();
  assert.deepEqual(t.encode('orl world, orl orld,orl_ orl\u0301 é orl', noBos), [
    ids.orl,
    267,
    44,
    32,
    ids.orl,
    32,
    264,
    266,
    44,
    264,
    108,
    95,
    32,
    264,
    108,
    204,
    129,
    32,
    195,
    169,
    32,
    ids.orl,
  ]);
});

test('matching is leftmost-longest: <|end_of_text|> wins over its prefix <|end', () => {
  const t = byteLevelWithAdded();
  assert.deepEqual(t.encode('<|end_of_text|> <|end', noBos), [byteLevelIds.eos, 32, ids.end]);
  assert.deepEqual(t.encode('<|endx', noBos), [ids.end, 120]);
  assert.equal(t.decode([byteLevelIds.eos, 32, ids.end], { skipSpecialTokens: true }), ' ');
});

test('a normalized added token is matched, and decoded, in its normalized form', () => {
  const created = createTokenizer(
    sentencePieceJson({
      added: [
        addedToken(0, '<unk>', { special: true }),
        addedToken(1, '<s>', { special: true }),
        addedToken(2, '</s>', { special: true }),
        addedToken(283, 'wor', { normalized: true }),
        addedToken(284, '<tool>', { normalized: false }),
      ],
    }),
  );
  assert.ok(created.ok, created.ok ? '' : created.message);
  const t = created.tokenizer;
  // "wor" normalizes to "▁wor", found after normalization: " world" → ▁wor + ld.
  assert.deepEqual(t.encode('Hello world', noBos), [276, 283, 280]);
  assert.deepEqual(t.encode('helloworld', noBos), [259, 3 + 0x68, 273, 263, 264, 278, 280]);
  assert.equal(t.idToToken(283), '▁wor');
  assert.equal(t.decode([276, 283, 280]), 'Hello world');
  // A raw-matched token splits the text; the piece after it is normalized on its own.
  assert.deepEqual(t.encode('a<tool>b', noBos), [259, 267, 284, 259, 268]);
  assert.equal(t.decode([259, 267, 284, 259, 268]), 'a<tool> b');
});

test('an added token with no id in the model extends the vocabulary', () => {
  const t = byteLevelWithAdded();
  assert.equal(t.vocabSize, 279);
  assert.equal(t.tokenId('[tool]'), ids.tool);
  assert.equal(t.idToToken(ids.tool), '[tool]');
  assert.equal(t.isSpecialId(ids.tool), false);
  assert.equal(t.isSpecialId(ids.end), true);
});
