// `/v1/completions` answers: the whole response, and the chunks of a stream, shaped as
// OpenAI's `Completion` (the openai package's resources/completions.d.ts) and as vLLM sends
// them: a stream's chunks are `text_completion` objects too, one choice each.

import type { OpenAiFinishReason, TokenLogprob, Usage } from './response-parts.ts';

export interface CompletionLogprobs {
  readonly tokens: string[];
  readonly token_logprobs: number[];
  readonly top_logprobs: Record<string, number>[];
  readonly text_offset: number[];
}

export interface CompletionChoice {
  readonly index: number;
  readonly text: string;
  readonly logprobs: CompletionLogprobs | null;
  readonly finish_reason: OpenAiFinishReason | null;
}

export interface Completion {
  readonly id: string;
  readonly object: 'text_completion';
  readonly created: number;
  readonly model: string;
  readonly choices: CompletionChoice[];
  readonly usage?: Usage | null;
}

/**
 * Characters of `text` as OpenAI and vLLM count them for `text_offset`: code points (Python's
 * `len`), so an emoji is one, not the two UTF-16 units of `text.length`.
 */
export function codePointCount(text: string): number {
  let count = 0;
  for (const _ of text) count += 1;
  return count;
}

/**
 * The legacy logprobs object for `entries`, the first starting at code point `startOffset` of
 * the choice's text; also where the next token would start (a stream continues from it).
 * Each position's alternatives include the chosen token, as OpenAI's and vLLM's do.
 */
export function completionLogprobs(
  entries: readonly TokenLogprob[],
  startOffset: number,
): { readonly logprobs: CompletionLogprobs; readonly nextOffset: number } {
  const logprobs: CompletionLogprobs = {
    tokens: [],
    token_logprobs: [],
    top_logprobs: [],
    text_offset: [],
  };
  let offset = startOffset;
  for (const entry of entries) {
    logprobs.tokens.push(entry.token);
    logprobs.token_logprobs.push(entry.logprob);
    const top: Record<string, number> = {};
    for (const alternative of entry.top) top[alternative.token] ??= alternative.logprob;
    top[entry.token] ??= entry.logprob;
    logprobs.top_logprobs.push(top);
    logprobs.text_offset.push(offset);
    offset += codePointCount(entry.token);
  }
  return { logprobs, nextOffset: offset };
}

export interface CompletionHeader {
  readonly id: string;
  readonly created: number;
  readonly model: string;
}

export function completionResponse(
  header: CompletionHeader,
  choices: CompletionChoice[],
  usage: Usage,
): Completion {
  return {
    id: header.id,
    object: 'text_completion',
    created: header.created,
    model: header.model,
    choices,
    usage,
  };
}

/**
 * A stream chunk for one choice. With `stream_options.include_usage` every chunk carries
 * `"usage": null` and a last chunk (`completionUsageChunk`) the totals.
 */
export function completionChunk(
  header: CompletionHeader,
  choice: CompletionChoice,
  includeUsage: boolean,
): Completion {
  return {
    id: header.id,
    object: 'text_completion',
    created: header.created,
    model: header.model,
    choices: [choice],
    ...(includeUsage ? { usage: null } : {}),
  };
}

export function completionUsageChunk(header: CompletionHeader, usage: Usage): Completion {
  return {
    id: header.id,
    object: 'text_completion',
    created: header.created,
    model: header.model,
    choices: [],
    usage,
  };
}
