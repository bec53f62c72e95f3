// Generation over the model and the paged KV cache: prompts prefilled in chunks, then every
// live sequence decodes one token per step, all sequences in one forward call (the batched
// decode the serving layer's continuous batching will drive with a real scheduler in the
// next issue). Each sequence has its own sampler (seeded), stop tokens, stop strings matched
// across token boundaries on the detokenized text, and a token budget.
//
//   prefill: prompt ─► chunks of ≤ maxTokensPerStep ─► forward ─► first token
//   decode:  [seq₁ last token, seq₂ last token, …] ─► one forward ─► a token each
//   end:     stop token | stop string | max tokens | KV cache full → its blocks freed

import type { BlockPool } from '../kv-cache/block-pool.ts';
import { SequenceKv } from '../kv-cache/sequence-kv.ts';
import type { LlamaModel } from '../model/llama-model.ts';
import { checkSamplingParams, Sampler, type SamplingParams } from '../sampling/sampler.ts';
import { StopStringMatcher } from '../sampling/stop-strings.ts';

/** Turns token ids into text a piece at a time, never splitting a UTF-8 character. */
export interface TextStream {
  push(token: number): string;
  flush(): string;
}

export interface GenerationRequest {
  readonly promptTokens: readonly number[];
  readonly maxTokens: number;
  readonly sampling?: SamplingParams;
  /** Token ids that end generation (e.g. the tokenizer's EOS ids); not part of the text. */
  readonly stopTokenIds?: readonly number[];
  /** Strings that end generation; neither they nor what follows are returned. */
  readonly stopStrings?: readonly string[];
  /** A fresh detokenizer for this request's output, when text is wanted. */
  readonly textStream?: TextStream;
}

export type FinishReason = 'stop' | 'length' | 'kv_cache_full';

export type GenerationEvent =
  | {
      readonly kind: 'token';
      readonly request: number;
      readonly token: number;
      /** Text this token completes (may be '' while a character or a stop string is pending). */
      readonly text: string;
      /** null unless the request's sampling asked for log-probabilities. */
      readonly logprob: number | null;
      readonly topLogprobs: readonly { readonly token: number; readonly logprob: number }[];
    }
  | {
      readonly kind: 'done';
      readonly request: number;
      readonly reason: FinishReason;
      /** Text held back until the end (a partial stop string that never completed). */
      readonly text: string;
      readonly promptTokens: number;
      readonly completionTokens: number;
    };

/** Why a request cannot run at all; null when it can. */
export function checkGenerationRequest(
  request: GenerationRequest,
  contextLength: number,
  vocabSize: number,
): string | null {
  if (request.promptTokens.length === 0) return 'the prompt is empty';
  for (const token of request.promptTokens) {
    if (!Number.isInteger(token) || token < 0 || token >= vocabSize)
      return `prompt token ${token} is outside the vocabulary (${vocabSize})`;
  }
  if (!Number.isInteger(request.maxTokens) || request.maxTokens < 1)
    return `max_tokens must be a whole number ≥ 1, not ${request.maxTokens}`;
  const needed = request.promptTokens.length + request.maxTokens;
  if (needed > contextLength) {
    return `the prompt's ${request.promptTokens.length} tokens plus max_tokens ${request.maxTokens} exceed the model's context of ${contextLength} tokens`;
  }
  if ((request.stopStrings?.length ?? 0) > 0 && request.textStream === undefined)
    return 'stop strings are matched on text: the request needs a text stream (a tokenizer)';
  if (request.sampling !== undefined) return checkSamplingParams(request.sampling);
  return null;
}

interface Live {
  readonly index: number;
  readonly request: GenerationRequest;
  readonly kv: SequenceKv;
  readonly sampler: Sampler;
  readonly stops: StopStringMatcher | null;
  readonly stopTokens: ReadonlySet<number>;
  last: number;
  generated: number;
}

/**
 * Runs `requests` to completion together and yields their events as they happen (each
 * request's tokens in order). Requests must pass `checkGenerationRequest` first.
 */
