// `rope_scaling` (transformers ≤ 4.x) or `rope_parameters` (transformers 5) from config.json.
// Only the variants whose inverse frequencies we reproduce exactly are accepted (see
// rope-inverse-frequencies.ts); anything else (dynamic NTK, YaRN, LongRoPE, ...) changes the
// graph and is refused by name rather than silently run as plain RoPE.

import { isJsonObject, type JsonObject } from '../../registry/formats/read-json-object.ts';
import { describeJsonValue } from './describe-json-value.ts';

export type RopeScaling =
  /** Position interpolation: every inverse frequency divided by `factor`. */
  | { readonly type: 'linear'; readonly factor: number }
  /** Llama 3.1: low frequencies divided by `factor`, high ones kept, a smooth ramp between. */
  | {
      readonly type: 'llama3';
      readonly factor: number;
      readonly lowFreqFactor: number;
      readonly highFreqFactor: number;
      readonly originalMaxPositionEmbeddings: number;
    };

export type RopeScalingResult =
  | { readonly ok: true; readonly ropeScaling: RopeScaling | null }
  | { readonly ok: false; readonly message: string };

/**
 * `value` is the config's rope_scaling/rope_parameters entry; `key` names it in messages.
 * null or absent, and type "default", mean plain RoPE.
 */
export function parseRopeScaling(value: unknown, key: string): RopeScalingResult {
  const fail = (why: string): RopeScalingResult => ({
    ok: false,
    message: `config.json: ${key} ${why}`,
  });
  if (value === undefined || value === null) return { ok: true, ropeScaling: null };
  if (!isJsonObject(value)) return fail('must be an object or null');
  // Hugging Face reads "rope_type" and falls back to the older "type".
  const type = value['rope_type'] ?? value['type'];
  if (type === undefined) return fail('has neither "rope_type" nor "type"');
  if (typeof type !== 'string')
    return fail(`has a rope type that is not a string: ${JSON.stringify(type)}`);
  switch (type) {
    case 'default':
      return { ok: true, ropeScaling: null };
    case 'linear': {
      const factor = positiveNumber(value, 'factor');
      if (typeof factor === 'string') return fail(factor);
      return { ok: true, ropeScaling: { type: 'linear', factor } };
    }
    case 'llama3':
      return parseLlama3(value, fail);
    default:
      return fail(
        `has rope type "${type}", which is not supported (supported: default, linear, llama3)`,
      );
  }
}

function parseLlama3(
  value: JsonObject,
  fail: (why: string) => RopeScalingResult,
): RopeScalingResult {
  const factor = positiveNumber(value, 'factor');
  if (typeof factor === 'string') return fail(factor);
  const lowFreqFactor = positiveNumber(value, 'low_freq_factor');
  if (typeof lowFreqFactor === 'string') return fail(lowFreqFactor);
  const highFreqFactor = positiveNumber(value, 'high_freq_factor');
  if (typeof highFreqFactor === 'string') return fail(highFreqFactor);
  const original = value['original_max_position_embeddings'];
  if (!Number.isSafeInteger(original) || (original as number) <= 0) {
    return fail(
      `"original_max_position_embeddings" must be a positive integer, got ${describeJsonValue(original)}`,
    );
  }
  // The smoothing ramp divides by (high - low); equal or inverted factors have no ramp.
  if (highFreqFactor <= lowFreqFactor) {
    return fail(
      `"high_freq_factor" (${highFreqFactor}) must be greater than "low_freq_factor" (${lowFreqFactor})`,
    );
  }
  return {
    ok: true,
    ropeScaling: {
      type: 'llama3',
      factor,
      lowFreqFactor,
      highFreqFactor,
      originalMaxPositionEmbeddings: original as number,
    },
  };
}

/** A finite number > 0, or a description of what is wrong with it. */
function positiveNumber(value: JsonObject, field: string): number | string {
  const item = value[field];
  if (typeof item !== 'number' || !Number.isFinite(item) || item <= 0) {
    return `"${field}" must be a positive number, got ${describeJsonValue(item)}`;
  }
  return item;
}
