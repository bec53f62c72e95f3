// config.json of a Hugging Face Llama-family causal LM, checked and renamed to camelCase.
//
// Accepted: LlamaForCausalLM / model_type "llama", and MistralForCausalLM / "mistral" when its
// sliding window never applies (null, or at least max_position_embeddings), because then the
// two are the same graph: RMSNorm → RoPE GQA attention → RMSNorm → SwiGLU MLP, no biases.
// Every field that would change that graph (activation, biases, rope variant) is checked and
// refused by name rather than ignored, so a model we load is a model we run correctly.
//
// Defaults follow transformers' LlamaConfig where the task of a default is obvious
// (num_key_value_heads = num_attention_heads, head_dim = hidden_size / num_attention_heads,
// rope_theta = 10000, tie_word_embeddings = false, hidden_act = silu, no biases). The sizes
// themselves have no default: transformers would silently build a 7B-shaped config from an
// empty file, we say which field is missing instead.

import { isJsonObject, type JsonObject } from '../../registry/formats/read-json-object.ts';
import { describeJsonValue } from './describe-json-value.ts';
import { parseRopeScaling, type RopeScaling } from './rope-scaling.ts';

export type { RopeScaling } from './rope-scaling.ts';

export type LlamaModelType = 'llama' | 'mistral';

export interface LlamaConfig {
  /** From model_type, or from the architecture when model_type is absent. */
  readonly modelType: LlamaModelType;
  readonly vocabSize: number;
  readonly hiddenSize: number;
  /** Width of the SwiGLU MLP's gate/up outputs. */
  readonly intermediateSize: number;
  readonly numHiddenLayers: number;
  /** Query heads. */
  readonly numAttentionHeads: number;
  /** Key/value heads (GQA); divides numAttentionHeads. Each serves heads / kvHeads query heads. */
  readonly numKeyValueHeads: number;
  /** Per-head width; even, because RoPE rotates pairs. Not always hiddenSize / heads. */
  readonly headDim: number;
  readonly rmsNormEps: number;
  /** RoPE base. */
  readonly ropeTheta: number;
  readonly ropeScaling: RopeScaling | null;
  /** Context length the model was trained for; the engine refuses longer sequences. */
  readonly maxPositionEmbeddings: number;
  /** When true the LM head is the token embedding matrix itself. */
  readonly tieWordEmbeddings: boolean;
  readonly bosTokenId: number | null;
  /** config.json's eos_token_id as a list (it may be one id or several); empty when absent. */
  readonly eosTokenIds: readonly number[];
}

export type LlamaConfigResult =
  | { readonly ok: true; readonly config: LlamaConfig }
  | { readonly ok: false; readonly message: string };

const architectureTypes: Readonly<Record<string, LlamaModelType>> = {
  LlamaForCausalLM: 'llama',
  MistralForCausalLM: 'mistral',
};

const supportedActivations = new Set(['silu', 'swish']); // transformers maps both to nn.SiLU

