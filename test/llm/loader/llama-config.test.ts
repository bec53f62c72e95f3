import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readLlamaConfig, type LlamaConfig } from '../../../src/llm/loader/llama-config.ts';
import { tinyConfigJson } from './tiny-llama.ts';

function accepted(json: unknown): LlamaConfig {
  const result = readLlamaConfig(json);
  assert.ok(result.ok, result.ok ? '' : result.message);
  return result.config;
}

function refused(json: unknown): string {
  const result = readLlamaConfig(json);
  assert.equal(result.ok, false, 'expected a refusal');
  return result.ok ? '' : result.message;
}

const minimal = {
  architectures: ['LlamaForCausalLM'],
  vocab_size: 32000,
  hidden_size: 4096,
  intermediate_size: 11008,
  num_hidden_layers: 32,
  num_attention_heads: 32,
  max_position_embeddings: 4096,
  rms_norm_eps: 1e-5,
};

const llama31 = {
  architectures: ['LlamaForCausalLM'],
  model_type: 'llama',
  attention_bias: false,
  mlp_bias: false,
  hidden_act: 'silu',
  vocab_size: 128256,
  hidden_size: 4096,
  intermediate_size: 14336,
  num_hidden_layers: 32,
  num_attention_heads: 32,
  num_key_value_heads: 8,
  head_dim: 128,
  max_position_embeddings: 131072,
  rms_norm_eps: 1e-5,
  rope_theta: 500000.0,
  rope_scaling: {
    factor: 8.0,
    low_freq_factor: 1.0,
    high_freq_factor: 4.0,
    original_max_position_embeddings: 8192,
    rope_type: 'llama3',
  },
  tie_word_embeddings: false,
  bos_token_id: 128000,
  eos_token_id: [128001, 128008, 128009],
  torch_dtype: 'bfloat16',
};

const with_ = (changes: Record<string, unknown>): Record<string, unknown> => ({
  ...minimal,
  ...changes,
});

void test('a minimal Llama config gets transformers defaults', () => {
  assert.deepEqual(accepted(minimal), {
    modelType: 'llama',
    vocabSize: 32000,
    hiddenSize: 4096,
    intermediateSize: 11008,
    numHiddenLayers: 32,
    numAttentionHeads: 32,
    numKeyValueHeads: 32,
    headDim: 128,
    rmsNormEps: 1e-5,
    ropeTheta: 10000,
    ropeScaling: null,
    maxPositionEmbeddings: 4096,
    tieWordEmbeddings: false,
    bosTokenId: null,
    eosTokenIds: [],
  });
});

void test('a Llama 3.1 config: GQA, explicit head_dim, llama3 rope, several eos ids', () => {
  assert.deepEqual(accepted(llama31), {
    modelType: 'llama',
    vocabSize: 128256,
    hiddenSize: 4096,
    intermediateSize: 14336,
    numHiddenLayers: 32,
    numAttentionHeads: 32,
    numKeyValueHeads: 8,
    headDim: 128,
    rmsNormEps: 1e-5,
    ropeTheta: 500000,
    ropeScaling: {
      type: 'llama3',
      factor: 8,
      lowFreqFactor: 1,
      highFreqFactor: 4,
      originalMaxPositionEmbeddings: 8192,
    },
    maxPositionEmbeddings: 131072,
    tieWordEmbeddings: false,
    bosTokenId: 128000,
    eosTokenIds: [128001, 128008, 128009],
  });
});

void test('the tiny test config: tied flag, single eos id, model_type alone is enough', () => {
  const config = accepted({ ...tinyConfigJson, tie_word_embeddings: true });
  assert.equal(config.tieWordEmbeddings, true);
  assert.deepEqual(config.eosTokenIds, [2]);
  assert.equal(config.bosTokenId, 1);
  assert.equal(config.headDim, 4);
  const { architectures: _, ...noArchitectures } = tinyConfigJson;
  assert.equal(accepted(noArchitectures).modelType, 'llama');
  // head_dim need not be hidden_size / heads (e.g. Gemma-style widths); it is taken as given.
  assert.equal(accepted(with_({ head_dim: 64 })).headDim, 64);
});

void test('Mistral is the same graph when its sliding window never applies', () => {
  const mistral = with_({ architectures: ['MistralForCausalLM'], model_type: 'mistral' });
  assert.equal(accepted({ ...mistral, sliding_window: null }).modelType, 'mistral');
  assert.equal(accepted(mistral).modelType, 'mistral');
  assert.equal(accepted({ ...mistral, sliding_window: 4096 }).modelType, 'mistral');
  assert.equal(
    accepted(with_({ architectures: ['MistralForCausalLM'], model_type: undefined })).modelType,
    'mistral',
  );
  assert.equal(
    refused({ ...mistral, sliding_window: 1024 }),
    'config.json: "sliding_window": 1024 is not supported (sliding-window attention); only null or a window of at least max_position_embeddings (4096)',
  );
  assert.match(refused({ ...mistral, sliding_window: 'all' }), /"sliding_window" must be null/);
});

