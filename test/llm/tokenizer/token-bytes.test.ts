// A token's own bytes (what OpenAI's chat logprobs `bytes` holds), for both tokenizer
// families: a byte-level token's symbols map back to bytes, a SentencePiece `<0xNN>` token
// is one byte and `▁` a space. A token that is only part of a UTF-8 character has those
// bytes, not the U+FFFD its text alone decodes to, so the bytes of a sequence's tokens put
// together are the UTF-8 of the text they decode to. The same bytes bound how long a text of
// n tokens can be (maxTextLength), unless the tokenizer can drop text.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';

import { createTokenizer } from '../../../src/llm/tokenizer/create-tokenizer.ts';
import { loadTokenizer } from '../../../src/llm/tokenizer/load-tokenizer.ts';
import { byteLevelJson, sentencePieceJson } from './tiny-tokenizers.ts';

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

for (const family of ['bytelevel', 'sentencepiece'] as const) {
  const dir = fileURLToPath(new URL(`../../../fixtures/llm/tokenizer-${family}/`, import.meta.url));
  const reference = JSON.parse(readFileSync(`${dir}reference.json`, 'utf8')) as {
    readonly cases: readonly { readonly text: string }[];
  };

  test(`${family}: a sequence's token bytes put together are the UTF-8 of its text`, async () => {
    const loaded = await loadTokenizer(dir);
    assert.ok(loaded.ok, loaded.ok ? '' : loaded.message);
    const t = loaded.tokenizer;
    // The text each token adds after a prefix, as generation streams it: a SentencePiece
    // decoder strips the leading space of a whole text only, not of a token within one.
    const prefix = t.encode('Say', { addSpecialTokens: false });
    const prefixText = t.decode(prefix, { skipSpecialTokens: true });
    let partialTokens = 0;
    for (const c of reference.cases) {
      const ids = t.encode(c.text, { addSpecialTokens: false });
      const bytes: number[] = [];
      for (const id of ids) {
        if (t.isSpecialId(id)) continue;
        const own = t.tokenBytes(id);
        bytes.push(...own);
        try {
          strictUtf8.decode(new Uint8Array(own));
        } catch {
          partialTokens += 1;
        }
      }
      const text = t.decode([...prefix, ...ids], { skipSpecialTokens: true });
      assert.ok(text.startsWith(prefixText));
      assert.deepEqual(
        bytes,
        [...Buffer.from(text.slice(prefixText.length), 'utf8')],
        JSON.stringify(c.text),
      );
    }
    // The cases hold characters split across tokens (emoji, CJK): the point of the bytes.
    assert.ok(partialTokens > 0, 'some token is part of a UTF-8 character');
  });
}

test('a byte-fallback token is its one byte, ▁ a space', async () => {
  const dir = fileURLToPath(
    new URL('../../../fixtures/llm/tokenizer-sentencepiece/', import.meta.url),
  );
  const loaded = await loadTokenizer(dir);
  assert.ok(loaded.ok, loaded.ok ? '' : loaded.message);
  const t = loaded.tokenizer;
  const byte = t.tokenId('<0xF0>');
  assert.ok(byte !== undefined);
  assert.deepEqual(t.tokenBytes(byte), [0xf0]);
  const word = t.tokenId('▁the');
  assert.ok(word !== undefined);
  assert.deepEqual(t.tokenBytes(word), [...Buffer.from(' the', 'utf8')]);
});

test('maxTextLength bounds a text by its tokens, unless encoding can drop text', () => {
  const bounded = [byteLevelJson(), sentencePieceJson(), sentencePieceJson({ style: 'metaspace' })];
  for (const json of bounded) {
    const created = createTokenizer(json);
    assert.ok(created.ok, created.ok ? '' : created.message);
    const t = created.tokenizer;
    assert.equal(t.maxTextLength(10), 10 * t.maxTokenBytes * 3);
    // The bound holds: a text of n tokens is never longer.
    const ids = t.encode('the hello world 日本 🙂 ok', { addSpecialTokens: false });
    const text = t.decode(ids);
    assert.ok(text.length <= t.maxTextLength(ids.length));
  }
  const sentencePiece = sentencePieceJson();
  const model = sentencePiece.model as Record<string, unknown>;
  const dropping = [
    // A Strip normalizer drops a run of spaces of any length.
    { ...byteLevelJson(), normalizer: { type: 'Strip', strip_left: true, strip_right: true } },
    // Unknown characters without byte fallback are dropped (no unk), or fused into one token.
    { ...sentencePiece, model: { ...model, byte_fallback: false, unk_token: null } },
    { ...sentencePiece, model: { ...model, byte_fallback: false, fuse_unk: true } },
  ];
  for (const json of dropping) {
    const created = createTokenizer(json);
    assert.ok(created.ok, created.ok ? '' : created.message);
    assert.equal(created.tokenizer.maxTextLength(10), Infinity);
  }
});
