// A loaded Hugging Face Llama folder (src/llm/loader) made into a runnable model: the
// config's dimensions, the weights copied into the model's kernel arena, RoPE frequencies
// with the folder's scaling, and a paged KV cache sized from a memory budget.

import type { LlamaConfig } from '../loader/llama-config.ts';
import type { LlamaWeights } from '../loader/llama-weights.ts';
import { ropeInverseFrequencies } from '../loader/rope-inverse-frequencies.ts';
import { bytesPerBlock } from '../kv-cache/block-pool.ts';
import {
  LlamaModel,
  weightFloatsOf,
  type LlamaDims,
  type LlamaModelOptions,
} from '../model/llama-model.ts';

/** wasm32 memory: 65,536 pages of 64 KiB, less the arena's reserved first pages. */
const maxArenaBytes = 4 * 2 ** 30 - 2 ** 20;

export interface ModelOptions {
  /** Bytes for the KV cache (keys and values, every layer). Default 64 MiB. */
  readonly kvCacheBytes?: number;
  /** Token positions per KV block. Default 16. */
  readonly blockSize?: number;
  /** Most new tokens one forward call carries (prefill is chunked). Default 512. */
  readonly maxTokensPerStep?: number;
}

export function llamaDims(config: LlamaConfig): LlamaDims {
  return {
    vocabSize: config.vocabSize,
    hiddenSize: config.hiddenSize,
    intermediateSize: config.intermediateSize,
    numLayers: config.numHiddenLayers,
    numHeads: config.numAttentionHeads,
    numKvHeads: config.numKeyValueHeads,
    headDim: config.headDim,
    rmsNormEps: config.rmsNormEps,
  };
}

/** The model with its KV cache (`model.pool`), or why the budget cannot hold one block. */
export function createModel(
  config: LlamaConfig,
  weights: LlamaWeights,
  options: ModelOptions = {},
): { ok: true; model: LlamaModel } | { ok: false; message: string } {
  const dims = llamaDims(config);
  const blockSize = options.blockSize ?? 16;
  const perBlock = bytesPerBlock({
    numLayers: dims.numLayers,
    numKvHeads: dims.numKvHeads,
    headDim: dims.headDim,
    blockSize,
  });
  const budget = options.kvCacheBytes ?? 64 << 20;
  const numBlocks = Math.floor(budget / perBlock);
  if (numBlocks < 1) {
    return {
      ok: false,
      message: `a KV cache budget of ${budget} bytes holds no block (one takes ${perBlock})`,
    };
  }
  // Weights, KV cache and scratch share one WebAssembly memory: at most 4 GiB (wasm32).
  const modelOptions: LlamaModelOptions = {
    kvCache: { numBlocks, blockSize },
    maxPositions: config.maxPositionEmbeddings,
    ...(options.maxTokensPerStep === undefined
      ? {}
      : { maxTokensPerStep: options.maxTokensPerStep }),
  };
  const weightBytes = 4 * weightFloatsOf(weights);
  const cacheBytes = numBlocks * perBlock;
  const totalBytes = LlamaModel.arenaBytes(dims, weightBytes / 4, modelOptions);
  if (totalBytes > maxArenaBytes) {
    const gib = (bytes: number): string => (bytes / 2 ** 30).toFixed(2);
    return {
      ok: false,
      message: `the model's float32 weights (${gib(weightBytes)} GiB), KV cache (${gib(cacheBytes)} GiB) and working memory (${gib(totalBytes - weightBytes - cacheBytes)} GiB) exceed the engine's ${gib(maxArenaBytes)} GiB of WebAssembly memory`,
    };
  }
  try {
    const model = new LlamaModel(dims, weights, ropeInverseFrequencies(config), modelOptions);
    return { ok: true, model };
  } catch (error) {
    // The memory itself could not be had (the machine, not the request).
    return {
      ok: false,
      message: `could not set up the model's memory: ${(error as Error).message}`,
    };
  }
}