void test('other architectures are refused by name', () => {
  assert.equal(
    refused(with_({ architectures: ['Qwen2ForCausalLM'] })),
    'config.json: architecture "Qwen2ForCausalLM" is not supported (supported: LlamaForCausalLM, MistralForCausalLM)',
  );
  assert.equal(
    refused(with_({ architectures: ['LlamaForSequenceClassification'] })),
    'config.json: architecture "LlamaForSequenceClassification" is not supported (supported: LlamaForCausalLM, MistralForCausalLM)',
  );
  assert.equal(
    refused(with_({ architectures: undefined, model_type: 'gemma' })),
    'config.json: model_type "gemma" is not supported (supported: "llama", "mistral")',
  );
  assert.equal(
    refused(with_({ architectures: undefined })),
    'config.json: names no architecture: needs "architectures" or "model_type"',
  );
  assert.match(refused(with_({ architectures: [] })), /"architectures" must be a non-empty list/);
  assert.match(refused(with_({ architectures: 'LlamaForCausalLM' })), /"architectures" must be/);
});

void test('rope scaling variants', () => {
  const rope = (value: unknown): unknown => accepted(with_({ rope_scaling: value })).ropeScaling;
  assert.deepEqual(rope({ type: 'linear', factor: 2.0 }), { type: 'linear', factor: 2 });
  assert.deepEqual(rope({ rope_type: 'linear', factor: 4 }), { type: 'linear', factor: 4 });
  // rope_type wins over the older "type", as in transformers.
  assert.deepEqual(rope({ rope_type: 'linear', type: 'dynamic', factor: 4 }), {
    type: 'linear',
    factor: 4,
  });
  assert.equal(rope({ rope_type: 'default' }), null);
  assert.equal(rope(null), null);
});

void test('transformers 5 rope_parameters carry theta and the scaling', () => {
  const config = accepted(
    with_({
      rope_parameters: { ...llama31.rope_scaling, rope_theta: 500000 },
    }),
  );
  assert.equal(config.ropeTheta, 500000);
  assert.equal(config.ropeScaling?.type, 'llama3');
  const plain = accepted(with_({ rope_parameters: { rope_type: 'default', rope_theta: 1e6 } }));
  assert.equal(plain.ropeTheta, 1e6);
  assert.equal(plain.ropeScaling, null);
  assert.match(
    refused(with_({ rope_parameters: { rope_type: 'yarn', factor: 4 } })),
    /"rope_parameters" has rope type "yarn", which is not supported/,
  );
  assert.match(refused(with_({ rope_parameters: 3 })), /"rope_parameters" must be an object/);
});

void test('unsupported or malformed rope scaling is refused, naming the type or field', () => {
  const message = (value: unknown): string => refused(with_({ rope_scaling: value }));
  assert.equal(
    message({ type: 'dynamic', factor: 2 }),
    'config.json: "rope_scaling" has rope type "dynamic", which is not supported (supported: default, linear, llama3)',
  );
  assert.match(message({ rope_type: 'yarn', factor: 4 }), /rope type "yarn"/);
  assert.match(message({ rope_type: 'longrope' }), /rope type "longrope"/);
  assert.match(message({ factor: 2 }), /"rope_scaling" has neither "rope_type" nor "type"/);
  assert.match(message({ type: 7 }), /rope type that is not a string: 7/);
  assert.match(message('linear'), /"rope_scaling" must be an object or null/);
  assert.equal(
    message({ type: 'linear' }),
    'config.json: "rope_scaling" "factor" must be a positive number, got nothing (the field is missing)',
  );
  assert.match(message({ type: 'linear', factor: 0 }), /"factor" must be a positive number, got 0/);
  const { original_max_position_embeddings: _, ...noOriginal } = llama31.rope_scaling;
  assert.match(
    message(noOriginal),
    /"original_max_position_embeddings" must be a positive integer/,
  );
  assert.match(
    message({ ...llama31.rope_scaling, low_freq_factor: 'one' }),
    /"low_freq_factor" must be a positive number, got "one"/,
  );
  assert.equal(
    message({ ...llama31.rope_scaling, high_freq_factor: 1 }),
    'config.json: "rope_scaling" "high_freq_factor" (1) must be greater than "low_freq_factor" (1)',
  );
});

