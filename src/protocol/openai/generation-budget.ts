// From a parsed request and its tokenized prompt to what the engine runs: how many tokens a
// choice may generate (checked against the model's context, as vLLM checks it, after
// tokenizing), and each choice's sampling parameters.

import type { SamplingParams } from '../../llm/sampling/sampler.ts';
import { openAiError, type OpenAiError } from './openai-error.ts';
import type { GenerationFields } from './request-fields.ts';

/**
 * What a completion without `max_tokens` gets: OpenAI's documented default for the legacy
 * completions route, and vLLM's. A chat without one may use the rest of the context.
 */
export const defaultCompletionMaxTokens = 16;

/**
 * The output tokens a prompt of `promptLength` tokens may have: `max_tokens`, or when it is
 * absent 16 for a completion and all that the context leaves for a chat (in both cases no
 * more than the context leaves). A prompt that leaves no room, or a `max_tokens` that does
 * not fit beside the prompt, is a 400 naming the field to change.
 */
export function resolveMaxTokens(
  promptLength: number,
  fields: Pick<GenerationFields, 'maxTokens'>,
  contextLength: number,
  promptParam: 'prompt' | 'messages',
): number | OpenAiError {
  if (promptLength >= contextLength) {
    return openAiError(
      400,
      `This model's maximum context length is ${contextLength} tokens. However, your ${promptParam === 'prompt' ? 'prompt' : 'messages'} resulted in ${promptLength} tokens, which leaves no room for a completion. Please reduce the length of the ${promptParam === 'prompt' ? 'prompt' : 'messages'}.`,
      { param: promptParam },
    );
  }
  const room = contextLength - promptLength;
  if (fields.maxTokens === null)
    return promptParam === 'prompt' ? Math.min(defaultCompletionMaxTokens, room) : room;
  if (promptLength + fields.maxTokens > contextLength) {
    return openAiError(
      400,
      `This model's maximum context length is ${contextLength} tokens. However, you requested ${promptLength + fields.maxTokens} tokens (${promptLength} in the ${promptParam}, ${fields.maxTokens} in the completion). Please reduce the length of the ${promptParam} or the completion.`,
      { param: 'max_tokens' },
    );
  }
  return fields.maxTokens;
}

/**
 * A prompt of `length` characters (UTF-16 units) when at most `maxLength` fit in the context:
 * the 400 of a prompt over the context, known before tokenizing it.
 */
export function checkPromptLength(
  length: number,
  maxLength: number,
  contextLength: number,
  promptParam: 'prompt' | 'messages',
): OpenAiError | null {
  if (length <= maxLength) return null;
  return openAiError(
    400,
    `This model's maximum context length is ${contextLength} tokens. However, your ${promptParam} has ${length} characters, more than ${contextLength} tokens can hold. Please reduce the length of the ${promptParam}.`,
    { param: promptParam },
  );
}

/** Prompt token ids outside the vocabulary: a 400 naming the first. */
export function checkPromptTokens(
  tokens: readonly number[],
  vocabSize: number,
): OpenAiError | null {
  for (const token of tokens) {
    if (token >= vocabSize)
      return openAiError(
        400,
        `prompt token id ${token} is outside this model's vocabulary (0–${vocabSize - 1})`,
        { param: 'prompt' },
      );
  }
  return null;
}

/**
 * Sampling for choice `choice` of a request: with a seed, choice i draws from seed + i, so the
 * n choices differ yet the whole answer is reproducible.
 */
export function samplingFor(
  fields: GenerationFields,
  choice: number,
  logprobs: number | null,
): SamplingParams {
  return {
    temperature: fields.temperature,
    topP: fields.topP,
    topK: fields.topK,
    minP: fields.minP,
    repetitionPenalty: fields.repetitionPenalty,
    presencePenalty: fields.presencePenalty,
    frequencyPenalty: fields.frequencyPenalty,
    ...(fields.seed === null ? {} : { seed: choiceSeed(fields.seed, choice) }),
    ...(logprobs === null ? {} : { logprobs }),
  };
}

function choiceSeed(seed: number, choice: number): number {
  return Number.isSafeInteger(seed + choice) ? seed + choice : seed - choice;
}
