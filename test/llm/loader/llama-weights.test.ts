import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFile, mkdir, mkdtemp, readFile, rm, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadLlamaWeights, type LlamaWeights } from '../../../src/llm/loader/llama-weights.ts';
import { llamaTensorSpecs } from '../../../src/llm/loader/llama-tensor-specs.ts';
import {
  openSafetensorsCheckpoint,
  readCheckpointTensors,
} from '../../../src/llm/loader/safetensors-checkpoint.ts';
import type { LlamaConfig } from '../../../src/llm/loader/llama-config.ts';
import { f32Bytes, safetensorsBytes, u16Bytes } from './safetensors-writer.ts';
import {
  parseConfig,
  shardName,
  tinyConfigJson,
  tinyValues,
  writeTinyLlama,
  type TinyDtype,
  type TinyFolderOptions,
} from './tiny-llama.ts';

let root = '';
let folders = 0;
before(async () => {
  root = await mkdtemp(join(tmpdir(), 'kiln-llama-weights-'));
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});

/** A fresh folder with the tiny model written into it. */
async function folder(
  options: TinyFolderOptions = {},
): Promise<{ dir: string; config: LlamaConfig }> {
  folders += 1;
  const dir = join(root, `model-${folders}`);
  const config = await writeTinyLlama(dir, options);
  return { dir, config };
}

async function loaded(dir: string, config: LlamaConfig): Promise<LlamaWeights> {
  const result = await loadLlamaWeights(dir, config);
  assert.ok(result.ok, result.ok ? '' : result.message);
  return result.weights;
}

async function refused(dir: string, config: LlamaConfig): Promise<string> {
  const result = await loadLlamaWeights(dir, config);
  assert.equal(result.ok, false, 'expected a refusal');
  return result.ok ? '' : result.message;
}

/** Every field against the values the writer put in, by spec order. */
function assertTinyWeights(weights: LlamaWeights, config: LlamaConfig): void {
  const specs = llamaTensorSpecs(config);
  const expected = (name: string): number[] => {
    const t = specs.findIndex((spec) => spec.name === name);
    const spec = specs[t];
    assert.ok(spec, `no spec ${name}`);
    return Array.from(
      tinyValues(
        t,
        spec.shape.reduce((a, b) => a * b, 1),
      ),
    );
  };
  assert.deepEqual(Array.from(weights.embedTokens), expected('model.embed_tokens.weight'));
  assert.equal(weights.layers.length, 2);
  const fields = {
    inputNorm: 'input_layernorm',
    q: 'self_attn.q_proj',
    k: 'self_attn.k_proj',
    v: 'self_attn.v_proj',
    o: 'self_attn.o_proj',
    postAttentionNorm: 'post_attention_layernorm',
    gate: 'mlp.gate_proj',
    up: 'mlp.up_proj',
    down: 'mlp.down_proj',
  } as const;
  weights.layers.forEach((layer, i) => {
    for (const [field, name] of Object.entries(fields) as [keyof typeof fields, string][]) {
      assert.deepEqual(
        Array.from(layer[field]),
        expected(`model.layers.${i}.${name}.weight`),
        field,
      );
    }
  });
  assert.deepEqual(Array.from(weights.norm), expected('model.norm.weight'));
  if (config.tieWordEmbeddings) assert.equal(weights.lmHead, weights.embedTokens);
  else assert.deepEqual(Array.from(weights.lmHead), expected('lm_head.weight'));
}

void test('a single-file F32 model loads into the right fields with HF shapes', async () => {
  const { dir, config } = await folder();
  const weights = await loaded(dir, config);
  assertTinyWeights(weights, config);
  // [vocab, hidden], [heads·headDim, hidden], [kvHeads·headDim, hidden], [hidden, intermediate]
  assert.equal(weights.embedTokens.length, 10 * 8);
  assert.equal(weights.layers[0]?.q.length, 2 * 4 * 8);
  assert.equal(weights.layers[0]?.k.length, 1 * 4 * 8);
  assert.equal(weights.layers[0]?.down.length, 8 * 12);
  assert.notEqual(weights.lmHead, weights.embedTokens);
});

for (const dtype of ['F16', 'BF16'] as TinyDtype[]) {
  void test(`a ${dtype} model loads to the same float32 values`, async () => {
    const { dir, config } = await folder({ dtype });
    assertTinyWeights(await loaded(dir, config), config);
  });
}