void test('activation and biases that change the graph are refused', () => {
  assert.equal(
    refused(with_({ hidden_act: 'gelu' })),
    'config.json: "hidden_act" "gelu" is not supported (Llama-family models use "silu")',
  );
  assert.equal(accepted(with_({ hidden_act: 'swish' })).hiddenSize, 4096);
  assert.equal(
    refused(with_({ attention_bias: true })),
    'config.json: "attention_bias": true is not supported (Llama layers have no biases)',
  );
  assert.equal(
    refused(with_({ mlp_bias: true })),
    'config.json: "mlp_bias": true is not supported (Llama layers have no biases)',
  );
  assert.match(refused(with_({ attention_bias: 'no' })), /"attention_bias" must be true or false/);
  assert.equal(accepted(with_({ attention_bias: false, mlp_bias: false })).numHiddenLayers, 32);
});

void test('sizes are validated', () => {
  const cases: [Record<string, unknown>, string][] = [
    [{ vocab_size: 0 }, '"vocab_size" must be a positive integer, got 0'],
    [{ hidden_size: -8 }, '"hidden_size" must be a positive integer, got -8'],
    [{ intermediate_size: 1.5 }, '"intermediate_size" must be a positive integer, got 1.5'],
    [{ num_hidden_layers: '32' }, '"num_hidden_layers" must be a positive integer, got "32"'],
    [
      { num_attention_heads: undefined },
      '"num_attention_heads" must be a positive integer, got nothing (the field is missing)',
    ],
    [
      { max_position_embeddings: null },
      '"max_position_embeddings" must be a positive integer, got null',
    ],
    [{ num_key_value_heads: 0 }, '"num_key_value_heads" must be a positive integer, got 0'],
    [
      { num_key_value_heads: 5 },
      '"num_attention_heads" (32) must be a multiple of "num_key_value_heads" (5) for grouped-query attention',
    ],
    [
      { num_key_value_heads: 64 },
      '"num_attention_heads" (32) must be a multiple of "num_key_value_heads" (64) for grouped-query attention',
    ],
    [
      { num_attention_heads: 24, num_key_value_heads: 8 },
      '"hidden_size" (4096) must be a multiple of "num_attention_heads" (24) when "head_dim" is not given',
    ],
    [{ head_dim: 63 }, 'head dimension 63 must be even: RoPE rotates pairs of dimensions'],
    [{ head_dim: 0 }, '"head_dim" must be a positive integer, got 0'],
    [{ rms_norm_eps: 0 }, '"rms_norm_eps" must be a positive number, got 0'],
    [
      { rms_norm_eps: undefined },
      '"rms_norm_eps" must be a positive number, got nothing (the field is missing)',
    ],
    [{ rope_theta: -1 }, '"rope_theta" must be a positive number, got -1'],
    [{ tie_word_embeddings: 'true' }, '"tie_word_embeddings" must be true or false, got "true"'],
    [
      { bos_token_id: 32000 },
      '"bos_token_id" must be a token id below vocab_size 32000, got 32000',
    ],
    [
      { eos_token_id: [2, -1] },
      '"eos_token_id" must be a token id or a list of token ids below vocab_size 32000, got [2,-1]',
    ],
    [
      { eos_token_id: 'eos' },
      '"eos_token_id" must be a token id or a list of token ids below vocab_size 32000, got "eos"',
    ],
  ];
  for (const [changes, message] of cases) {
    assert.equal(refused(with_(changes)), `config.json: ${message}`, JSON.stringify(changes));
  }
  // Model head counts that divide evenly are fine: 32 query heads over 8, 4, 2 or 1 KV heads.
  for (const kv of [32, 8, 4, 2, 1]) {
    assert.equal(accepted(with_({ num_key_value_heads: kv })).numKeyValueHeads, kv);
  }
});

void test('not an object', () => {
  for (const value of [null, [], 'config', 3, undefined]) {
    assert.match(refused(value), /^config\.json: must be a JSON object, got /);
  }
});

void test('any odd value in any field gives a value naming the field, never an exception', () => {
  const odd: unknown[] = [null, -1, 0, 1.5, 'x', [], {}, true, 1e309, -1e309, NaN, [1, 'a']];
  const fields = Object.keys(llama31);
  for (const field of fields) {
    for (const value of odd) {
      const json = { ...llama31, [field]: value };
      const result = readLlamaConfig(json);
      if (result.ok) continue; // e.g. bos_token_id: null, attention_bias: null
      const named =
        field === 'architectures' ? /architecture/ : field === 'model_type' ? /model_type/ : null;
      assert.ok(
        result.message.includes(`"${field}"`) || named?.test(result.message) === true,
        `${field} = ${JSON.stringify(value)}: ${result.message}`,
      );
    }
  }
});
