// A Llama-shaped model of ~100 M parameters with random weights, written at bench time (never
// committed) as a Hugging Face folder (config.json, model.safetensors F32, the tiny-llama
// fixture's tokenizer files) and, by our converter, as GGUF for llama.cpp.
//
// Shape (SmolLM / Llama-3.2-like proportions): hidden 768, 12 layers, 12 query heads sharing
// 4 key/value heads (head_dim 64), SwiGLU 2048, vocab 32,000 with tied embeddings:
//   12 × (q 768² + k,v 2·768·256 + o 768² + MLP 3·768·2048 + 2 norms) + 32,000 × 768 + 768
//   = 100,092,672 parameters, 400 MB in F32 — where memory bandwidth and SIMD width decide a
// decode step's cost rather than per-token overhead, unlike the 1 M-parameter fixture.
//
// The tokenizer names ids 0..1023 only; the converter writes the rest as unused "[PAD<id>]"
// tokens, and prompts use ids below 1024. Weights: uniform with standard deviation 0.02
// (transformers' initializer_range) from a seeded generator, norms 1, so every run times the
// same model.

import { copyFile, mkdir, open, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export const randomModelConfig = {
  architectures: ['LlamaForCausalLM'],
  model_type: 'llama',
  vocab_size: 32000,
  hidden_size: 768,
  intermediate_size: 2048,
  num_hidden_layers: 12,
  num_attention_heads: 12,
  num_key_value_heads: 4,
  head_dim: 64,
  max_position_embeddings: 2048,
  rms_norm_eps: 1e-5,
  rope_theta: 10000,
  hidden_act: 'silu',
  tie_word_embeddings: true,
  bos_token_id: 1019,
  eos_token_id: 1020,
  torch_dtype: 'float32',
} as const;

interface TensorPlan {
  readonly name: string;
  readonly shape: readonly number[];
  /** 'norm' tensors are all ones; the rest random. */
  readonly kind: 'norm' | 'random';
}

function tensorPlan(): TensorPlan[] {
  const c = randomModelConfig;
  const q = c.num_attention_heads * c.head_dim;
  const kv = c.num_key_value_heads * c.head_dim;
  const plan: TensorPlan[] = [
    { name: 'model.embed_tokens.weight', shape: [c.vocab_size, c.hidden_size], kind: 'random' },
  ];
  for (let n = 0; n < c.num_hidden_layers; n += 1) {
    const p = `model.layers.${n}`;
    plan.push(
      { name: `${p}.input_layernorm.weight`, shape: [c.hidden_size], kind: 'norm' },
      { name: `${p}.self_attn.q_proj.weight`, shape: [q, c.hidden_size], kind: 'random' },
      { name: `${p}.self_attn.k_proj.weight`, shape: [kv, c.hidden_size], kind: 'random' },
      { name: `${p}.self_attn.v_proj.weight`, shape: [kv, c.hidden_size], kind: 'random' },
      { name: `${p}.self_attn.o_proj.weight`, shape: [c.hidden_size, q], kind: 'random' },
      { name: `${p}.post_attention_layernorm.weight`, shape: [c.hidden_size], kind: 'norm' },
      {
        name: `${p}.mlp.gate_proj.weight`,
        shape: [c.intermediate_size, c.hidden_size],
        kind: 'random',
      },
      {
        name: `${p}.mlp.up_proj.weight`,
        shape: [c.intermediate_size, c.hidden_size],
        kind: 'random',
      },
      {
        name: `${p}.mlp.down_proj.weight`,
        shape: [c.hidden_size, c.intermediate_size],
        kind: 'random',
      },
    );
  }
  plan.push({ name: 'model.norm.weight', shape: [c.hidden_size], kind: 'norm' });
  return plan;
}

export function randomModelParameterCount(): number {
  return tensorPlan().reduce((sum, t) => sum + t.shape.reduce((p, d) => p * d, 1), 0);
}

/** xorshift32: a seeded stream of uniforms in [-1, 1). */
function uniforms(seed: number): (out: Float32Array) => void {
  let state = seed >>> 0 || 1;
  return (out) => {
    for (let i = 0; i < out.length; i += 1) {
      state ^= state << 13;
      state ^= state >>> 17;
      state ^= state << 5;
      out[i] = (state >>> 0) / 2147483648 - 1;
    }
  };
}

/** Writes the folder at `dir` (created); the tokenizer files are copied from `tokenizerDir`. */
export async function writeRandomLlamaFolder(
  dir: string,
  tokenizerDir: string,
  seed = 1,
): Promise<void> {
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'config.json'), JSON.stringify(randomModelConfig, null, 2));
  for (const name of ['tokenizer.json', 'tokenizer_config.json', 'generation_config.json']) {
    await copyFile(join(tokenizerDir, name), join(dir, name));
  }
  const plan = tensorPlan();
  const header: Record<string, unknown> = { __metadata__: { format: 'pt' } };
  let offset = 0;
  for (const t of plan) {
    const bytes = t.shape.reduce((p, d) => p * d, 1) * 4;
    header[t.name] = { dtype: 'F32', shape: t.shape, data_offsets: [offset, offset + bytes] };
    offset += bytes;
  }
  let json = JSON.stringify(header);
  while ((8 + Buffer.byteLength(json)) % 8 !== 0) json += ' ';
  const prefix = Buffer.alloc(8);
  prefix.writeBigUInt64LE(BigInt(Buffer.byteLength(json)));
  const file = await open(join(dir, 'model.safetensors'), 'w');
  try {
    await file.write(Buffer.concat([prefix, Buffer.from(json, 'utf8')]));
    const fill = uniforms(seed);
    const scale = 0.02 * Math.sqrt(3); // uniform on [-a, a] has standard deviation a / √3
    for (const t of plan) {
      const values = new Float32Array(t.shape.reduce((p, d) => p * d, 1));
      if (t.kind === 'norm') values.fill(1);
      else {
        fill(values);
        for (let i = 0; i < values.length; i += 1) values[i] = (values[i] ?? 0) * scale;
      }
      await file.write(new Uint8Array(values.buffer));
    }
  } finally {
    await file.close();
  }
}
