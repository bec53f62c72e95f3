// The GGUF converter, checked without llama.cpp: the committed tiny-llama written as GGUF and
// read back: header, metadata llama.cpp's "llama" architecture and "gpt2" vocabulary need,
// tensor table (ggml dims, F32, aligned offsets) and every tensor's elements, q/k rows in
// llama.cpp's RoPE order (and back). bench/llm-engine.ts checks llama.cpp's greedy tokens on
// the same file equal our engine's.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { ggufTokenTypes } from '../../../src/llm/gguf/gguf-format.ts';
import { ggufTokenizerMetadata } from '../../../src/llm/gguf/gguf-tokenizer-metadata.ts';
import { convertLlamaFolderToGguf, llamaGgufContents } from '../../../src/llm/gguf/llama-gguf.ts';
import { readGguf, type GgufFile } from '../../../src/llm/gguf/read-gguf.ts';
import { permuteRopeRows, unpermuteRopeRows } from '../../../src/llm/gguf/rope-row-permutation.ts';
import { ggufHeaderBytes } from '../../../src/llm/gguf/write-gguf.ts';
import { loadLlamaFolder } from '../../../src/llm/loader/load-llama-folder.ts';
import type { LlamaConfig } from '../../../src/llm/loader/llama-config.ts';
import type { LlamaWeights } from '../../../src/llm/loader/llama-weights.ts';

const modelDir = new URL('../../../fixtures/llm/tiny-llama/', import.meta.url).pathname;

let root = '';
let file: GgufFile;
let config: LlamaConfig;
let weights: LlamaWeights;
let tokenizerJson: {
  model: { vocab: Record<string, number>; merges: string[] };
  added_tokens: { id: number; content: string }[];
};

before(async () => {
  root = await mkdtemp(join(tmpdir(), 'kiln-gguf-'));
  const out = join(root, 'tiny-llama.gguf');
  const converted = await convertLlamaFolderToGguf(modelDir, out);
  assert.ok(converted.ok, converted.ok ? '' : converted.message);
  assert.equal(converted.bytes, (await stat(out)).size);
  const read = await readGguf(out);
  assert.ok(read.ok, read.ok ? '' : read.message);
  file = read.file;
  const loaded = await loadLlamaFolder(modelDir);
  assert.ok(loaded.ok);
  config = loaded.config;
  weights = loaded.weights;
  tokenizerJson = JSON.parse(
    await readFile(join(modelDir, 'tokenizer.json'), 'utf8'),
  ) as typeof tokenizerJson;
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});

function meta(key: string): unknown {
  const entry = file.metadata.get(key);
  assert.ok(entry !== undefined, `metadata ${key} missing`);
  return entry.value;
}

test('llama architecture metadata matches config.json', () => {
  assert.equal(file.version, 3);
  assert.equal(meta('general.architecture'), 'llama');
  assert.equal(meta('general.file_type'), 0);
  assert.equal(meta('llama.vocab_size'), 1024);
  assert.equal(meta('llama.embedding_length'), 128);
  assert.equal(meta('llama.block_count'), 4);
  assert.equal(meta('llama.feed_forward_length'), 384);
  assert.equal(meta('llama.attention.head_count'), 8);
  assert.equal(meta('llama.attention.head_count_kv'), 2);
  assert.equal(meta('llama.rope.dimension_count'), 16);
  assert.equal(meta('llama.context_length'), 512);
  assert.equal(meta('llama.rope.freq_base'), 10000);
  assert.equal(meta('llama.attention.layer_norm_rms_epsilon'), Math.fround(1e-5));
});

test('the tokenizer is written as a gpt2 (byte-level BPE) vocabulary', () => {
  assert.equal(meta('tokenizer.ggml.model'), 'gpt2');
  assert.equal(meta('tokenizer.ggml.pre'), 'gpt-2');
  const tokens = meta('tokenizer.ggml.tokens') as string[];
  const types = meta('tokenizer.ggml.token_type') as number[];
  assert.equal(tokens.length, 1024);
  assert.equal(types.length, 1024);
  for (const [text, id] of Object.entries(tokenizerJson.model.vocab)) {
    assert.equal(tokens[id], text);
    assert.equal(types[id], ggufTokenTypes.normal);
  }
  for (const { id, content } of tokenizerJson.added_tokens) {
    assert.equal(tokens[id], content);
    assert.equal(types[id], ggufTokenTypes.control);
  }
  assert.deepEqual(meta('tokenizer.ggml.merges'), tokenizerJson.model.merges);
  assert.equal(meta('tokenizer.ggml.bos_token_id'), 1019);
  assert.equal(meta('tokenizer.ggml.eos_token_id'), 1020);
  assert.equal(meta('tokenizer.ggml.add_bos_token'), true);
  assert.match(meta('tokenizer.chat_template') as string, /<\|start_header_id\|>/);
});

