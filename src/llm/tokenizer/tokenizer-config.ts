// What tokenizer.json does not say and tokenizer_config.json (and generation_config.json)
// do: which tokens are BOS / EOS / UNK / PAD, the chat template, and extra ids that end
// generation (Llama-3 ends turns with <|eot_id|> as well as <|end_of_text|>).

import { fail, isJsonObject, succeed, type TokenizerResult } from './tokenizer-result.ts';

export interface SpecialTokenNames {
  readonly bos?: string;
  readonly eos?: string;
  readonly unk?: string;
  readonly pad?: string;
}

export interface TokenizerConfig {
  readonly specialTokens: SpecialTokenNames;
  /** The Jinja source of the default chat template, when there is one. */
  readonly chatTemplate?: string;
  /** generation_config.json's `eos_token_id` (one id or several). */
  readonly generationEosTokenIds: readonly number[];
}

export const emptyTokenizerConfig: TokenizerConfig = {
  specialTokens: {},
  generationEosTokenIds: [],
};

/**
 * Reads tokenizer_config.json (`config`) and generation_config.json (`generation`); either
 * may be undefined when the file is absent. `chatTemplateFile` is the text of a separate
 * chat_template.jinja, which newer transformers versions write instead of the config field.
 */
export function parseTokenizerConfig(
  config: unknown,
  generation?: unknown,
  chatTemplateFile?: string,
): TokenizerResult<TokenizerConfig> {
  if (config !== undefined && !isJsonObject(config)) {
    return fail('tokenizer_config.json must hold a JSON object');
  }
  const specialTokens: { bos?: string; eos?: string; unk?: string; pad?: string } = {};
  for (const [field, key] of [
    ['bos_token', 'bos'],
    ['eos_token', 'eos'],
    ['unk_token', 'unk'],
    ['pad_token', 'pad'],
  ] as const) {
    const value = config?.[field];
    if (value === undefined || value === null) continue;
    const content =
      typeof value === 'string' ? value : isJsonObject(value) ? value.content : undefined;
    if (typeof content !== 'string') {
      return fail(`tokenizer_config.json: ${field} must be a string or {"content": …}`);
    }
    specialTokens[key] = content;
  }

  let chatTemplate: string | undefined;
  const template = config?.chat_template;
  if (typeof template === 'string') chatTemplate = template;
  else if (Array.isArray(template)) {
    // Several named templates: the one named "default" is the chat template.
    for (const entry of template as unknown[]) {
      if (isJsonObject(entry) && entry.name === 'default' && typeof entry.template === 'string') {
        chatTemplate = entry.template;
      }
    }
  } else if (template !== undefined && template !== null) {
    return fail('tokenizer_config.json: chat_template must be a string or a list of templates');
  }
  // transformers: a chat_template.jinja file replaces the config's template.
  if (chatTemplateFile !== undefined) chatTemplate = chatTemplateFile;

  const generationEosTokenIds: number[] = [];
  if (generation !== undefined) {
    if (!isJsonObject(generation)) return fail('generation_config.json must hold a JSON object');
    const eos = generation.eos_token_id;
    const ids: unknown[] = Array.isArray(eos)
      ? eos
      : eos === undefined || eos === null
        ? []
        : [eos];
    for (const id of ids) {
      if (typeof id !== 'number' || !Number.isInteger(id) || id < 0) {
        return fail('generation_config.json: eos_token_id must be an id or a list of ids');
      }
      generationEosTokenIds.push(id);
    }
  }
  return succeed({
    specialTokens,
    ...(chatTemplate === undefined ? {} : { chatTemplate }),
    generationEosTokenIds,
  });
}
