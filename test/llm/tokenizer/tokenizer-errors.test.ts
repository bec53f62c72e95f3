// Bad tokenizer files: every problem is an error value that names its cause.

import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

import { createTokenizer } from '../../../src/llm/tokenizer/create-tokenizer.ts';
import { loadTokenizer } from '../../../src/llm/tokenizer/load-tokenizer.ts';
import { byteLevelJson, sentencePieceJson } from './tiny-tokenizers.ts';

function failure(json: unknown): string {
  const created = createTokenizer(json);
  assert.equal(created.ok, false);
  return created.ok ? '' : created.message;
}

function withField(
  base: Record<string, unknown>,
  field: string,
  value: unknown,
): Record<string, unknown> {
  return { ...base, [field]: value };
}

function withModel(
  base: Record<string, unknown>,
  changes: Record<string, unknown>,
): Record<string, unknown> {
  return { ...base, model: { ...(base.model as Record<string, unknown>), ...changes } };
}

test('unsupported model types are named', () => {
  const base = byteLevelJson();
  assert.equal(
    failure(withField(base, 'model', { type: 'WordPiece', vocab: {} })),
    'unsupported tokenizer model type: WordPiece (only BPE is implemented)',
  );
  assert.equal(
    failure(withField(base, 'model', { type: 'Unigram', vocab: [] })),
    'unsupported tokenizer model type: Unigram (only BPE is implemented)',
  );
  assert.equal(failure(withField(base, 'model', null)), 'tokenizer.json has no "model" object');
  assert.equal(failure([]), 'tokenizer.json must hold a JSON object');
});

test('unsupported normalizers, pre-tokenizers, decoders and post-processors are named', () => {
  const base = sentencePieceJson();
  assert.equal(
    failure(withField(base, 'normalizer', { type: 'Precompiled', precompiled_charsmap: '' })),
    'unsupported normalizer type: Precompiled',
  );
  assert.equal(
    failure(
      withField(base, 'normalizer', {
        type: 'Sequence',
        normalizers: [{ type: 'BertNormalizer' }],
      }),
    ),
    'unsupported normalizer type: BertNormalizer',
  );
  assert.equal(
    failure(withField(base, 'pre_tokenizer', { type: 'BertPreTokenizer' })),
    'unsupported pre_tokenizer type: BertPreTokenizer',
  );
  assert.equal(
    failure(withField(base, 'decoder', { type: 'WordPiece', prefix: '##' })),
    'unsupported decoder type: WordPiece',
  );
  assert.equal(
    failure(withField(base, 'post_processor', { type: 'Whatever' })),
    'unsupported post_processor type: Whatever',
  );
  assert.equal(
    failure(withField(base, 'decoder', { decoders: [] })),
    'unsupported decoder type: (missing)',
  );
});

test('malformed BPE models are refused with the reason', () => {
  const base = byteLevelJson();
  assert.equal(
    failure(withModel(base, { merges: ['a b c'] })),
    'BPE model: merge 1 is not "a b" or ["a", "b"]',
  );
  assert.equal(
    failure(withModel(base, { merges: ['q Q'] })),
    'BPE model: merge 1 (q Q) uses a token not in vocab',
  );
  assert.equal(
    failure(withModel(base, { vocab: { a: -1 } })),
    'BPE model: vocab id of "a" is not an id: -1',
  );
  assert.equal(
    failure(withModel(base, { dropout: 0.1 })),
    'BPE model: dropout is not supported (it makes encoding random)',
  );
  assert.equal(
    failure(withModel(base, { unk_token: '<nope>' })),
    'BPE model: unk_token <nope> not in vocab',
  );
  assert.equal(failure(withModel(base, { merges: 'a b' })), 'BPE model: "merges" must be an array');
});

test('malformed components are refused with the reason', () => {
  const base = byteLevelJson();
  assert.equal(
    failure(withField(base, 'added_tokens', [{ id: 1, content: '' }])),
    'added_tokens[0]: "content" must be a non-empty string',
  );
  assert.equal(
    failure(
      withField(base, 'pre_tokenizer', {
        type: 'Split',
        pattern: { Regex: '(?>x)' },
        behavior: 'Isolated',
      }),
    ),
    'unsupported regex "(?>x)": atomic group (?>…)',
  );
  assert.equal(
    failure(
      withField(base, 'pre_tokenizer', {
        type: 'Split',
        pattern: { String: ' ' },
        behavior: 'Sideways',
      }),
    ),
    'Split pre_tokenizer: unknown behavior Sideways',
  );
  assert.equal(
    failure(
      withField(base, 'post_processor', {
        type: 'TemplateProcessing',
        single: [{ SpecialToken: { id: '<x>' } }, { Sequence: { id: 'A' } }],
        special_tokens: {},
      }),
    ),
    'TemplateProcessing: special token <x> has no ids',
  );
});

test('loadTokenizer reports a missing folder, a missing file and invalid JSON', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'kiln-tokenizer-'));
  try {
    const missing = await loadTokenizer(join(dir, 'nope'));
    assert.equal(missing.ok, false);
    assert.equal(
      !missing.ok && missing.message,
      `cannot read ${join(dir, 'nope', 'tokenizer.json')}: ENOENT`,
    );

    await writeFile(join(dir, 'tokenizer.json'), '{"model": ');
    const invalid = await loadTokenizer(dir);
    assert.ok(
      !invalid.ok &&
        invalid.message.startsWith(`${join(dir, 'tokenizer.json')} is not valid JSON:`),
    );

    await writeFile(
      join(dir, 'tokenizer.json'),
      JSON.stringify(withField(byteLevelJson(), 'model', { type: 'Unigram' })),
    );
    const unsupported = await loadTokenizer(dir);
    assert.equal(
      !unsupported.ok && unsupported.message,
      `${join(dir, 'tokenizer.json')}: unsupported tokenizer model type: Unigram (only BPE is implemented)`,
    );

    await writeFile(join(dir, 'tokenizer.json'), JSON.stringify(byteLevelJson()));
    await writeFile(join(dir, 'tokenizer_config.json'), '{"bos_token": 5}');
    const badConfig = await loadTokenizer(dir);
    assert.equal(
      !badConfig.ok && badConfig.message,
      'tokenizer_config.json: bos_token must be a string or {"content": …}',
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
