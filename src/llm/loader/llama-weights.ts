// A Llama-family model's weights as float32, in Hugging Face's layout: row-major, linear
// weights [outFeatures, inFeatures] (y = x · Wᵀ), so row r of a projection is output r.
//
// Loading checks everything the headers can tell before reading any weight byte: each
// expected tensor present, with the config's shape and a loadable dtype, and no tensor left
// over (a leftover means the config and the checkpoint describe different models: more
// layers, biases, ...). Only then are the tensors read, file by file.

import { littleEndianHost, isLoadableDtype } from './read-float32-tensor.ts';
import type { LlamaConfig } from './llama-config.ts';
import {
  embedTokensName,
  finalNormName,
  layerTensorName,
  lmHeadName,
  llamaTensorSpecs,
  type LayerTensorField,
} from './llama-tensor-specs.ts';
import {
  openSafetensorsCheckpoint,
  readCheckpointTensors,
  type SafetensorsCheckpoint,
} from './safetensors-checkpoint.ts';

/** One decoder layer. Shapes in config terms; every array is row-major float32. */
export interface LayerWeights {
  /** [hiddenSize] RMSNorm weight applied before attention. */
  readonly inputNorm: Float32Array;
  /** [numAttentionHeads · headDim, hiddenSize] query projection. */
  readonly q: Float32Array;
  /** [numKeyValueHeads · headDim, hiddenSize] key projection. */
  readonly k: Float32Array;
  /** [numKeyValueHeads · headDim, hiddenSize] value projection. */
  readonly v: Float32Array;
  /** [hiddenSize, numAttentionHeads · headDim] attention output projection. */
  readonly o: Float32Array;
  /** [hiddenSize] RMSNorm weight applied before the MLP. */
  readonly postAttentionNorm: Float32Array;
  /** [intermediateSize, hiddenSize] SwiGLU gate (goes through SiLU). */
  readonly gate: Float32Array;
  /** [intermediateSize, hiddenSize] SwiGLU up projection (multiplied by the gate). */
  readonly up: Float32Array;
  /** [hiddenSize, intermediateSize] SwiGLU down projection. */
  readonly down: Float32Array;
}

export interface LlamaWeights {
  /** [vocabSize, hiddenSize] token embeddings; row t is token t's input vector. */
  readonly embedTokens: Float32Array;
  /** numHiddenLayers entries, input to output. */
  readonly layers: readonly LayerWeights[];
  /** [hiddenSize] final RMSNorm weight. */
  readonly norm: Float32Array;
  /** [vocabSize, hiddenSize] logits = h · lmHeadᵀ. The same array as embedTokens when tied. */
  readonly lmHead: Float32Array;
}

export type LlamaWeightsResult =
  | { readonly ok: true; readonly weights: LlamaWeights }
  | { readonly ok: false; readonly message: string };

/** Buffers transformers registers but never reads from the checkpoint; harmless to skip. */
const ignoredTensor = /^model\.layers\.\d+\.self_attn\.rotary_emb\.inv_freq$/;

export async function loadLlamaWeights(
  directory: string,
  config: LlamaConfig,
): Promise<LlamaWeightsResult> {
  if (!littleEndianHost) {
    return { ok: false, message: 'safetensors weights are little-endian; this host is big-endian' };
  }
  const opened = await openSafetensorsCheckpoint(directory);
  if (!opened.ok) return opened;
  const { checkpoint } = opened;
  const problem = checkTensors(checkpoint, config);
  if (problem !== null) return { ok: false, message: problem };

  const specs = llamaTensorSpecs(config);
  const read = await readCheckpointTensors(
    checkpoint,
    specs.map((spec) => spec.name),
  );
  if (!read.ok) return read;
  const get = (name: string): Float32Array => {
    const data = read.tensors.get(name);
    // readCheckpointTensors returns every name it was given or fails.
    if (data === undefined) throw new Error(`internal: tensor '${name}' was not read`);
    return data;
  };
  const layers: LayerWeights[] = [];
  for (let layer = 0; layer < config.numHiddenLayers; layer += 1) {
    const one = (field: LayerTensorField): Float32Array => get(layerTensorName(layer, field));
    layers.push({
      inputNorm: one('inputNorm'),
      q: one('q'),
      k: one('k'),
      v: one('v'),
      o: one('o'),
      postAttentionNorm: one('postAttentionNorm'),
      gate: one('gate'),
      up: one('up'),
      down: one('down'),
    });
  }
  const embedTokens = get(embedTokensName);
  return {
    ok: true,
    weights: {
      embedTokens,
      layers,
      norm: get(finalNormName),
      lmHead: config.tieWordEmbeddings ? embedTokens : get(lmHeadName),
    },
  };
}

/** Presence, shape, dtype and leftovers, from the headers alone; null when all is well. */
function checkTensors(checkpoint: SafetensorsCheckpoint, config: LlamaConfig): string | null {
  const specs = llamaTensorSpecs(config);
  const missing = specs.filter((spec) => !checkpoint.tensors.has(spec.name));
  if (missing.length > 0) {
    const first = missing[0]?.name ?? '';
    const more =
      missing.length === 1
        ? ''
        : ` (and ${missing.length - 1} more: ${missing
            .slice(1, 4)
            .map((spec) => `'${spec.name}'`)
            .join(', ')}${missing.length > 4 ? ', ...' : ''})`;
    const hint = first === lmHeadName ? '; config.json says tie_word_embeddings is false' : '';
    return `${checkpoint.directory}: missing tensor '${first}'${more}${hint}`;
  }
  for (const spec of specs) {
    const located = checkpoint.tensors.get(spec.name);
    if (located === undefined) continue; // checked above
    const { file, tensor } = located;
    if (!sameShape(tensor.shape, spec.shape)) {
      return `${file.path}: tensor '${spec.name}' has shape [${tensor.shape.join(', ')}], expected [${spec.shape.join(', ')}] (${spec.meaning}) from config.json`;
    }
    if (!isLoadableDtype(tensor.dtype)) {
      return `${file.path}: tensor '${spec.name}' has dtype ${tensor.dtype}; only F32, F16 and BF16 load`;
    }
  }
  const expected = new Set(specs.map((spec) => spec.name));
  if (config.tieWordEmbeddings) expected.add(lmHeadName); // transformers ignores it when tied
  for (const [name, { file }] of checkpoint.tensors) {
    if (expected.has(name) || ignoredTensor.test(name)) continue;
    return `${file.path}: unexpected tensor '${name}': not part of a ${config.numHiddenLayers}-layer Llama model without biases, as config.json describes`;
  }
  return null;
}

function sameShape(actual: readonly number[], expected: readonly number[]): boolean {
  return actual.length === expected.length && actual.every((d, i) => d === expected[i]);
}
