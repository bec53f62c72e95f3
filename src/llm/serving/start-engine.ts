// The serving engine for an hf-llm folder, as its users (the worker, benches) start it: the
// tokenizer and the model's config here, for the caller to encode prompts and check limits;
// the engine behind LlmEngine on `options.threads` worker threads, each loading its own model
// replica. Errors are values with a message naming the problem.

import type { LlamaConfig } from '../loader/llama-config.ts';
import { readLlamaConfig } from '../loader/llama-config.ts';
import { readJsonFile } from '../loader/read-json-file.ts';
import { loadTokenizer } from '../tokenizer/load-tokenizer.ts';
import type { Tokenizer } from '../tokenizer/tokenizer.ts';
import { checkEngineOptions } from './create-serving-engine.ts';
import type { EngineOptions, LlmEngine } from './engine-api.ts';
import { EngineHost } from './engine-host.ts';

export type StartEngineResult =
  | {
      readonly ok: true;
      readonly engine: LlmEngine;
      readonly tokenizer: Tokenizer;
      /** Prompt + output positions at most. */
      readonly contextLength: number;
      readonly modelConfig: LlamaConfig;
    }
  | { readonly ok: false; readonly message: string };

export async function startEngine(
  folder: string,
  options: EngineOptions,
): Promise<StartEngineResult> {
  const problem = checkEngineOptions(options);
  if (problem !== null) return { ok: false, message: problem };
  const json = await readJsonFile(folder, 'config.json', 16 << 20);
  if (!json.ok)
    return {
      ok: false,
      message: json.missing
        ? `${folder}: no config.json; is this a Hugging Face model folder?`
        : json.message,
    };
  const config = readLlamaConfig(json.value);
  if (!config.ok) return { ok: false, message: `${folder}: ${config.message}` };
  const tokenizer = await loadTokenizer(folder);
  if (!tokenizer.ok) return { ok: false, message: `${folder}: ${tokenizer.message}` };
  // The threads load the weights (each its own replica) and report what failed.
  const host = await EngineHost.start(folder, options);
  if (!host.ok) return host;
  return {
    ok: true,
    engine: host.engine,
    tokenizer: tokenizer.tokenizer,
    contextLength: host.engine.contextLength,
    modelConfig: config.config,
  };
}
