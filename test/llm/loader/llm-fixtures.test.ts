// The loader against the real fixtures written by fixtures/llm/make_llm_fixtures.py (PyTorch):
// every folder loads, its shapes follow its config, RoPE frequencies equal the inv_freq
// buffer PyTorch ran with, and the BF16/F16 shards hold the F32 model's weights rounded to
// nearest even.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import {
  loadLlamaFolder,
  type LlamaFolderResult,
} from '../../../src/llm/loader/load-llama-folder.ts';
import { ropeInverseFrequencies } from '../../../src/llm/loader/rope-inverse-frequencies.ts';

const fixtures = new URL('../../../fixtures/llm/', import.meta.url).pathname;

interface Reference {
  readonly parameterCount: number;
  readonly ropeInvFreq: readonly number[];
}

function reference(folder: string): Reference {
  return JSON.parse(readFileSync(`${fixtures}${folder}/reference.json`, 'utf8')) as Reference;
}

async function load(folder: string): Promise<Extract<LlamaFolderResult, { ok: true }>> {
  const result = await loadLlamaFolder(`${fixtures}${folder}`);
  assert.ok(result.ok, result.ok ? '' : result.message);
  return result;
}

function parameterCount({ weights }: Extract<LlamaFolderResult, { ok: true }>): number {
  let count = weights.embedTokens.length + weights.norm.length;
  if (weights.lmHead !== weights.embedTokens) count += weights.lmHead.length;
  for (const layer of weights.layers) {
    for (const tensor of Object.values(layer) as Float32Array[]) count += tensor.length;
  }
  return count;
}

/** Round-to-nearest-even into bfloat16 (8 significant bits), as torch's .to(bfloat16). */
function roundToBfloat16(value: number): number {
  const view = new DataView(new ArrayBuffer(4));
  view.setFloat32(0, value);
  const bits = view.getUint32(0);
  view.setUint32(0, ((bits + 0x7fff + ((bits >>> 16) & 1)) & 0xffff0000) >>> 0);
  return view.getFloat32(0);
}

/** Round-to-nearest-even into binary16 (11 significant bits; subnormal below 2^-14). */
function roundToFloat16(value: number): number {
  if (value === 0) return value;
  const exponent = Math.max(Math.floor(Math.log2(Math.abs(value))), -14);
  const ulp = 2 ** (exponent - 10);
  const scaled = value / ulp;
  let rounded = Math.round(scaled);
  if (Math.abs(scaled % 1) === 0.5 && rounded % 2 !== 0) rounded -= 1; // ties to even
  return rounded * ulp;
}

void test('tiny-llama: shapes follow its config, and as many parameters as PyTorch counted', async () => {
  const model = await load('tiny-llama');
  const { config, weights } = model;
  const hidden = config.hiddenSize;
  const qWidth = config.numAttentionHeads * config.headDim;
  const kvWidth = config.numKeyValueHeads * config.headDim;
  // The fixture exists to exercise GQA and an untied LM head.
  assert.ok(config.numKeyValueHeads < config.numAttentionHeads, 'GQA');
  assert.equal(config.tieWordEmbeddings, false);
  assert.equal(weights.layers.length, config.numHiddenLayers);
  assert.equal(weights.embedTokens.length, config.vocabSize * hidden);
  assert.equal(weights.lmHead.length, config.vocabSize * hidden);
  assert.notEqual(weights.lmHead, weights.embedTokens);
  assert.equal(weights.norm.length, hidden);
  for (const layer of weights.layers) {
    assert.equal(layer.inputNorm.length, hidden);
    assert.equal(layer.q.length, qWidth * hidden);
    assert.equal(layer.k.length, kvWidth * hidden);
    assert.equal(layer.v.length, kvWidth * hidden);
    assert.equal(layer.o.length, hidden * qWidth);
    assert.equal(layer.postAttentionNorm.length, hidden);
    assert.equal(layer.gate.length, config.intermediateSize * hidden);
    assert.equal(layer.up.length, config.intermediateSize * hidden);
    assert.equal(layer.down.length, hidden * config.intermediateSize);
  }
  assert.equal(parameterCount(model), reference('tiny-llama').parameterCount);
  assert.ok(weights.embedTokens.every(Number.isFinite));
});

void test('tiny-llama-sharded: BF16 and F16 shards hold the F32 weights rounded to nearest even', async () => {
  const f32 = (await load('tiny-llama')).weights;
  const sharded = await load('tiny-llama-sharded');
  const { weights } = sharded;
  assert.equal(parameterCount(sharded), reference('tiny-llama-sharded').parameterCount);
  const check = (
    name: string,
    a: Float32Array,
    b: Float32Array,
    round: (x: number) => number,
  ): void => {
    assert.equal(b.length, a.length, name);
    for (let i = 0; i < a.length; i += 1) {
      const expected = Math.fround(round(a[i] ?? 0));
      if (b[i] !== expected)
        assert.fail(`${name}[${i}]: ${b[i]} is not ${a[i]} rounded (${expected})`);
    }
  };
  // Shard 1 (BF16): embed_tokens and the first half of the layers; shard 2 (F16): the rest.
  check('embedTokens', f32.embedTokens, weights.embedTokens, roundToBfloat16);
  const half = Math.floor(f32.layers.length / 2);
  f32.layers.forEach((layer, i) => {
    const round = i < half ? roundToBfloat16 : roundToFloat16;
    for (const [field, tensor] of Object.entries(layer) as [string, Float32Array][]) {
      const other = (weights.layers[i] as unknown as Record<string, Float32Array>)[field];
      assert.ok(other);
      check(`layers[${i}].${field}`, tensor, other, round);
    }
  });
  check('norm', f32.norm, weights.norm, roundToFloat16);
  check('lmHead', f32.lmHead, weights.lmHead, roundToFloat16);
});

void test('tiny-llama-draft: tied embeddings share one array', async () => {
  const model = await load('tiny-llama-draft');
  assert.equal(model.config.tieWordEmbeddings, true);
  assert.equal(model.weights.lmHead, model.weights.embedTokens);
  assert.equal(model.weights.embedTokens.length, model.config.vocabSize * model.config.hiddenSize);
  assert.equal(parameterCount(model), reference('tiny-llama-draft').parameterCount);
});

for (const folder of [
  'tiny-llama',
  'tiny-llama-sharded',
  'tiny-llama-draft',
  'tiny-llama-rope-llama3',
  'tiny-llama-rope-linear',
]) {
  void test(`${folder}: RoPE inverse frequencies equal PyTorch's inv_freq exactly`, async () => {
    const { config } = await load(folder);
    const expected = reference(folder).ropeInvFreq;
    assert.deepEqual(Array.from(ropeInverseFrequencies(config)), expected);
    if (folder.endsWith('llama3')) assert.equal(config.ropeScaling?.type, 'llama3');
    if (folder.endsWith('linear'))
      assert.deepEqual(config.ropeScaling, { type: 'linear', factor: 2 });
  });
}