void test('a sharded model (index + 3 shards, mixed dtypes) loads the same as one file', async () => {
  const { dir, config } = await folder({ shards: 3, dtype: 'BF16' });
  assertTinyWeights(await loaded(dir, config), config);
  // Rewrite one shard as F16 and one as F32: each tensor is converted by its own dtype.
  const { dir: mixed } = await folder({ shards: 3, dtype: 'F16' });
  const { dir: f32 } = await folder({ shards: 3, dtype: 'F32' });
  await writeFile(join(mixed, shardName(1, 3)), await readFile(join(f32, shardName(1, 3))));
  assertTinyWeights(await loaded(mixed, config), config);
});

void test('with both model.safetensors and an index, the single file wins, as in transformers', async () => {
  const { dir, config } = await folder({ shards: 2 });
  const { dir: single } = await folder({ dtype: 'BF16' });
  await copyFile(join(single, 'model.safetensors'), join(dir, 'model.safetensors'));
  // Break a shard: were the index used, this would fail.
  await truncate(join(dir, shardName(0, 2)), 3);
  assertTinyWeights(await loaded(dir, config), config);
});

void test('tied embeddings: the LM head is the embedding array itself, with or without lm_head', async () => {
  const configJson = { ...tinyConfigJson, tie_word_embeddings: true };
  const { dir, config } = await folder({ configJson });
  const weights = await loaded(dir, config);
  assert.equal(weights.lmHead, weights.embedTokens);
  assertTinyWeights(weights, config);
  // A tied checkpoint that still stores lm_head.weight: transformers ignores it, so do we.
  const { dir: extra } = await folder({
    configJson,
    edit: (tensors) => {
      tensors['lm_head.weight'] = {
        dtype: 'F32',
        shape: [10, 8],
        bytes: f32Bytes(new Float32Array(80)),
      };
    },
  });
  const again = await loaded(extra, config);
  assert.equal(again.lmHead, again.embedTokens);
});

void test('older checkpoints with rotary_emb.inv_freq buffers load; the buffer is ignored', async () => {
  const { dir, config } = await folder({
    edit: (tensors) => {
      tensors['model.layers.0.self_attn.rotary_emb.inv_freq'] = {
        dtype: 'F32',
        shape: [2],
        bytes: f32Bytes([1, 0.01]),
      };
    },
  });
  assertTinyWeights(await loaded(dir, config), config);
});

void test('missing tensors are named', async () => {
  const { dir, config } = await folder({
    edit: (tensors) => {
      delete tensors['model.layers.1.mlp.up_proj.weight'];
    },
  });
  assert.equal(
    await refused(dir, config),
    `${dir}: missing tensor 'model.layers.1.mlp.up_proj.weight'`,
  );
  const { dir: many } = await folder({
    edit: (tensors) => {
      for (const name of Object.keys(tensors))
        if (name.startsWith('model.layers.1.')) delete tensors[name];
    },
  });
  assert.equal(
    await refused(many, config),
    `${many}: missing tensor 'model.layers.1.input_layernorm.weight' (and 8 more: 'model.layers.1.self_attn.q_proj.weight', 'model.layers.1.self_attn.k_proj.weight', 'model.layers.1.self_attn.v_proj.weight', ...)`,
  );
  const { dir: untied } = await folder({
    edit: (tensors) => {
      delete tensors['lm_head.weight'];
    },
  });
  assert.equal(
    await refused(untied, config),
    `${untied}: missing tensor 'lm_head.weight'; config.json says tie_word_embeddings is false`,
  );
});

void test('a wrong shape names the tensor, both shapes and what the config implies', async () => {
  const { dir, config } = await folder({
    edit: (tensors) => {
      tensors['model.layers.0.self_attn.k_proj.weight'] = {
        dtype: 'F32',
        shape: [8, 8], // as if num_key_value_heads were 2
        bytes: f32Bytes(new Float32Array(64)),
      };
    },
  });
  assert.equal(
    await refused(dir, config),
    `${join(dir, 'model.safetensors')}: tensor 'model.layers.0.self_attn.k_proj.weight' has shape [8, 8], expected [4, 8] (num_key_value_heads·head_dim × hidden_size) from config.json`,
  );
  const { dir: flat } = await folder({
    edit: (tensors) => {
      tensors['model.norm.weight'] = {
        dtype: 'F32',
        shape: [1, 8],
        bytes: f32Bytes(new Float32Array(8)),
      };
    },
  });
  assert.match(
    await refused(flat, config),
    /tensor 'model\.norm\.weight' has shape \[1, 8\], expected \[8\] \(hidden_size\)/,
  );
});

