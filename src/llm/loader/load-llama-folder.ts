// A Hugging Face Llama-family folder → checked config + float32 weights, or why not.
//
//   dir/config.json                         → readLlamaConfig
//   dir/model.safetensors                   ┐
//   dir/model.safetensors.index.json + shards ┘→ loadLlamaWeights
//
// The tokenizer files are not read here (src/llm/tokenizer loads tokenizer.json).

import { readJsonFile } from './read-json-file.ts';
import { readLlamaConfig, type LlamaConfig } from './llama-config.ts';
import { loadLlamaWeights, type LlamaWeights } from './llama-weights.ts';

export type LlamaFolderResult =
  | { readonly ok: true; readonly config: LlamaConfig; readonly weights: LlamaWeights }
  | { readonly ok: false; readonly message: string };

const maxConfigBytes = 16 << 20;

export async function loadLlamaFolder(directory: string): Promise<LlamaFolderResult> {
  const json = await readJsonFile(directory, 'config.json', maxConfigBytes);
  if (!json.ok) {
    return {
      ok: false,
      message: json.missing
        ? `${directory}: no config.json; is this a Hugging Face model folder?`
        : json.message,
    };
  }
  const parsed = readLlamaConfig(json.value);
  if (!parsed.ok) return { ok: false, message: `${directory}: ${parsed.message}` };
  const weights = await loadLlamaWeights(directory, parsed.config);
  if (!weights.ok) return weights;
  return { ok: true, config: parsed.config, weights: weights.weights };
}
