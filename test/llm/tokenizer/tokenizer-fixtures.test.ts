// The two tokenizer fixtures (fixtures/llm/tokenizer-bytelevel and tokenizer-sentencepiece,
// written by fixtures/llm/make_llm_fixtures.py) against their reference.json: every
// reference string encodes to exactly the reference ids (for the byte-level one, ids the
// fixture script wrote, which hf-tokenizers-oracle.test.ts checks against Hugging Face's own
// tokenizers library at test time; for the other, the real sentencepiece library, or
// `hfIds` where the HF form must differ), decodes back, streams back, and every chat renders
// and encodes exactly.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';

import type { ChatMessage } from '../../../src/llm/tokenizer/chat-template/chat-template.ts';
import { loadTokenizer } from '../../../src/llm/tokenizer/load-tokenizer.ts';
import type { Tokenizer } from '../../../src/llm/tokenizer/tokenizer.ts';

interface ReferenceCase {
  readonly text: string;
  readonly ids: readonly number[];
  readonly hfIds?: readonly number[];
  readonly idsWithSpecialTokens: readonly number[];
  readonly decoded: string;
}

interface ReferenceChat {
  readonly name: string;
  readonly messages: readonly ChatMessage[];
  readonly addGenerationPrompt: boolean;
  readonly rendered?: string;
  readonly ids?: readonly number[];
  readonly error?: string;
}

interface Reference {
  readonly vocabSize: number;
  readonly bosTokenId: number;
  readonly eosTokenId: number;
  readonly specialTokens: Readonly<Record<string, number>>;
  readonly cases: readonly ReferenceCase[];
  readonly chat: readonly ReferenceChat[];
}

/**
 * Texts whose HF encoding does not decode back to themselves: a special token's text
 * splits the input, and the text after it gets its own ▁ (so a space) prefix, as the Rust
 * library and transformers' Llama tokenizer do.
 */
const sentencePieceDecodedDifferently: Readonly<Record<string, string>> = {
  'hi</s>there': 'hi</s> there',
  '<s>[INST] hello [/INST]': '<s> [INST] hello [/INST]',
};

for (const family of ['bytelevel', 'sentencepiece'] as const) {
  const dir = fileURLToPath(new URL(`../../../fixtures/llm/tokenizer-${family}/`, import.meta.url));
  const reference = JSON.parse(readFileSync(`${dir}reference.json`, 'utf8')) as Reference;

  async function load(): Promise<Tokenizer> {
    const loaded = await loadTokenizer(dir);
    assert.ok(loaded.ok, loaded.ok ? '' : loaded.message);
    return loaded.tokenizer;
  }

  test(`${family}: vocabulary size and special tokens`, async () => {
    const t = await load();
    assert.equal(t.vocabSize, reference.vocabSize);
    assert.equal(t.bosTokenId, reference.bosTokenId);
    assert.deepEqual(t.eosTokenIds, [reference.eosTokenId]);
    for (const [token, id] of Object.entries(reference.specialTokens)) {
      assert.equal(t.tokenId(token), id, token);
      assert.equal(t.idToToken(id), token);
    }
    assert.ok(reference.cases.length >= 30);
  });

  test(`${family}: every reference string encodes to the reference ids`, async () => {
    const t = await load();
    for (const c of reference.cases) {
      assert.deepEqual(
        t.encode(c.text, { addSpecialTokens: false }),
        c.hfIds ?? c.ids,
        JSON.stringify(c.text),
      );
      assert.deepEqual(t.encode(c.text), c.idsWithSpecialTokens, JSON.stringify(c.text));
    }
  });

  test(`${family}: reference ids decode to the reference text, whole and streamed`, async () => {
    const t = await load();
    for (const c of reference.cases) {
      assert.equal(t.decode(c.ids), c.decoded, JSON.stringify(c.text));
      const stream = t.decodeStream();
      const streamed = c.ids.map((id) => stream.push(id)).join('') + stream.flush();
      assert.equal(streamed, c.decoded, JSON.stringify(c.text));
    }
  });

  test(`${family}: text round-trips, multi-byte UTF-8 and special tokens included`, async () => {
    const t = await load();
    for (const c of reference.cases) {
      const ids = t.encode(c.text, { addSpecialTokens: false });
      const expected =
        (family === 'sentencepiece' ? sentencePieceDecodedDifferently[c.text] : undefined) ??
        c.text;
      assert.equal(t.decode(ids), expected, JSON.stringify(c.text));
      // Skipping special tokens drops the BOS the post-processor adds, and nothing else.
      const withBos = t.encode(c.text);
      assert.equal(withBos[0], reference.bosTokenId);
      assert.equal(
        t.decode(withBos, { skipSpecialTokens: true }),
        t.decode(ids, { skipSpecialTokens: true }),
      );
    }
  });

  test(`${family}: chats render with the fixture's chat template and encode exactly`, async () => {
    const t = await load();
    assert.equal(t.hasChatTemplate, true);
    assert.ok(reference.chat.length >= 3);
    for (const chat of reference.chat) {
      const rendered = t.applyChatTemplate(chat.messages, {
        addGenerationPrompt: chat.addGenerationPrompt,
      });
      if (chat.error !== undefined) {
        assert.deepEqual(rendered, {
          ok: false,
          message: `template raised an exception: ${chat.error}`,
        });
        continue;
      }
      assert.ok(rendered.ok, rendered.ok ? '' : rendered.message);
      assert.equal(rendered.text, chat.rendered, chat.name);
      assert.deepEqual(t.encode(rendered.text, { addSpecialTokens: false }), chat.ids, chat.name);
    }
  });
}