/** Parses a config.json value. Never throws; every refusal names the field and the value. */
export function readLlamaConfig(json: unknown): LlamaConfigResult {
  const fail = (why: string): LlamaConfigResult => ({ ok: false, message: `config.json: ${why}` });
  if (!isJsonObject(json)) return fail(`must be a JSON object, got ${describeJsonValue(json)}`);

  const modelType = readModelType(json);
  if (typeof modelType !== 'string') return fail(modelType.why);

  const sizes = readSizes(json);
  if ('why' in sizes) return fail(sizes.why);

  const graph = checkGraphFields(json, modelType, sizes.maxPositionEmbeddings);
  if (graph !== null) return fail(graph);

  const rmsNormEps = json['rms_norm_eps'];
  if (typeof rmsNormEps !== 'number' || !Number.isFinite(rmsNormEps) || rmsNormEps <= 0) {
    return fail(`"rms_norm_eps" must be a positive number, got ${describeJsonValue(rmsNormEps)}`);
  }

  const rope = readRope(json);
  if (!rope.ok) return rope;

  const tie = json['tie_word_embeddings'] ?? false;
  if (typeof tie !== 'boolean') {
    return fail(`"tie_word_embeddings" must be true or false, got ${describeJsonValue(tie)}`);
  }

  const bos = json['bos_token_id'] ?? null;
  if (bos !== null && !isTokenId(bos, sizes.vocabSize)) {
    return fail(
      `"bos_token_id" must be a token id below vocab_size ${sizes.vocabSize}, got ${describeJsonValue(bos)}`,
    );
  }
  const eos = json['eos_token_id'] ?? null;
  const eosTokenIds = eos === null ? [] : Array.isArray(eos) ? (eos as unknown[]) : [eos];
  if (!eosTokenIds.every((id) => isTokenId(id, sizes.vocabSize))) {
    return fail(
      `"eos_token_id" must be a token id or a list of token ids below vocab_size ${sizes.vocabSize}, got ${describeJsonValue(eos)}`,
    );
  }

  return {
    ok: true,
    config: {
      modelType,
      ...sizes,
      rmsNormEps,
      ropeTheta: rope.ropeTheta,
      ropeScaling: rope.ropeScaling,
      tieWordEmbeddings: tie,
      bosTokenId: bos as number | null,
      eosTokenIds: eosTokenIds as number[],
    },
  };
}

function isModelType(value: string): value is LlamaModelType {
  return value === 'llama' || value === 'mistral';
}

/** The model type the architectures and model_type agree on, or why they are refused. */
function readModelType(json: JsonObject): LlamaModelType | { why: string } {
  const architectures = json['architectures'];
  const modelType = json['model_type'];
  let fromArchitecture: LlamaModelType | null = null;
  if (architectures !== undefined && architectures !== null) {
    const names: unknown[] = Array.isArray(architectures) ? architectures : [];
    const classNames = names.filter((a): a is string => typeof a === 'string');
    if (classNames.length === 0 || classNames.length !== names.length) {
      return {
        why: `"architectures" must be a non-empty list of class names, got ${describeJsonValue(architectures)}`,
      };
    }
    for (const architecture of classNames) {
      const type = Object.hasOwn(architectureTypes, architecture)
        ? architectureTypes[architecture]
        : undefined;
      if (type === undefined) {
        return {
          why: `architecture "${architecture}" is not supported (supported: ${Object.keys(architectureTypes).join(', ')})`,
        };
      }
      fromArchitecture ??= type;
    }
  }
  if (modelType !== undefined && modelType !== null) {
    if (typeof modelType !== 'string' || !isModelType(modelType)) {
      return {
        why: `model_type ${describeJsonValue(modelType)} is not supported (supported: "llama", "mistral")`,
      };
    }
    return modelType;
  }
  if (fromArchitecture === null) {
    return { why: 'names no architecture: needs "architectures" or "model_type"' };
  }
  return fromArchitecture;
}

type Sizes = Pick<
  LlamaConfig,
  | 'vocabSize'
  | 'hiddenSize'
  | 'intermediateSize'
  | 'numHiddenLayers'
  | 'numAttentionHeads'
  | 'numKeyValueHeads'
  | 'headDim'
  | 'maxPositionEmbeddings'
>;

