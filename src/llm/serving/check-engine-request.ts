// Why an EngineRequest cannot be queued, decided before it is (the in-process engine and the
// threaded host answer `submit` with it synchronously): malformed fields are 'invalid', a
// prompt plus max tokens past the model's context 'too_long'.

import { checkSamplingParams } from '../sampling/sampler.ts';
import type { EngineRequest, SubmitRefusal } from './engine-api.ts';

export interface RequestLimits {
  readonly contextLength: number;
  readonly vocabSize: number;
  /** Whether text is made (stop strings need it). */
  readonly hasTokenizer: boolean;
}

export function checkEngineRequest(
  request: EngineRequest,
  limits: RequestLimits,
): SubmitRefusal | null {
  const invalid = (message: string): SubmitRefusal => ({ ok: false, reason: 'invalid', message });
  if (typeof request.requestId !== 'string' || request.requestId === '')
    return invalid('the request id must be a non-empty string');
  const prompt = request.promptTokens;
  if (!Array.isArray(prompt) || prompt.length === 0) return invalid('the prompt is empty');
  for (const token of prompt)
    if (!Number.isInteger(token) || token < 0 || token >= limits.vocabSize)
      return invalid(`prompt token ${token} is outside the vocabulary (${limits.vocabSize})`);
  if (!Number.isInteger(request.maxTokens) || request.maxTokens < 1)
    return invalid(`max_tokens must be a whole number ≥ 1, not ${request.maxTokens}`);
  if (request.priority !== undefined && !Number.isFinite(request.priority))
    return invalid(`priority must be a number, not ${request.priority}`);
  const sampling = checkSamplingParams(request.sampling);
  if (sampling !== null) return invalid(sampling);
  for (const token of request.stopTokenIds)
    if (!Number.isInteger(token)) return invalid(`stop token id ${token} is not an integer`);
  if (request.stopStrings.some((s) => typeof s !== 'string' || s === ''))
    return invalid('a stop string cannot be empty');
  if (request.stopStrings.length > 0 && !limits.hasTokenizer)
    return invalid('stop strings are matched on text: the engine needs a tokenizer');
  const needed = prompt.length + request.maxTokens;
  if (needed > limits.contextLength)
    return {
      ok: false,
      reason: 'too_long',
      message: `the prompt's ${prompt.length} tokens plus max_tokens ${request.maxTokens} exceed the model's context of ${limits.contextLength} tokens`,
    };
  return null;
}
