// `/v1/chat/completions` answers: the whole `chat.completion`, and the
// `chat.completion.chunk`s of a stream, shaped as OpenAI's (the openai package's
// resources/chat/completions/completions.d.ts) and vLLM's: a choice's first chunk carries
// `delta: {role: "assistant", content: ""}`, then content deltas, and its last chunk the
// finish reason.

import type {
  OpenAiFinishReason,
  TokenAlternative,
  TokenLogprob,
  Usage,
} from './response-parts.ts';

export interface ChatTopLogprob {
  readonly token: string;
  readonly logprob: number;
  readonly bytes: number[] | null;
}

export interface ChatTokenLogprob extends ChatTopLogprob {
  readonly top_logprobs: ChatTopLogprob[];
}

export interface ChatLogprobs {
  readonly content: ChatTokenLogprob[] | null;
  readonly refusal: null;
}

export interface ChatChoice {
  readonly index: number;
  readonly message: {
    readonly role: 'assistant';
    readonly content: string;
    readonly refusal: null;
  };
  readonly logprobs: ChatLogprobs | null;
  readonly finish_reason: OpenAiFinishReason;
}

export interface ChatCompletion {
  readonly id: string;
  readonly object: 'chat.completion';
  readonly created: number;
  readonly model: string;
  readonly choices: ChatChoice[];
  readonly usage: Usage;
}

export interface ChatDelta {
  readonly role?: 'assistant';
  readonly content?: string;
}

export interface ChatChunkChoice {
  readonly index: number;
  readonly delta: ChatDelta;
  readonly logprobs: ChatLogprobs | null;
  readonly finish_reason: OpenAiFinishReason | null;
}

export interface ChatCompletionChunk {
  readonly id: string;
  readonly object: 'chat.completion.chunk';
  readonly created: number;
  readonly model: string;
  readonly choices: ChatChunkChoice[];
  readonly usage?: Usage | null;
}

export interface ChatHeader {
  readonly id: string;
  readonly created: number;
  readonly model: string;
}

/**
 * A token as text and its own bytes (what OpenAI's `bytes` holds): for a token that is part of
 * a UTF-8 character, that part, not the UTF-8 of the U+FFFD its text shows.
 */
function withBytes(alternative: TokenAlternative): ChatTopLogprob {
  return { token: alternative.token, logprob: alternative.logprob, bytes: [...alternative.bytes] };
}

/** The chat logprobs object of `entries`; `topLogprobs` alternatives at each position. */
export function chatLogprobs(entries: readonly TokenLogprob[], topLogprobs: number): ChatLogprobs {
  return {
    content: entries.map((entry) => ({
      ...withBytes(entry),
      top_logprobs: entry.top.slice(0, topLogprobs).map(withBytes),
    })),
    refusal: null,
  };
}

export function chatResponse(
  header: ChatHeader,
  choices: ChatChoice[],
  usage: Usage,
): ChatCompletion {
  return {
    id: header.id,
    object: 'chat.completion',
    created: header.created,
    model: header.model,
    choices,
    usage,
  };
}

export function chatChoice(
  index: number,
  content: string,
  logprobs: ChatLogprobs | null,
  finishReason: OpenAiFinishReason,
): ChatChoice {
  return {
    index,
    message: { role: 'assistant', content, refusal: null },
    logprobs,
    finish_reason: finishReason,
  };
}

/**
 * A stream chunk for one choice. With `stream_options.include_usage` every chunk carries
 * `"usage": null` and a last chunk (`chatUsageChunk`, no choices) the totals.
 */
export function chatChunk(
  header: ChatHeader,
  choice: ChatChunkChoice,
  includeUsage: boolean,
): ChatCompletionChunk {
  return {
    id: header.id,
    object: 'chat.completion.chunk',
    created: header.created,
    model: header.model,
    choices: [choice],
    ...(includeUsage ? { usage: null } : {}),
  };
}

export function chatUsageChunk(header: ChatHeader, usage: Usage): ChatCompletionChunk {
  return {
    id: header.id,
    object: 'chat.completion.chunk',
    created: header.created,
    model: header.model,
    choices: [],
    usage,
  };
}