void test('an unexpected dtype is refused by name', async () => {
  const { dir, config } = await folder({
    edit: (tensors) => {
      tensors['model.norm.weight'] = {
        dtype: 'I16',
        shape: [8],
        bytes: u16Bytes(new Array<number>(8).fill(1)),
      };
    },
  });
  assert.equal(
    await refused(dir, config),
    `${join(dir, 'model.safetensors')}: tensor 'model.norm.weight' has dtype I16; only F32, F16 and BF16 load`,
  );
  const { dir: f64 } = await folder({
    edit: (tensors) => {
      tensors['model.layers.0.input_layernorm.weight'] = {
        dtype: 'F64',
        shape: [8],
        bytes: new Uint8Array(64),
      };
    },
  });
  assert.match(
    await refused(f64, config),
    /tensor 'model\.layers\.0\.input_layernorm\.weight' has dtype F64/,
  );
});

void test('tensors the config does not account for are refused', async () => {
  const { dir, config } = await folder({
    edit: (tensors) => {
      tensors['model.layers.0.self_attn.q_proj.bias'] = {
        dtype: 'F32',
        shape: [8],
        bytes: f32Bytes(new Float32Array(8)),
      };
    },
  });
  assert.equal(
    await refused(dir, config),
    `${join(dir, 'model.safetensors')}: unexpected tensor 'model.layers.0.self_attn.q_proj.bias': not part of a 2-layer Llama model without biases, as config.json describes`,
  );
  // A 3-layer checkpoint read with a 2-layer config.
  const { dir: deeper } = await folder({ configJson: { ...tinyConfigJson, num_hidden_layers: 3 } });
  assert.match(await refused(deeper, config), /unexpected tensor 'model\.layers\.2\.[a-z_.]+'/);
});

void test('a file truncated after its header was checked fails with a value, not a crash', async () => {
  const { dir, config } = await folder({ dtype: 'BF16' });
  const opened = await openSafetensorsCheckpoint(dir);
  assert.ok(opened.ok, opened.ok ? '' : opened.message);
  const path = join(dir, 'model.safetensors');
  const file = opened.checkpoint.files[0];
  assert.ok(file);
  await truncate(path, file.header.dataStart + 100);
  const names = llamaTensorSpecs(config).map((spec) => spec.name);
  const read = await readCheckpointTensors(opened.checkpoint, names);
  assert.equal(read.ok, false);
  // Tensors are read in file order; the 100 bytes hold embed_tokens (80 × 2 bytes) only in part.
  assert.equal(
    read.ok ? '' : read.message,
    `${path}: tensor 'model.embed_tokens.weight' ends early: read 100 of its 160 bytes (file truncated or changed while loading?)`,
  );
  // Loading it afresh sees the truncation in the header check instead.
  assert.match(
    await refused(dir, config),
    /model\.safetensors: tensor '[^']+' ends at byte \d+ of a 100-byte data section \(truncated file\?\)/,
  );
});

void test('a 16-bit tensor larger than the conversion scratch is converted across chunks', async () => {
  // 1 Mi + 5 elements: the scratch holds 1 Mi, so the last 5 come from a second chunk.
  const count = (1 << 20) + 5;
  const bits = new Uint16Array(count);
  for (let i = 0; i < count; i += 1) bits[i] = 0x3f80 + (i % 128); // BF16 1 + (i mod 128)/128
  folders += 1;
  const dir = join(root, `big-${folders}`);
  await mkdir(dir);
  await writeFile(
    join(dir, 'model.safetensors'),
    safetensorsBytes({
      big: { dtype: 'BF16', shape: [count], bytes: new Uint8Array(bits.buffer) },
    }),
  );
  const opened = await openSafetensorsCheckpoint(dir);
  assert.ok(opened.ok, opened.ok ? '' : opened.message);
  const read = await readCheckpointTensors(opened.checkpoint, ['big']);
  assert.ok(read.ok, read.ok ? '' : read.message);
  const data = read.tensors.get('big');
  assert.ok(data);
  assert.equal(data.length, count);
  for (const i of [0, 1, 127, 128, (1 << 20) - 1, 1 << 20, count - 1]) {
    assert.equal(data[i], 1 + (i % 128) / 128, `element ${i}`);
  }
  const unknown = await readCheckpointTensors(opened.checkpoint, ['nope']);
  assert.deepEqual(unknown, { ok: false, message: `${dir}: no tensor 'nope' in the checkpoint` });
});

void test('tensors are read with the config the caller gives', async () => {
  const { dir } = await folder();
  // The same files checked against a config with a wider MLP: every MLP tensor is wrong.
  const wider = parseConfig({ ...tinyConfigJson, intermediate_size: 16 });
  assert.match(
    await refused(dir, wider),
    /tensor 'model\.layers\.0\.mlp\.gate_proj\.weight' has shape \[12, 8\], expected \[16, 8\] \(intermediate_size × hidden_size\)/,
  );
});
