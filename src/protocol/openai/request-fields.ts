// Readers for the fields `/v1/completions` and `/v1/chat/completions` share: the sampling
// parameters, `n`, `max_tokens`, `stop`, `stream` and `stream_options`. Each reader returns the
// value or a FieldProblem naming the field (OpenAI's `param`), so a request is refused with
// the first problem found and the client is told which field to fix.
//
// Ranges are OpenAI's (temperature 0–2, penalties −2…2, up to 4 stop strings), plus vLLM's
// extra sampling fields (`top_k`, `min_p`, `repetition_penalty`) that the engine supports.

import { openAiError, type OpenAiError } from './openai-error.ts';

export class FieldProblem {
  constructor(
    /** The field at fault (OpenAI's `param`); null for the body as a whole. */
    readonly param: string | null,
    readonly message: string,
  ) {}

  toError(): OpenAiError {
    return openAiError(400, this.message, { param: this.param });
  }
}

export type Body = Readonly<Record<string, unknown>>;

/** What a request's body may ask of the server, beyond the body itself. */
export interface RequestLimits {
  /** Most choices (`n`) a request may ask for. */
  readonly maxN: number;
  /** The model's context (prompt + output positions). */
  readonly contextLength: number;
}

/** The generation fields both routes share, read and checked. */
export interface GenerationFields {
  readonly model: string;
  /** null: the route's default (generation-budget.ts: 16 for a completion, the context's rest for a chat). */
  readonly maxTokens: number | null;
  readonly n: number;
  readonly temperature: number;
  readonly topP: number;
  readonly topK: number;
  readonly minP: number;
  readonly repetitionPenalty: number;
  readonly presencePenalty: number;
  readonly frequencyPenalty: number;
  readonly seed: number | null;
  readonly stop: readonly string[];
  readonly stream: boolean;
  readonly includeUsage: boolean;
  readonly user: string | null;
  /** vLLM's `ignore_eos`: generate past the end-of-sequence tokens (benchmarks use it). */
  readonly ignoreEos: boolean;
}

export const maxStopStrings = 4;

const typeName = (value: unknown): string =>
  value === null
    ? 'null'
    : value === undefined
      ? 'undefined'
      : Array.isArray(value)
        ? 'an array'
        : typeof value === 'object'
          ? 'an object'
          : `a ${typeof value}`;

/** Absent and null mean "the default", as in OpenAI's API. */
const absent = (value: unknown): value is null | undefined => value === undefined || value === null;

export function readNumber(
  body: Body,
  name: string,
  fallback: number,
  check: (value: number) => boolean,
  range: string,
): number | FieldProblem {
  const value = body[name];
  if (absent(value)) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value))
    return new FieldProblem(name, `${name} must be a number, not ${typeName(value)}`);
  if (!check(value)) return new FieldProblem(name, `${name} must be ${range}, not ${value}`);
  return value;
}

export function readInteger(
  body: Body,
  name: string,
  min: number,
  max: number,
): number | null | FieldProblem {
  const value = body[name];
  if (absent(value)) return null;
  if (typeof value !== 'number' || !Number.isInteger(value))
    return new FieldProblem(name, `${name} must be an integer, not ${describe(value)}`);
  if (value < min || value > max)
    return new FieldProblem(name, `${name} must be ${min}–${max}, not ${value}`);
  return value;
}

export function readBoolean(body: Body, name: string, fallback: boolean): boolean | FieldProblem {
  const value = body[name];
  if (absent(value)) return fallback;
  if (typeof value !== 'boolean')
    return new FieldProblem(name, `${name} must be true or false, not ${typeName(value)}`);
  return value;
}

function describe(value: unknown): string {
  return typeof value === 'number' ? String(value) : typeName(value);
}

function readMaxTokens(body: Body, limits: RequestLimits): number | null | FieldProblem {
  // Chat's newer name wins, as in OpenAI's API (max_tokens is deprecated there).
  const name = absent(body.max_completion_tokens) ? 'max_tokens' : 'max_completion_tokens';
  const value = body[name];
  if (absent(value)) return null;
  if (typeof value !== 'number' || !Number.isInteger(value))
    return new FieldProblem(name, `${name} must be an integer, not ${describe(value)}`);
  if (value < 1) return new FieldProblem(name, `${name} must be at least 1, not ${value}`);
  if (value >= limits.contextLength)
    return new FieldProblem(
      name,
      `${name} is ${value}, but this model's maximum context length is ${limits.contextLength} tokens (prompt and completion together)`,
    );
  return value;
}

function readStop(body: Body): readonly string[] | FieldProblem {
  const value = body.stop;
  if (absent(value)) return [];
  const list: unknown[] = typeof value === 'string' ? [value] : Array.isArray(value) ? value : [];
  if (typeof value !== 'string' && !Array.isArray(value))
    return new FieldProblem(
      'stop',
      `stop must be a string or an array of strings, not ${typeName(value)}`,
    );
  if (list.length > maxStopStrings)
    return new FieldProblem(
      'stop',
      `stop takes at most ${maxStopStrings} strings, not ${list.length}`,
    );
  for (const item of list) {
    if (typeof item !== 'string' || item.length === 0)
      return new FieldProblem('stop', 'stop strings must be non-empty strings');
  }
  return list as string[];
}

