// Our tokenizer against Hugging Face's own (the Rust `tokenizers` library through its npm
// binding), run here at test time on the same tokenizer.json: an implementation that is not
// ours, so a shared misreading of the format cannot pass. Every fixture tokenizer, on the
// reference strings and on seeded random strings built from the vocabulary, special tokens,
// whitespace runs and multi-byte UTF-8: the ids with and without special tokens, and the
// text decoded from them, must be identical.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { Tokenizer as HfTokenizer } from 'tokenizers';

import { createTokenizer } from '../../../src/llm/tokenizer/create-tokenizer.ts';
import type { Tokenizer } from '../../../src/llm/tokenizer/tokenizer.ts';
import { createRandom } from '../../../src/core/random.ts';
import { byteLevelJson, sentencePieceJson } from './tiny-tokenizers.ts';

const fixtures = fileURLToPath(new URL('../../../fixtures/llm/', import.meta.url));

interface Subject {
  readonly name: string;
  /** tokenizer.json's text. */
  readonly json: string;
  /** Strings to encode besides the random ones. */
  readonly texts: readonly string[];
}

function fixtureSubject(folder: string): Subject {
  const json = readFileSync(`${fixtures}${folder}/tokenizer.json`, 'utf8');
  let texts: string[] = [];
  try {
    const reference = JSON.parse(readFileSync(`${fixtures}${folder}/reference.json`, 'utf8')) as {
      cases?: { text: string }[];
    };
    texts = (reference.cases ?? []).map((c) => c.text);
  } catch {
    // a model folder: its reference.json holds logits, not tokenizer cases
  }
  return { name: folder, json, texts };
}

const subjects: Subject[] = [
  fixtureSubject('tokenizer-bytelevel'),
  fixtureSubject('tokenizer-sentencepiece'),
  fixtureSubject('tiny-llama'),
  {
    name: 'hand-written byte-level (tiny-tokenizers.ts)',
    json: JSON.stringify(byteLevelJson()),
    texts: ['Hello world', "the world's", ' Hello', 'Hello\n\nworld  ', 'xyz'],
  },
  {
    name: 'hand-written sentencepiece-style (tiny-tokenizers.ts)',
    json: JSON.stringify(sentencePieceJson()),
    texts: ['Hello world', ' leading space', 'a  b', 'ünïcödé'],
  },
];

/** Seeded strings mixing vocabulary pieces, special tokens, whitespace, digits and UTF-8. */
function randomTexts(json: string, count: number, seed: number): string[] {
  const parsed = JSON.parse(json) as {
    model: { vocab: Record<string, number> | [string, number][] };
    added_tokens?: { content: string }[];
  };
  const vocab = Array.isArray(parsed.model.vocab)
    ? parsed.model.vocab.map(([piece]) => piece)
    : Object.keys(parsed.model.vocab);
  // Pieces as text: byte-level marks (Ġ Ċ) and sentencepiece's ▁ back to spaces/newlines.
  const pieces = vocab
    .filter((p) => !/^<0x[0-9A-F]{2}>$/.test(p))
    .map((p) => p.replaceAll('Ġ', ' ').replaceAll('Ċ', '\n').replaceAll('▁', ' '));
  const specials = (parsed.added_tokens ?? []).map((t) => t.content);
  const extras = [
    ' ',
    '  ',
    '\n',
    '\n\n',
    '\t',
    ' \n ',
    '0',
    '42',
    '3.14',
    "'s",
    "'ll",
    '!?',
    'é',
    'ü',
    '日本',
    '語',
    '🙂',
    '👩‍💻',
    'Ω',
    '—',
    '\u00a0',
  ];
  const random = createRandom(seed);
  const pick = <T>(items: readonly T[]): T => items[random.int(items.length)] as T;
  const out: string[] = [];
  for (let i = 0; i < count; i += 1) {
    const parts = 1 + random.int(12);
    let text = '';
    for (let j = 0; j < parts; j += 1) {
      const u = random.next();
      if (u < 0.55) text += pick(pieces);
      else if (u < 0.9) text += pick(extras);
      else if (specials.length > 0) text += pick(specials);
    }
    out.push(text);
  }
  return out;
}

function ours(json: string): Tokenizer {
  const created = createTokenizer(JSON.parse(json));
  assert.ok(created.ok, created.ok ? '' : created.message);
  return created.tokenizer;
}

for (const subject of subjects) {
  test(`${subject.name}: ids and decoded text equal Hugging Face tokenizers'`, async () => {
    const mine = ours(subject.json);
    const theirs = HfTokenizer.fromString(subject.json);
    const texts = [...subject.texts, ...randomTexts(subject.json, 300, 17)];
    assert.ok(texts.length >= 300);
    for (const text of texts) {
      const label = JSON.stringify(text);
      for (const addSpecialTokens of [false, true]) {
        const expected = (await theirs.encode(text, null, { addSpecialTokens })).getIds();
        const ids = mine.encode(text, { addSpecialTokens });
        assert.deepEqual(ids, expected, `${label} (addSpecialTokens ${addSpecialTokens})`);
        for (const skipSpecialTokens of [false, true]) {
          assert.equal(
            mine.decode(ids, { skipSpecialTokens }),
            await theirs.decode(expected, skipSpecialTokens),
            `decode ${label} (skipSpecialTokens ${skipSpecialTokens})`,
          );
        }
      }
    }
  });
}
