// The contract between the serving engine (continuous batching over the model, in its own
// thread) and whoever serves it (the worker's OpenAI routes, benches, tests). Types only:
// `serving-engine.ts` implements the step loop in process, `engine-host.ts` runs it on
// worker threads behind this same interface, and tests may drive a fake.
//
//   submit(request, onEvents) ─► waiting ─► running (tokens …) ─► done | error
//   cancel(id): gone at once, blocks freed; no further events for it
//   pause(id) / resume(id): backpressure from a slow reader; a paused sequence is not
//     scheduled and keeps its blocks (within the engine's budget for paused blocks: past it,
//     or when others need the memory, it is preempted and recomputed when resumed)

import type { FinishReason } from '../engine/generation.ts';
import type { SamplingParams } from '../sampling/sampler.ts';

export interface EngineRequest {
  /** Unique among the engine's live requests (the caller's id, e.g. `cmpl-…-0` for choice 0). */
  readonly requestId: string;
  readonly promptTokens: readonly number[];
  /** Output tokens at most (≥ 1). */
  readonly maxTokens: number;
  readonly sampling: SamplingParams;
  /** Token ids that end generation (not part of the text), e.g. EOS and `<|eot_id|>`. */
  readonly stopTokenIds: readonly number[];
  /** Strings that end generation; neither they nor what follows are returned. */
  readonly stopStrings: readonly string[];
  /** Lower runs first; default 0. First come, first served within a priority. */
  readonly priority?: number;
  /**
   * Requests submitted in a row with the same group (the choices of one prompt of an OpenAI
   * request, `n > 1`) go to the same engine thread, where the later ones take the prompt's
   * blocks from the first one's prefix cache instead of computing them again.
   */
  readonly group?: string;
}

export interface EngineTokenEvent {
  readonly kind: 'token';
  readonly requestId: string;
  readonly token: number;
  /** Text this token completes ('' while a character or a stop string is pending). */
  readonly text: string;
  /** null unless the request's sampling asked for log-probabilities. */
  readonly logprob: number | null;
  readonly topLogprobs: readonly { readonly token: number; readonly logprob: number }[];
}

export interface EngineDoneEvent {
  readonly kind: 'done';
  readonly requestId: string;
  readonly reason: FinishReason;
  /** Text held back until the end (a partial stop string that never completed, a tail). */
  readonly text: string;
  readonly promptTokens: number;
  readonly completionTokens: number;
  /**
   * Prompt tokens whose keys and values came from the prefix cache at its first admission
   * (a preempted request's recompute may find its own prompt there: it still computed it).
   */
  readonly cachedPromptTokens: number;
}

/** The request could not run or stopped for a reason that is not a finish (engine failure). */
export interface EngineErrorEvent {
  readonly kind: 'error';
  readonly requestId: string;
  readonly message: string;
}

export type EngineEvent = EngineTokenEvent | EngineDoneEvent | EngineErrorEvent;

/** Why `submit` refused a request, before it ever queued. */
export type SubmitRefusal =
  | { readonly ok: false; readonly reason: 'queue_full'; readonly message: string }
  | { readonly ok: false; readonly reason: 'invalid'; readonly message: string }
  | { readonly ok: false; readonly reason: 'too_long'; readonly message: string }
  | { readonly ok: false; readonly reason: 'closed'; readonly message: string };

export type SubmitResult = { readonly ok: true } | SubmitRefusal;

/** What the engine is doing now: what a router reads to pick a replica. */
export interface EngineLoad {
  /** Sequences in the running batch. */
  readonly running: number;
  /** Requests waiting to be admitted to the batch. */
  readonly waiting: number;
  /** Sequences paused for slow readers (they hold KV blocks but use no compute). */
  readonly paused: number;
  readonly kvBlocksUsed: number;
  readonly kvBlocksTotal: number;
  /** kvBlocksUsed ÷ kvBlocksTotal (0–1). Evictable prefix-cache blocks count as free. */
  readonly kvUtilization: number;
}

/** Counters since the engine started, for metrics. */
export interface EngineStats extends EngineLoad {
  readonly promptTokensTotal: number;
  readonly generationTokensTotal: number;
  /** Prompt tokens looked up in the prefix cache, and those found there. */
  readonly prefixQueriedTokensTotal: number;
  readonly prefixHitTokensTotal: number;
  readonly preemptionsTotal: number;
  readonly stepsTotal: number;
  /** Sequences preempted or ended because they stayed paused past the engine's limits. */
  readonly pausedEvictionsTotal: number;
}

export interface EngineOptions {
  /** Bytes for the KV cache (every layer, keys and values). */
  readonly kvCacheBytes: number;
  /** Token positions per KV block. */
  readonly blockSize: number;
  /** Sequences in the running batch at once. */
  readonly maxNumSeqs: number;
  /** Tokens computed in one step, all sequences together (chunked prefill below it). */
  readonly maxNumBatchedTokens: number;
  /** Requests waiting (not yet running) at most; past it `submit` answers queue_full. */
  readonly maxWaiting: number;
  /** Reuse the keys and values of shared prompt prefixes (default on). */
  readonly prefixCaching: boolean;
  /** Engine threads, each with a model replica and a KV cache of kvCacheBytes. */
  readonly threads: number;
  /**
   * 'continuous' (iteration-level: requests join the running batch at the next step) or
   * 'static' (a batch is formed from the waiting queue only when nothing runs, and runs to
   * completion): the second exists to measure the first against.
   */
  readonly batching: 'continuous' | 'static';
  /** Blocks paused sequences may hold together before the oldest paused ones are preempted. */
  readonly maxPausedBlocks: number;
}

export interface LlmEngine {
  /** Context length of the model (prompt + output positions). */
  readonly contextLength: number;
  /**
   * Queues a request; its events arrive through `onEvents` (one call a step at most, in
   * order), ending with one `done` or `error` event — unless it is cancelled first.
   */
  submit(request: EngineRequest, onEvents: (events: readonly EngineEvent[]) => void): SubmitResult;
  /** Drops a request in any state and frees its blocks; no event follows. Unknown: no-op. */
  cancel(requestId: string): void;
  pause(requestId: string): void;
  resume(requestId: string): void;
  /** The latest load, synchronously (a thread's host answers from its last report). */
  load(): EngineLoad;
  stats(): Promise<EngineStats>;
  close(): Promise<void>;
}