function readStreamOptions(body: Body, stream: boolean): boolean | FieldProblem {
  const value = body.stream_options;
  if (absent(value)) return false;
  if (!stream)
    return new FieldProblem('stream_options', 'stream_options is only allowed when stream is true');
  if (typeof value !== 'object' || Array.isArray(value))
    return new FieldProblem(
      'stream_options',
      `stream_options must be an object, not ${typeName(value)}`,
    );
  const include = (value as Body).include_usage;
  if (absent(include)) return false;
  if (typeof include !== 'boolean')
    return new FieldProblem(
      'stream_options.include_usage',
      `stream_options.include_usage must be true or false, not ${typeName(include)}`,
    );
  return include;
}

/** Reads the fields both routes share; the first problem found, if any. */
export function readGenerationFields(
  body: Body,
  limits: RequestLimits,
): GenerationFields | FieldProblem {
  const model = body.model;
  if (typeof model !== 'string' || model.length === 0)
    return new FieldProblem('model', 'model must name the model (a non-empty string)');
  const maxTokens = readMaxTokens(body, limits);
  if (maxTokens instanceof FieldProblem) return maxTokens;
  const n = readInteger(body, 'n', 1, limits.maxN);
  if (n instanceof FieldProblem) return n;
  const temperature = readNumber(body, 'temperature', 1, (v) => v >= 0 && v <= 2, '0–2');
  if (temperature instanceof FieldProblem) return temperature;
  const topP = readNumber(body, 'top_p', 1, (v) => v > 0 && v <= 1, 'in (0, 1]');
  if (topP instanceof FieldProblem) return topP;
  // vLLM's: -1 (or 0) means all tokens.
  const topK = readNumber(
    body,
    'top_k',
    0,
    (v) => Number.isInteger(v) && v >= -1,
    'an integer ≥ -1',
  );
  if (topK instanceof FieldProblem) return topK;
  const minP = readNumber(body, 'min_p', 0, (v) => v >= 0 && v <= 1, 'in [0, 1]');
  if (minP instanceof FieldProblem) return minP;
  const repetitionPenalty = readNumber(
    body,
    'repetition_penalty',
    1,
    (v) => v > 0 && v <= 10,
    'in (0, 10]',
  );
  if (repetitionPenalty instanceof FieldProblem) return repetitionPenalty;
  const penalty = (v: number): boolean => v >= -2 && v <= 2;
  const presencePenalty = readNumber(body, 'presence_penalty', 0, penalty, 'in [-2, 2]');
  if (presencePenalty instanceof FieldProblem) return presencePenalty;
  const frequencyPenalty = readNumber(body, 'frequency_penalty', 0, penalty, 'in [-2, 2]');
  if (frequencyPenalty instanceof FieldProblem) return frequencyPenalty;
  const seed = readInteger(body, 'seed', Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER);
  if (seed instanceof FieldProblem) return seed;
  const stop = readStop(body);
  if (stop instanceof FieldProblem) return stop;
  const stream = readBoolean(body, 'stream', false);
  if (stream instanceof FieldProblem) return stream;
  const includeUsage = readStreamOptions(body, stream);
  if (includeUsage instanceof FieldProblem) return includeUsage;
  const user = body.user;
  if (!absent(user) && typeof user !== 'string')
    return new FieldProblem('user', `user must be a string, not ${typeName(user)}`);
  const ignoreEos = readBoolean(body, 'ignore_eos', false);
  if (ignoreEos instanceof FieldProblem) return ignoreEos;
  const logitBias = body.logit_bias;
  if (!absent(logitBias) && (typeof logitBias !== 'object' || Object.keys(logitBias).length > 0))
    return new FieldProblem('logit_bias', 'logit_bias is not supported by this server');
  return {
    model,
    maxTokens,
    n: n ?? 1,
    temperature,
    topP,
    topK: Math.max(topK, 0),
    minP,
    repetitionPenalty,
    presencePenalty,
    frequencyPenalty,
    seed,
    stop,
    stream,
    includeUsage,
    user: typeof user === 'string' ? user : null,
    ignoreEos,
  };
}

/** A request read into `T`, or the OpenAI-shaped 400 naming the field at fault. */
export type ParsedRequest<T> =
  { readonly ok: true; readonly request: T } | { readonly ok: false; readonly error: OpenAiError };

/**
 * Reads what both routes take alike (a JSON object; the generation fields), then the route's
 * own fields with `readRest`: the first problem found is the answer.
 */
export function parseRequest<T>(
  raw: unknown,
  limits: RequestLimits,
  readRest: (body: Body, fields: GenerationFields) => T | FieldProblem,
): ParsedRequest<T> {
  const body = readBody(raw);
  if (body instanceof FieldProblem) return { ok: false, error: body.toError() };
  const fields = readGenerationFields(body, limits);
  if (fields instanceof FieldProblem) return { ok: false, error: fields.toError() };
  const parsed = readRest(body, fields);
  return parsed instanceof FieldProblem
    ? { ok: false, error: parsed.toError() }
    : { ok: true, request: parsed };
}

/** The body as an object, or the problem with it. */
export function readBody(body: unknown): Body | FieldProblem {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    return new FieldProblem(null, `the request body must be a JSON object, not ${typeName(body)}`);
  return body as Body;
}

export { typeName, absent };