test('tensor table: llama.cpp names, ggml dims (innermost first), F32, aligned offsets', () => {
  assert.equal(file.tensors.length, 1 + 4 * 9 + 2);
  const dims = new Map(file.tensors.map((t) => [t.name, t.dims]));
  assert.deepEqual(dims.get('token_embd.weight'), [128, 1024]);
  assert.deepEqual(dims.get('blk.3.attn_q.weight'), [128, 128]);
  assert.deepEqual(dims.get('blk.3.attn_k.weight'), [128, 32]);
  assert.deepEqual(dims.get('blk.3.attn_v.weight'), [128, 32]);
  assert.deepEqual(dims.get('blk.3.attn_output.weight'), [128, 128]);
  assert.deepEqual(dims.get('blk.0.ffn_gate.weight'), [128, 384]);
  assert.deepEqual(dims.get('blk.0.ffn_down.weight'), [384, 128]);
  assert.deepEqual(dims.get('blk.0.attn_norm.weight'), [128]);
  assert.deepEqual(dims.get('output_norm.weight'), [128]);
  assert.deepEqual(dims.get('output.weight'), [128, 1024]);
  assert.equal(file.dataStart % 32, 0);
  for (const t of file.tensors) {
    assert.equal(t.ggmlType, 0, t.name);
    assert.equal(t.offset % 32, 0, t.name);
  }
});

test('every tensor holds the checkpoint values; q and k only reordered by rows', () => {
  const same = (name: string, expected: Float32Array): void =>
    assert.deepEqual(file.f32(name), expected, name);
  same('token_embd.weight', weights.embedTokens);
  same('output.weight', weights.lmHead);
  same('output_norm.weight', weights.norm);
  weights.layers.forEach((layer, n) => {
    same(`blk.${n}.attn_norm.weight`, layer.inputNorm);
    same(`blk.${n}.attn_v.weight`, layer.v);
    same(`blk.${n}.attn_output.weight`, layer.o);
    same(`blk.${n}.ffn_norm.weight`, layer.postAttentionNorm);
    same(`blk.${n}.ffn_gate.weight`, layer.gate);
    same(`blk.${n}.ffn_up.weight`, layer.up);
    same(`blk.${n}.ffn_down.weight`, layer.down);
    const q = file.f32(`blk.${n}.attn_q.weight`);
    const k = file.f32(`blk.${n}.attn_k.weight`);
    assert.notDeepEqual(q, layer.q, 'q rows are permuted');
    assert.deepEqual(unpermuteRopeRows(q, 8, 16, 128), layer.q);
    assert.deepEqual(unpermuteRopeRows(k, 2, 16, 128), layer.k);
  });
});

test("rotate_half pairs (i, i + D/2) become llama.cpp's adjacent pairs (2i, 2i + 1)", () => {
  // Two heads of width 4, one input feature: row r holds r.
  const rows = Float32Array.from([0, 1, 2, 3, 4, 5, 6, 7]);
  assert.deepEqual([...permuteRopeRows(rows, 2, 4, 1)], [0, 2, 1, 3, 4, 6, 5, 7]);
  const wide = Float32Array.from({ length: 2 * 6 * 3 }, (_, i) => i);
  assert.deepEqual(unpermuteRopeRows(permuteRopeRows(wide, 2, 6, 3), 2, 6, 3), wide);
});

test('RoPE scaling is written as rope_freqs divisors; tied embeddings drop output.weight', () => {
  const scaled: LlamaConfig = {
    ...config,
    ropeScaling: { type: 'linear', factor: 4 },
    tieWordEmbeddings: true,
  };
  const contents = llamaGgufContents('x', scaled, weights, new Map());
  const names = contents.tensors.map((t) => t.name);
  assert.ok(!names.includes('output.weight'));
  const freqs = contents.tensors.find((t) => t.name === 'rope_freqs.weight');
  assert.ok(freqs !== undefined);
  assert.deepEqual(freqs.shape, [8]);
  for (const factor of freqs.data()) assert.ok(Math.abs(factor - 4) < 1e-5, String(factor));
  assert.equal(ggufHeaderBytes(contents).length % 32, 0);
});

test('tokenizers llama.cpp would read differently are refused by name', () => {
  const base = { vocabSize: 4, bosTokenId: null, eosTokenIds: [] };
  const spm = ggufTokenizerMetadata({
    ...base,
    tokenizer: {
      model: { type: 'BPE', byte_fallback: true, vocab: {}, merges: [] },
      pre_tokenizer: { type: 'Metaspace' },
    },
  });
  assert.equal(spm.ok, false);
  assert.match(spm.ok ? '' : spm.message, /byte_fallback/);
  const prefix = ggufTokenizerMetadata({
    ...base,
    tokenizer: {
      model: { type: 'BPE', vocab: {}, merges: [] },
      pre_tokenizer: { type: 'ByteLevel', add_prefix_space: true },
    },
  });
  assert.equal(prefix.ok, false);
  assert.match(prefix.ok ? '' : prefix.message, /add_prefix_space/);
  const outside = ggufTokenizerMetadata({
    ...base,
    tokenizer: {
      model: { type: 'BPE', vocab: { a: 9 }, merges: [] },
      pre_tokenizer: { type: 'ByteLevel' },
    },
  });
  assert.equal(outside.ok, false);
  assert.match(outside.ok ? '' : outside.message, /outside vocab_size 4/);
});
