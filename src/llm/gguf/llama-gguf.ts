// A Hugging Face Llama folder (our loader's config + float32 weights + tokenizer.json) as a
// GGUF file for llama.cpp's "llama" architecture, all tensors F32, so llama.cpp runs exactly
// the model our engine runs (bench/llm-engine.ts checks their greedy tokens agree).
//
//   HF tensor                                   GGUF tensor               change
//   model.embed_tokens.weight                   token_embd.weight
//   model.layers.N.input_layernorm.weight       blk.N.attn_norm.weight
//   model.layers.N.self_attn.{q,k}_proj.weight  blk.N.attn_{q,k}.weight   rows permuted (rope-row-permutation.ts)
//   model.layers.N.self_attn.{v,o}_proj.weight  blk.N.attn_{v,output}.weight
//   model.layers.N.post_attention_layernorm     blk.N.ffn_norm.weight
//   model.layers.N.mlp.{gate,up,down}_proj      blk.N.ffn_{gate,up,down}.weight
//   model.norm.weight                           output_norm.weight
//   lm_head.weight                              output.weight             (absent when tied)
//   (RoPE scaling)                              rope_freqs.weight         per-pair divisors
//
// RoPE scaling (linear, llama3) is written as rope_freqs: llama.cpp divides pair i's angle by
// factor i, so factor i = unscaled frequency i ÷ our scaled frequency i reproduces any
// per-pair scaling our loader computes.

import { readFile } from 'node:fs/promises';
import { basename, join } from 'node:path';

import type { LlamaConfig } from '../loader/llama-config.ts';
import type { LlamaWeights } from '../loader/llama-weights.ts';
import { loadLlamaFolder } from '../loader/load-llama-folder.ts';
import { ropeInverseFrequencies } from '../loader/rope-inverse-frequencies.ts';
import type { GgufValue } from './gguf-format.ts';
import { ggufTokenizerMetadata } from './gguf-tokenizer-metadata.ts';
import { permuteRopeRows } from './rope-row-permutation.ts';
import { writeGguf, type GgufContents, type GgufTensorSource } from './write-gguf.ts';

export type LlamaGgufResult =
  | { readonly ok: true; readonly contents: GgufContents }
  | { readonly ok: false; readonly message: string };