function readSizes(json: JsonObject): Sizes | { why: string } {
  const required = [
    'vocab_size',
    'hidden_size',
    'intermediate_size',
    'num_hidden_layers',
    'num_attention_heads',
    'max_position_embeddings',
  ] as const;
  const values: Partial<Record<(typeof required)[number], number>> = {};
  for (const field of required) {
    const value = json[field];
    if (!isPositiveInteger(value)) {
      return { why: `"${field}" must be a positive integer, got ${describeJsonValue(value)}` };
    }
    values[field] = value;
  }
  const hiddenSize = values.hidden_size ?? 0;
  const numAttentionHeads = values.num_attention_heads ?? 0;

  const kvHeads = json['num_key_value_heads'] ?? numAttentionHeads;
  if (!isPositiveInteger(kvHeads)) {
    return {
      why: `"num_key_value_heads" must be a positive integer, got ${describeJsonValue(kvHeads)}`,
    };
  }
  if (numAttentionHeads % kvHeads !== 0) {
    return {
      why: `"num_attention_heads" (${numAttentionHeads}) must be a multiple of "num_key_value_heads" (${kvHeads}) for grouped-query attention`,
    };
  }

  let headDim = json['head_dim'] ?? null;
  if (headDim === null) {
    if (hiddenSize % numAttentionHeads !== 0) {
      return {
        why: `"hidden_size" (${hiddenSize}) must be a multiple of "num_attention_heads" (${numAttentionHeads}) when "head_dim" is not given`,
      };
    }
    headDim = hiddenSize / numAttentionHeads;
  }
  if (!isPositiveInteger(headDim)) {
    return { why: `"head_dim" must be a positive integer, got ${describeJsonValue(headDim)}` };
  }
  if (headDim % 2 !== 0) {
    return { why: `head dimension ${headDim} must be even: RoPE rotates pairs of dimensions` };
  }
  return {
    vocabSize: values.vocab_size ?? 0,
    hiddenSize,
    intermediateSize: values.intermediate_size ?? 0,
    numHiddenLayers: values.num_hidden_layers ?? 0,
    numAttentionHeads,
    numKeyValueHeads: kvHeads,
    headDim,
    maxPositionEmbeddings: values.max_position_embeddings ?? 0,
  };
}

/** Fields that would change the computation: refused unless they match the Llama graph. */
function checkGraphFields(
  json: JsonObject,
  modelType: LlamaModelType,
  maxPositionEmbeddings: number,
): string | null {
  const activation = json['hidden_act'] ?? 'silu';
  if (typeof activation !== 'string' || !supportedActivations.has(activation)) {
    return `"hidden_act" ${describeJsonValue(activation)} is not supported (Llama-family models use "silu")`;
  }
  for (const field of ['attention_bias', 'mlp_bias'] as const) {
    const value = json[field] ?? false;
    if (value === true) return `"${field}": true is not supported (Llama layers have no biases)`;
    if (value !== false) return `"${field}" must be true or false, got ${describeJsonValue(value)}`;
  }
  if (modelType === 'mistral') {
    // Sliding-window attention only differs from full attention past the window.
    const window = json['sliding_window'] ?? null;
    if (window !== null) {
      if (!isPositiveInteger(window)) {
        return `"sliding_window" must be null or a positive integer, got ${describeJsonValue(window)}`;
      }
      if (window < maxPositionEmbeddings) {
        return `"sliding_window": ${window} is not supported (sliding-window attention); only null or a window of at least max_position_embeddings (${maxPositionEmbeddings})`;
      }
    }
  }
  return null;
}

type RopeResult =
  { ok: true; ropeTheta: number; ropeScaling: RopeScaling | null } | { ok: false; message: string };

function readRope(json: JsonObject): RopeResult {
  // transformers 5 moves rope_theta and the scaling into one "rope_parameters" object.
  const parameters = json['rope_parameters'];
  const usesParameters = isJsonObject(parameters);
  if (parameters !== undefined && parameters !== null && !usesParameters) {
    return {
      ok: false,
      message: `config.json: "rope_parameters" must be an object, got ${describeJsonValue(parameters)}`,
    };
  }
  const theta =
    (usesParameters ? parameters['rope_theta'] : undefined) ?? json['rope_theta'] ?? 10000;
  if (typeof theta !== 'number' || !Number.isFinite(theta) || theta <= 0) {
    return {
      ok: false,
      message: `config.json: "rope_theta" must be a positive number, got ${describeJsonValue(theta)}`,
    };
  }
  const scaling = usesParameters
    ? parseRopeScaling(parameters, '"rope_parameters"')
    : parseRopeScaling(json['rope_scaling'], '"rope_scaling"');
  if (!scaling.ok) return scaling;
  return { ok: true, ropeTheta: theta, ropeScaling: scaling.ropeScaling };
}

function isPositiveInteger(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value > 0;
}

function isTokenId(value: unknown, vocabSize: number): boolean {
  return (
    typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 && value < vocabSize
  );
}
