// The tensors a Llama-family checkpoint must hold, with the shapes config.json implies.
// Names are Hugging Face's (LlamaForCausalLM.state_dict()); linear weights are stored as
// PyTorch's nn.Linear keeps them: [outFeatures, inFeatures], row-major.

import type { LlamaConfig } from './llama-config.ts';

export interface TensorSpec {
  readonly name: string;
  readonly shape: readonly number[];
  /** The shape in config terms, for messages: "vocab_size × hidden_size". */
  readonly meaning: string;
}

/** Per-layer tensor names, by the LayerWeights field they fill. */
export const layerTensorSuffixes = {
  inputNorm: 'input_layernorm.weight',
  q: 'self_attn.q_proj.weight',
  k: 'self_attn.k_proj.weight',
  v: 'self_attn.v_proj.weight',
  o: 'self_attn.o_proj.weight',
  postAttentionNorm: 'post_attention_layernorm.weight',
  gate: 'mlp.gate_proj.weight',
  up: 'mlp.up_proj.weight',
  down: 'mlp.down_proj.weight',
} as const;

export type LayerTensorField = keyof typeof layerTensorSuffixes;

export const embedTokensName = 'model.embed_tokens.weight';
export const finalNormName = 'model.norm.weight';
export const lmHeadName = 'lm_head.weight';

export function layerTensorName(layer: number, field: LayerTensorField): string {
  return `model.layers.${layer}.${layerTensorSuffixes[field]}`;
}

/** Every tensor the model needs, in a stable order: embedding, layers, final norm, LM head. */
export function llamaTensorSpecs(config: LlamaConfig): TensorSpec[] {
  const hidden = config.hiddenSize;
  const qWidth = config.numAttentionHeads * config.headDim;
  const kvWidth = config.numKeyValueHeads * config.headDim;
  const intermediate = config.intermediateSize;
  const layerShapes: Record<LayerTensorField, [number[], string]> = {
    inputNorm: [[hidden], 'hidden_size'],
    q: [[qWidth, hidden], 'num_attention_heads·head_dim × hidden_size'],
    k: [[kvWidth, hidden], 'num_key_value_heads·head_dim × hidden_size'],
    v: [[kvWidth, hidden], 'num_key_value_heads·head_dim × hidden_size'],
    o: [[hidden, qWidth], 'hidden_size × num_attention_heads·head_dim'],
    postAttentionNorm: [[hidden], 'hidden_size'],
    gate: [[intermediate, hidden], 'intermediate_size × hidden_size'],
    up: [[intermediate, hidden], 'intermediate_size × hidden_size'],
    down: [[hidden, intermediate], 'hidden_size × intermediate_size'],
  };
  const specs: TensorSpec[] = [
    {
      name: embedTokensName,
      shape: [config.vocabSize, hidden],
      meaning: 'vocab_size × hidden_size',
    },
  ];
  for (let layer = 0; layer < config.numHiddenLayers; layer += 1) {
    for (const field of Object.keys(layerTensorSuffixes) as LayerTensorField[]) {
      const [shape, meaning] = layerShapes[field];
      specs.push({ name: layerTensorName(layer, field), shape, meaning });
    }
  }
  specs.push({ name: finalNormName, shape: [hidden], meaning: 'hidden_size' });
  if (!config.tieWordEmbeddings) {
    specs.push({
      name: lmHeadName,
      shape: [config.vocabSize, hidden],
      meaning: 'vocab_size × hidden_size',
    });
  }
  return specs;
}