/** The model's metadata (general.*, llama.*) and tensors; tokenizer metadata is added as given. */
export function llamaGgufContents(
  name: string,
  config: LlamaConfig,
  weights: LlamaWeights,
  tokenizerMetadata: ReadonlyMap<string, GgufValue>,
): GgufContents {
  const u32 = (value: number): GgufValue => ({ type: 'uint32', value });
  const f32 = (value: number): GgufValue => ({ type: 'float32', value });
  const metadata = new Map<string, GgufValue>([
    ['general.architecture', { type: 'string', value: 'llama' }],
    ['general.name', { type: 'string', value: name }],
    ['general.file_type', u32(0)], // LLAMA_FTYPE_ALL_F32
    ['llama.vocab_size', u32(config.vocabSize)],
    ['llama.context_length', u32(config.maxPositionEmbeddings)],
    ['llama.embedding_length', u32(config.hiddenSize)],
    ['llama.block_count', u32(config.numHiddenLayers)],
    ['llama.feed_forward_length', u32(config.intermediateSize)],
    ['llama.attention.head_count', u32(config.numAttentionHeads)],
    ['llama.attention.head_count_kv', u32(config.numKeyValueHeads)],
    ['llama.attention.key_length', u32(config.headDim)],
    ['llama.attention.value_length', u32(config.headDim)],
    ['llama.rope.dimension_count', u32(config.headDim)],
    ['llama.rope.freq_base', f32(config.ropeTheta)],
    ['llama.attention.layer_norm_rms_epsilon', f32(config.rmsNormEps)],
    ...tokenizerMetadata,
  ]);

  const { hiddenSize: hidden, headDim, intermediateSize: ffn } = config;
  const qRows = config.numAttentionHeads * headDim;
  const kvRows = config.numKeyValueHeads * headDim;
  const tensor = (
    tensorName: string,
    shape: number[],
    data: () => Float32Array,
  ): GgufTensorSource => ({ name: tensorName, shape, data });
  const tensors: GgufTensorSource[] = [
    tensor('token_embd.weight', [config.vocabSize, hidden], () => weights.embedTokens),
  ];
  if (config.ropeScaling !== null) {
    const scaled = ropeInverseFrequencies(config);
    const unscaled = ropeInverseFrequencies({ ...config, ropeScaling: null });
    tensors.push(
      tensor('rope_freqs.weight', [headDim / 2], () =>
        unscaled.map((frequency, i) => frequency / (scaled[i] ?? frequency)),
      ),
    );
  }
  weights.layers.forEach((layer, n) => {
    const blk = `blk.${n}`;
    tensors.push(
      tensor(`${blk}.attn_norm.weight`, [hidden], () => layer.inputNorm),
      tensor(`${blk}.attn_q.weight`, [qRows, hidden], () =>
        permuteRopeRows(layer.q, config.numAttentionHeads, headDim, hidden),
      ),
      tensor(`${blk}.attn_k.weight`, [kvRows, hidden], () =>
        permuteRopeRows(layer.k, config.numKeyValueHeads, headDim, hidden),
      ),
      tensor(`${blk}.attn_v.weight`, [kvRows, hidden], () => layer.v),
      tensor(`${blk}.attn_output.weight`, [hidden, qRows], () => layer.o),
      tensor(`${blk}.ffn_norm.weight`, [hidden], () => layer.postAttentionNorm),
      tensor(`${blk}.ffn_gate.weight`, [ffn, hidden], () => layer.gate),
      tensor(`${blk}.ffn_up.weight`, [ffn, hidden], () => layer.up),
      tensor(`${blk}.ffn_down.weight`, [hidden, ffn], () => layer.down),
    );
  });
  tensors.push(tensor('output_norm.weight', [hidden], () => weights.norm));
  // Tied embeddings: llama.cpp uses token_embd.weight when output.weight is absent.
  if (!config.tieWordEmbeddings) {
    tensors.push(tensor('output.weight', [config.vocabSize, hidden], () => weights.lmHead));
  }
  return { metadata, tensors };
}

async function readJson(path: string, required: boolean): Promise<unknown> {
  try {
    return JSON.parse(await readFile(path, 'utf8')) as unknown;
  } catch (error) {
    if (!required && (error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

export type ConvertResult =
  | { readonly ok: true; readonly bytes: number; readonly tensors: number }
  | { readonly ok: false; readonly message: string };

/** Converts a Hugging Face Llama folder to one F32 GGUF file at `outPath`. */
export async function convertLlamaFolderToGguf(
  directory: string,
  outPath: string,
): Promise<ConvertResult> {
  const loaded = await loadLlamaFolder(directory);
  if (!loaded.ok) return loaded;
  let tokenizer: unknown;
  let tokenizerConfig: unknown;
  try {
    tokenizer = await readJson(join(directory, 'tokenizer.json'), true);
    tokenizerConfig = await readJson(join(directory, 'tokenizer_config.json'), false);
  } catch (error) {
    return { ok: false, message: `${directory}: ${(error as Error).message}` };
  }
  const vocab = ggufTokenizerMetadata({
    tokenizer,
    tokenizerConfig,
    vocabSize: loaded.config.vocabSize,
    bosTokenId: loaded.config.bosTokenId,
    eosTokenIds: loaded.config.eosTokenIds,
  });
  if (!vocab.ok) return { ok: false, message: `${directory}/${vocab.message}` };
  const contents = llamaGgufContents(
    basename(directory),
    loaded.config,
    loaded.weights,
    vocab.metadata,
  );
  const bytes = await writeGguf(outPath, contents);
  return { ok: true, bytes, tensors: contents.tensors.length };
}