export function* generate(
  model: LlamaModel,
  pool: BlockPool,
  requests: readonly GenerationRequest[],
): Generator<GenerationEvent> {
  const live: Live[] = [];
  // The sequence being prefilled: not live yet, but its blocks are ours to free if the
  // consumer stops here or the forward pass throws.
  let prefilling: SequenceKv | null = null;
  try {
    for (const [index, request] of requests.entries()) {
      const kv = new SequenceKv(pool);
      prefilling = kv;
      const entry: Live = {
        index,
        request,
        kv,
        sampler: new Sampler(request.sampling ?? {}, request.promptTokens),
        stops:
          (request.stopStrings?.length ?? 0) > 0
            ? new StopStringMatcher(request.stopStrings!)
            : null,
        stopTokens: new Set(request.stopTokenIds ?? []),
        last: -1,
        generated: 0,
      };
      // Prefill in chunks; the last chunk's logits give the first token.
      const prompt = request.promptTokens;
      let logits: Float32Array | null = null;
      for (let at = 0; at < prompt.length; at += model.maxTokensPerStep) {
        const chunk = prompt.slice(at, at + model.maxTokensPerStep);
        if (!kv.reserve(chunk.length)) break;
        logits = model.forward([{ tokens: chunk, kv }])[0]!;
      }
      if (logits === null || kv.numTokens < prompt.length) {
        kv.release();
        yield done(entry, 'kv_cache_full', '');
        continue;
      }
      const event = accept(entry, logits);
      if (event.finished === null) live.push(entry);
      else kv.release();
      prefilling = null;
      yield event.token;
      if (event.finished !== null) yield event.finished;
    }

    while (live.length > 0) {
      // Every live sequence gets room for one more position, or ends for lack of it.
      for (let i = live.length - 1; i >= 0; i--) {
        const entry = live[i]!;
        if (!entry.kv.reserve(1)) {
          live.splice(i, 1);
          entry.kv.release();
          const rest = finalText(entry);
          yield done(entry, rest.stopped ? 'stop' : 'kv_cache_full', rest.text);
        }
      }
      if (live.length === 0) break;
      // One forward call a step, or several when more sequences are live than a call takes.
      const logits: Float32Array[] = [];
      for (let at = 0; at < live.length; at += model.maxTokensPerStep) {
        const group = live.slice(at, at + model.maxTokensPerStep);
        logits.push(...model.forward(group.map((e) => ({ tokens: [e.last], kv: e.kv }))));
      }
      // Decide every sequence's fate before yielding, so nothing is lost if the consumer
      // stops part-way: what stays live is still released by the finally below.
      const events = live.map((entry, i) => accept(entry, logits[i]!));
      const still = live.filter((_, i) => events[i]!.finished === null);
      for (const [i, entry] of live.entries()) if (events[i]!.finished !== null) entry.kv.release();
      live.splice(0, live.length, ...still);
      for (const event of events) {
        yield event.token;
        if (event.finished !== null) yield event.finished;
      }
    }
  } finally {
    prefilling?.release();
    for (const entry of live) entry.kv.release();
  }
}

/** Samples a token for `entry` and decides whether the request has finished. */
function accept(
  entry: Live,
  logits: Float32Array,
): { token: GenerationEvent; finished: GenerationEvent | null } {
  const sampled = entry.sampler.sample(logits);
  entry.generated += 1;
  entry.last = sampled.token;
  const isStopToken = entry.stopTokens.has(sampled.token);
  let text = '';
  let stoppedByString = false;
  if (!isStopToken && entry.request.textStream !== undefined) {
    const piece = entry.request.textStream.push(sampled.token);
    if (entry.stops !== null) {
      const result = entry.stops.push(piece);
      text = result.text;
      stoppedByString = result.stopped;
    } else text = piece;
  }
  const token: GenerationEvent = {
    kind: 'token',
    request: entry.index,
    token: sampled.token,
    text,
    logprob: sampled.logprob,
    topLogprobs: sampled.topLogprobs,
  };
  if (stoppedByString) return { token, finished: done(entry, 'stop', '') };
  if (isStopToken) return { token, finished: done(entry, 'stop', finalText(entry).text) };
  if (entry.generated >= entry.request.maxTokens) {
    const rest = finalText(entry);
    return { token, finished: done(entry, rest.stopped ? 'stop' : 'length', rest.text) };
  }
  return { token, finished: null };
}

/**
 * What a request still holds back when it ends for any reason but a stop string: the
 * detokenizer's pending bytes, then the stop matcher's partial match. `stopped` when that
 * tail itself completes a stop string (the text then ends before it).
 */
function finalText(entry: Live): { text: string; stopped: boolean } {
  const rest = entry.request.textStream?.flush() ?? '';
  if (entry.stops === null) return { text: rest, stopped: false };
  const pushed = entry.stops.push(rest);
  return pushed.stopped
    ? { text: pushed.text, stopped: true }
    : { text: pushed.text + entry.stops.flush(), stopped: false };
}

function done(entry: Live, reason: FinishReason, text: string): GenerationEvent {
  return {
    kind: 'done',
    request: entry.index,
    reason,
    text,
    promptTokens: entry.request.promptTokens.length,
    completionTokens: entry.generated,
  };
}
