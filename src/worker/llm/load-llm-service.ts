// Starts the engine of an hf-llm worker on its verified model folder, with the endpoint's
// serving settings (spec.llm, defaults filled), and wires its metrics into the worker's
// registry. A folder the engine cannot load is a value with the reason, as for any runtime.

import type { Registry } from 'prom-client';
import type { LlamaConfig } from '../../llm/loader/llama-config.ts';
import type { EngineOptions } from '../../llm/serving/engine-api.ts';
import {
  resolveLlmServingConfig,
  type ResolvedLlmServingConfig,
} from '../../llm/serving/llm-serving-config.ts';
import { startEngine } from '../../llm/serving/start-engine.ts';
import type { WorkerSpec } from '../worker-spec.ts';
import { LlmMetrics } from './llm-metrics.ts';
import type { LlmService } from './llm-service.ts';

export function engineOptionsOf(config: ResolvedLlmServingConfig): EngineOptions {
  return {
    kvCacheBytes: config.kvCacheBytes,
    blockSize: config.blockSize,
    maxNumSeqs: config.maxNumSeqs,
    maxNumBatchedTokens: config.maxNumBatchedTokens,
    maxWaiting: config.maxWaiting,
    prefixCaching: config.prefixCaching,
    threads: config.threads,
    batching: 'continuous',
    maxPausedBlocks: config.maxPausedBlocks,
  };
}

export async function loadLlmService(
  spec: WorkerSpec,
  modelDir: string,
  registry: Registry,
): Promise<{ ok: true; service: LlmService; memoryBytes: number } | { ok: false; reason: string }> {
  const config = resolveLlmServingConfig(spec.llm);
  const started = await startEngine(modelDir, engineOptionsOf(config));
  if (!started.ok) return { ok: false, reason: started.message };
  return {
    ok: true,
    service: {
      engine: started.engine,
      tokenizer: started.tokenizer,
      config,
      metrics: new LlmMetrics(registry),
      createdSeconds: Math.floor(Date.now() / 1000),
      inflight: 0,
      tokenTexts: new Map(),
    },
    memoryBytes: config.threads * (weightBytes(started.modelConfig) + config.kvCacheBytes),
  };
}

/**
 * Bytes of a model replica's float32 weights (what the engine holds, whatever the file's
 * dtype): embeddings, the output head unless tied, and each layer's projections and norms.
 */
export function weightBytes(config: LlamaConfig): number {
  const { vocabSize: v, hiddenSize: h, intermediateSize: i, headDim: d } = config;
  const attention = h * d * (2 * config.numAttentionHeads + 2 * config.numKeyValueHeads);
  const layer = attention + 3 * h * i + 2 * h;
  const heads = config.tieWordEmbeddings ? v * h : 2 * v * h;
  return 4 * (heads + h + config.numHiddenLayers * layer);
}
