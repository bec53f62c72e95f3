// Builds a Tokenizer from parsed JSON: tokenizer.json's object, and optionally the
// tokenizer_config.json / generation_config.json contents. Every problem (a missing field,
// an unsupported normalizer, pre-tokenizer, model or decoder) is an error value naming it.

import { AddedVocabulary } from './added-vocabulary.ts';
import { BpeModel } from './bpe-model.ts';
import { parseDecoder } from './decoder.ts';
import { parseNormalizer } from './normalizer.ts';
import { parsePostProcessor } from './post-processor.ts';
import { parsePreTokenizer } from './pre-tokenizer.ts';
import { Tokenizer } from './tokenizer.ts';
import { emptyTokenizerConfig, type TokenizerConfig } from './tokenizer-config.ts';
import { isJsonObject } from './tokenizer-result.ts';

export type CreateTokenizerResult =
  | { readonly ok: true; readonly tokenizer: Tokenizer }
  | { readonly ok: false; readonly message: string };

export function createTokenizer(
  tokenizerJson: unknown,
  config: TokenizerConfig = emptyTokenizerConfig,
): CreateTokenizerResult {
  if (!isJsonObject(tokenizerJson))
    return { ok: false, message: 'tokenizer.json must hold a JSON object' };
  const modelJson = tokenizerJson.model;
  if (!isJsonObject(modelJson))
    return { ok: false, message: 'tokenizer.json has no "model" object' };
  // Files written by old versions omit the model type; a BPE model is known by its merges.
  const modelType =
    typeof modelJson.type === 'string'
      ? modelJson.type
      : 'merges' in modelJson
        ? 'BPE'
        : '(missing)';
  if (modelType !== 'BPE') {
    return {
      ok: false,
      message: `unsupported tokenizer model type: ${modelType} (only BPE is implemented)`,
    };
  }
  const model = BpeModel.parse(modelJson);
  if (!model.ok) return model;
  const normalizer = parseNormalizer(tokenizerJson.normalizer);
  if (!normalizer.ok) return normalizer;
  const preTokenizer = parsePreTokenizer(tokenizerJson.pre_tokenizer);
  if (!preTokenizer.ok) return preTokenizer;
  const decoder = parseDecoder(tokenizerJson.decoder);
  if (!decoder.ok) return decoder;
  const frame = parsePostProcessor(tokenizerJson.post_processor);
  if (!frame.ok) return frame;
  const added = AddedVocabulary.parse(tokenizerJson.added_tokens, normalizer.value);
  if (!added.ok) return added;
  return {
    ok: true,
    tokenizer: new Tokenizer({
      model: model.value,
      added: added.value,
      normalizer: normalizer.value,
      preTokenizer: preTokenizer.value,
      decoder: decoder.value,
      frame: frame.value,
      config,
      dropsText: mayDropText(tokenizerJson, modelJson),
    }),
  };
}

/** Every object in a component's JSON, nested sequences included. */
function componentsOf(json: unknown): Record<string, unknown>[] {
  if (Array.isArray(json)) return json.flatMap(componentsOf);
  if (!isJsonObject(json)) return [];
  return [json, ...Object.values(json).flatMap(componentsOf)];
}

/** Whether encoding can leave characters without a token (see TokenizerParts.dropsText). */
function mayDropText(
  tokenizerJson: Record<string, unknown>,
  modelJson: Record<string, unknown>,
): boolean {
  const parts = [
    ...componentsOf(tokenizerJson.normalizer),
    ...componentsOf(tokenizerJson.pre_tokenizer),
  ];
  const removes = parts.some(
    (part) =>
      part.type === 'Strip' ||
      part.type === 'Whitespace' ||
      part.type === 'WhitespaceSplit' ||
      part.behavior === 'Removed',
  );
  if (removes) return true;
  // Byte-level: every byte has its symbol in the vocabulary; byte fallback: its <0xNN> token.
  if (parts.some((part) => part.type === 'ByteLevel') || modelJson.byte_fallback === true)
    return false;
  // An unknown character is dropped without an unknown token, and a run of them is one
  // token when fused.
  return typeof modelJson.unk_token !== 'string' || modelJson.fuse_unk === true;
}
