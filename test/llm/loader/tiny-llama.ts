// A tiny Llama folder written by the tests: 2 layers, hidden 8, 2 query heads sharing 1 KV
// head (GQA), head_dim 4, MLP 12, vocab 10. Every weight element has a value computed from
// its tensor's position in the spec list and its index, so a test can tell whether each
// tensor landed in the right field and in the right order. The values are multiples of 1/8
// in [-3.75, 3.75], exact in F32, F16 and BF16 alike.

import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { LlamaConfig } from '../../../src/llm/loader/llama-config.ts';
import { readLlamaConfig } from '../../../src/llm/loader/llama-config.ts';
import { llamaTensorSpecs } from '../../../src/llm/loader/llama-tensor-specs.ts';
import {
  bfloat16Bits,
  f32Bytes,
  float16Bits,
  safetensorsBytes,
  u16Bytes,
  type WriterTensor,
} from './safetensors-writer.ts';

export const tinyConfigJson = {
  architectures: ['LlamaForCausalLM'],
  model_type: 'llama',
  vocab_size: 10,
  hidden_size: 8,
  intermediate_size: 12,
  num_hidden_layers: 2,
  num_attention_heads: 2,
  num_key_value_heads: 1,
  max_position_embeddings: 32,
  rms_norm_eps: 1e-5,
  rope_theta: 10000,
  hidden_act: 'silu',
  tie_word_embeddings: false,
  bos_token_id: 1,
  eos_token_id: 2,
  torch_dtype: 'float32',
} as const;

export type TinyDtype = 'F32' | 'F16' | 'BF16';

export function parseConfig(json: unknown): LlamaConfig {
  const parsed = readLlamaConfig(json);
  if (!parsed.ok) throw new Error(parsed.message);
  return parsed.config;
}

/** Element i of the t-th tensor in llamaTensorSpecs order. */
export function tinyValue(tensorIndex: number, i: number): number {
  return (((tensorIndex * 31 + i * 7) % 61) - 30) / 8;
}

export function tinyValues(tensorIndex: number, numElements: number): Float32Array {
  const out = new Float32Array(numElements);
  for (let i = 0; i < numElements; i += 1) out[i] = tinyValue(tensorIndex, i);
  return out;
}

export function encode(values: Float32Array, dtype: TinyDtype): Uint8Array {
  if (dtype === 'F32') return f32Bytes(values);
  const bits = Array.from(values, (v) => (dtype === 'F16' ? float16Bits(v) : bfloat16Bits(v)));
  return u16Bytes(bits);
}

/** The model's tensors in spec order, as a writer would save them. */
export function tinyTensors(config: LlamaConfig, dtype: TinyDtype): Record<string, WriterTensor> {
  const out: Record<string, WriterTensor> = {};
  llamaTensorSpecs(config).forEach((spec, t) => {
    const count = spec.shape.reduce((a, b) => a * b, 1);
    out[spec.name] = { dtype, shape: spec.shape, bytes: encode(tinyValues(t, count), dtype) };
  });
  return out;
}

export interface TinyFolderOptions {
  readonly configJson?: Readonly<Record<string, unknown>>;
  readonly dtype?: TinyDtype;
  /** Number of shard files; 1 writes model.safetensors with no index. */
  readonly shards?: number;
  /** Edits the tensor list before writing (drop, reshape, add). */
  readonly edit?: (tensors: Record<string, WriterTensor>) => void;
}

/** Writes config.json and the weights into `dir` (created if needed); returns the config. */
export async function writeTinyLlama(
  dir: string,
  options: TinyFolderOptions = {},
): Promise<LlamaConfig> {
  const configJson = options.configJson ?? tinyConfigJson;
  const config = parseConfig(configJson);
  const tensors = tinyTensors(config, options.dtype ?? 'F32');
  options.edit?.(tensors);
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'config.json'), JSON.stringify(configJson));
  const shards = options.shards ?? 1;
  if (shards === 1) {
    await writeFile(join(dir, 'model.safetensors'), safetensorsBytes(tensors));
    return config;
  }
  // Round-robin, so each shard holds tensors from every part of the model.
  const parts: Record<string, WriterTensor>[] = Array.from({ length: shards }, () => ({}));
  const weightMap: Record<string, string> = {};
  const names = Object.keys(tensors);
  names.forEach((name, i) => {
    const part = parts[i % shards];
    const tensor = tensors[name];
    if (part === undefined || tensor === undefined) return;
    part[name] = tensor;
    weightMap[name] = shardName(i % shards, shards);
  });
  for (let s = 0; s < shards; s += 1) {
    await writeFile(join(dir, shardName(s, shards)), safetensorsBytes(parts[s] ?? {}));
  }
  await writeFile(
    join(dir, 'model.safetensors.index.json'),
    JSON.stringify({ metadata: { total_size: 0 }, weight_map: weightMap }),
  );
  return config;
}

export function shardName(index: number, count: number): string {
  const pad = (n: number): string => String(n).padStart(5, '0');
  return `model-${pad(index + 1)}-of-${pad(count)}.safetensors`;
}
