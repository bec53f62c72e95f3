// A Hugging Face Llama folder made into an in-process ServingEngine: the model (with its KV
// cache sized from the options) and the tokenizer. The engine threads build theirs with it;
// tests and benches use it to drive the step loop directly.

import { createModel } from '../engine/create-model.ts';
import type { LlamaConfig } from '../loader/llama-config.ts';
import { loadLlamaFolder } from '../loader/load-llama-folder.ts';
import { loadTokenizer } from '../tokenizer/load-tokenizer.ts';
import type { Tokenizer } from '../tokenizer/tokenizer.ts';
import type { EngineOptions } from './engine-api.ts';
import { ServingEngine } from './serving-engine.ts';

export type ServingEngineSetup = Omit<EngineOptions, 'threads'>;

export type CreateServingEngineResult =
  | {
      readonly ok: true;
      readonly engine: ServingEngine;
      readonly tokenizer: Tokenizer;
      readonly modelConfig: LlamaConfig;
    }
  | { readonly ok: false; readonly message: string };

/** Why the options cannot make an engine; null when they can. */
export function checkEngineOptions(options: EngineOptions): string | null {
  const wholeAtLeast = (name: keyof EngineOptions, min: number): string | null => {
    const value = options[name];
    return Number.isSafeInteger(value) && (value as number) >= min
      ? null
      : `${name} must be a whole number ≥ ${min}, not ${String(value)}`;
  };
  return (
    wholeAtLeast('kvCacheBytes', 1) ??
    wholeAtLeast('blockSize', 1) ??
    wholeAtLeast('maxNumSeqs', 1) ??
    wholeAtLeast('maxNumBatchedTokens', 1) ??
    wholeAtLeast('maxWaiting', 0) ??
    wholeAtLeast('threads', 1) ??
    wholeAtLeast('maxPausedBlocks', 0) ??
    (typeof options.prefixCaching === 'boolean'
      ? null
      : `prefixCaching must be true or false, not ${String(options.prefixCaching)}`) ??
    (options.batching === 'continuous' || options.batching === 'static'
      ? null
      : `batching must be 'continuous' or 'static', not ${String(options.batching)}`)
  );
}

export async function createServingEngine(
  folder: string,
  options: ServingEngineSetup,
): Promise<CreateServingEngineResult> {
  const problem = checkEngineOptions({ ...options, threads: 1 });
  if (problem !== null) return { ok: false, message: problem };
  const [loaded, tokenizer] = await Promise.all([loadLlamaFolder(folder), loadTokenizer(folder)]);
  if (!loaded.ok) return loaded;
  if (!tokenizer.ok) return { ok: false, message: `${folder}: ${tokenizer.message}` };
  const created = createModel(loaded.config, loaded.weights, {
    kvCacheBytes: options.kvCacheBytes,
    blockSize: options.blockSize,
    // A whole step's plan fits one forward call.
    maxTokensPerStep: options.maxNumBatchedTokens,
  });
  if (!created.ok) return created;
  return {
    ok: true,
    engine: new ServingEngine(created.model, tokenizer.tokenizer, options),
    tokenizer: tokenizer.tokenizer,
    modelConfig: loaded.config,
  };
}
