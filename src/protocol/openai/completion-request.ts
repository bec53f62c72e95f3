// `POST /v1/completions`: the body read into a typed request, or an OpenAI-shaped 400 that
// names the field at fault. Prompts come as OpenAI takes them — one string, several strings,
// one list of token ids, or several — and each prompt gets its own `n` choices, numbered
// prompt-major (prompt p, choice i → index p·n + i), as OpenAI and vLLM number them.

import {
  absent,
  FieldProblem,
  parseRequest,
  readBoolean,
  readInteger,
  typeName,
  type Body,
  type GenerationFields,
  type ParsedRequest,
  type RequestLimits,
} from './request-fields.ts';

/** A prompt as text (tokenized by the server) or as token ids (used as they are). */
export type CompletionPrompt =
  | { readonly kind: 'text'; readonly text: string }
  | { readonly kind: 'tokens'; readonly tokens: readonly number[] };

export interface CompletionRequest extends GenerationFields {
  readonly prompts: readonly CompletionPrompt[];
  /** Top log-probabilities to return with each token (0–5), or null for none. */
  readonly logprobs: number | null;
  /** Return the prompt before the completion. */
  readonly echo: boolean;
}

/** OpenAI's limit for the legacy completions `logprobs`. */
export const maxCompletionLogprobs = 5;

const isTokenId = (value: unknown): value is number =>
  typeof value === 'number' && Number.isInteger(value) && value >= 0;

function readPrompts(body: Body): CompletionPrompt[] | FieldProblem {
  const value = body.prompt;
  if (absent(value)) return new FieldProblem('prompt', 'prompt is required');
  if (typeof value === 'string') return [{ kind: 'text', text: value }];
  if (!Array.isArray(value))
    return new FieldProblem(
      'prompt',
      `prompt must be a string, an array of strings or an array of token ids, not ${typeName(value)}`,
    );
  if (value.length === 0) return new FieldProblem('prompt', 'prompt must not be empty');
  if (value.every((item) => typeof item === 'string'))
    return value.map((text: string) => ({ kind: 'text', text }));
  if (value.every(isTokenId)) return [{ kind: 'tokens', tokens: value }];
  const prompts: CompletionPrompt[] = [];
  for (const [i, item] of value.entries()) {
    if (!Array.isArray(item) || !item.every(isTokenId))
      return new FieldProblem(
        'prompt',
        `prompt[${i}] must be ${Array.isArray(item) ? 'token ids (integers ≥ 0)' : 'an array of token ids'}: a prompt is a string, an array of strings, an array of token ids, or an array of those`,
      );
    if (item.length === 0) return new FieldProblem('prompt', `prompt[${i}] is empty`);
    prompts.push({ kind: 'tokens', tokens: item });
  }
  return prompts;
}

export function parseCompletionRequest(
  raw: unknown,
  limits: RequestLimits,
): ParsedRequest<CompletionRequest> {
  return parseRequest(raw, limits, readCompletion);
}

function readCompletion(body: Body, fields: GenerationFields): CompletionRequest | FieldProblem {
  const prompts = readPrompts(body);
  if (prompts instanceof FieldProblem) return prompts;
  const logprobs = readInteger(body, 'logprobs', 0, maxCompletionLogprobs);
  if (logprobs instanceof FieldProblem) return logprobs;
  const echo = readBoolean(body, 'echo', false);
  if (echo instanceof FieldProblem) return echo;
  // Echoing with log-probabilities needs the prompt's own log-probabilities, which the
  // engine does not compute.
  if (echo && logprobs !== null)
    return new FieldProblem('echo', 'echo together with logprobs is not supported by this server');
  const bestOf = readInteger(body, 'best_of', 1, Number.MAX_SAFE_INTEGER);
  if (bestOf instanceof FieldProblem) return bestOf;
  if (bestOf !== null && bestOf !== fields.n)
    return new FieldProblem(
      'best_of',
      `best_of other than n is not supported by this server (best_of ${bestOf}, n ${fields.n})`,
    );
  if (!absent(body.suffix) && body.suffix !== '')
    return new FieldProblem('suffix', 'suffix is not supported by this server');
  return { ...fields, prompts, logprobs, echo };
}
