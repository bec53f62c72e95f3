// The serving engine's step loop, in process and synchronous: continuous batching over the
// scheduler (engine/scheduler.ts), the model, the paged KV cache with prefix caching, the
// sampler and the detokenizer. engine-host.ts runs it on worker threads behind LlmEngine;
// tests and benches drive it directly.
//
//   add(request) ─► scheduler.add + allocator.track (prompt + output tokens, kept for life)
//   step():
//     plan = scheduler.schedule()          who computes how many tokens (prefill chunk/decode)
//     model.forward(…) over the plan's chunks, ≤ model.maxTokensPerStep tokens a call
//     sample where the chunk reaches the end (per-sequence seeded Sampler, log-probabilities)
//     → text (decodeStream) → stop token | stop string | max tokens
//     allocator.registerFull: newly full blocks into the prefix cache
//     scheduler.onStepDone(results) ─► finished sequences' blocks freed
//   ◄─ the step's events (EngineEvent), each request's in order
//
// A preempted sequence keeps its output tokens, its sampler (seeded random state) and its
// text state; it recomputes prompt + output and continues where it was, so its outputs are
// those of a run without preemption.

import { BlockPoolAllocator } from '../engine/block-pool-allocator.ts';
import type { FinishReason, TextStream } from '../engine/generation.ts';
import { Scheduler } from '../engine/scheduler.ts';
import type { ScheduledSeq, StepResult } from '../engine/step-plan.ts';
import { PrefixCache } from '../kv-cache/prefix-cache.ts';
import type { LlamaModel, SequenceStep } from '../model/llama-model.ts';
import { Sampler } from '../sampling/sampler.ts';
import type { Tokenizer } from '../tokenizer/tokenizer.ts';
import { checkEngineRequest } from './check-engine-request.ts';
import type {
  EngineEvent,
  EngineLoad,
  EngineOptions,
  EngineRequest,
  EngineStats,
  SubmitResult,
} from './engine-api.ts';
import { OutputText } from './output-text.ts';

/** What the in-process engine takes from EngineOptions (the KV cache is the model's pool). */
export type ServingEngineOptions = Pick<
  EngineOptions,
  | 'maxNumSeqs'
  | 'maxNumBatchedTokens'
  | 'maxWaiting'
  | 'prefixCaching'
  | 'batching'
  | 'maxPausedBlocks'
>;

export interface StepOutcome {
  /** The step's events, each request's in order. */
  readonly events: readonly EngineEvent[];
  /** Tokens the model computed this step (0: nothing could run). */
  readonly numScheduledTokens: number;
}

interface Sequence {
  readonly request: EngineRequest;
  /** Prompt + output so far (the allocator reads it for prefix hashes). */
  readonly tokens: number[];
  readonly sampler: Sampler;
  readonly text: OutputText;
  generated: number;
  /**
   * Prompt tokens found in the prefix cache at the first admission (null before it). A
   * preempted sequence's later admissions may find its own prompt there, but it computed it.
   */
  cachedPromptTokens: number | null;
}

type Counters = Omit<EngineStats, keyof EngineLoad>;

export class ServingEngine {
  readonly contextLength: number;
  private readonly scheduler: Scheduler;
  private readonly allocator: BlockPoolAllocator;
  private readonly seqs = new Map<string, Sequence>();
  private readonly counters: { -readonly [K in keyof Counters]: number } = {
    promptTokensTotal: 0,
    generationTokensTotal: 0,
    prefixQueriedTokensTotal: 0,
    prefixHitTokensTotal: 0,
    preemptionsTotal: 0,
    stepsTotal: 0,
    pausedEvictionsTotal: 0,
  };

  constructor(
    private readonly model: LlamaModel,
    /** Text and stop strings need it; without it token events carry '' as text. */
    private readonly tokenizer: Tokenizer | null,
    readonly options: ServingEngineOptions,
  ) {
    const pool = model.pool;
    if (pool === null) throw new Error('the serving engine needs a model with its KV cache');
    this.contextLength = model.maxPositions;
    this.allocator = new BlockPoolAllocator(
      pool,
      options.prefixCaching ? new PrefixCache(pool) : null,
    );
    this.scheduler = new Scheduler(this.allocator, {
      maxNumTokensPerStep: options.maxNumBatchedTokens,
      maxNumSeqs: options.maxNumSeqs,
      maxPausedBlocks: options.maxPausedBlocks,
      batching: options.batching,
    });
  }

  /** Queues a request, or says why not (synchronously; nothing is queued then). */
  add(request: EngineRequest): SubmitResult {
    const problem = checkEngineRequest(request, {
      contextLength: this.contextLength,
      vocabSize: this.model.dims.vocabSize,
      hasTokenizer: this.tokenizer !== null,
    });
    if (problem !== null) return problem;
    if (this.seqs.has(request.requestId))
      return {
        ok: false,
        reason: 'invalid',
        message: `request ${request.requestId} is already running`,
      };
    if (this.scheduler.counts().waiting >= this.options.maxWaiting)
      return {
        ok: false,
        reason: 'queue_full',
        message: `${this.options.maxWaiting} requests are already waiting`,
      };
    const added = this.scheduler.add({
      seqId: request.requestId,
      numPromptTokens: request.promptTokens.length,
      maxTokens: request.maxTokens,
      ...(request.priority === undefined ? {} : { priority: request.priority }),
    });
    if (!added.ok)
      return {
        ok: false,
        reason: added.reason === 'too_long' ? 'too_long' : 'invalid',
        message: added.message,
      };
    const stream: TextStream | null =
      this.tokenizer?.decodeStream({ prefixIds: request.promptTokens }) ?? null;
    const seq: Sequence = {
      request,
      tokens: [...request.promptTokens],
      sampler: new Sampler(request.sampling, request.promptTokens),
      text: new OutputText(stream, request.stopTokenIds, request.stopStrings),
      generated: 0,
      cachedPromptTokens: null,
    };
    this.seqs.set(request.requestId, seq);
    this.allocator.track(request.requestId, seq.tokens);
    this.counters.promptTokensTotal += request.promptTokens.length;
    return { ok: true };
  }

  /** Drops a request in any state; its blocks are free when this returns. Unknown: no-op. */
  cancel(requestId: string): void {
    if (!this.seqs.delete(requestId)) return;
    this.scheduler.cancel(requestId);
    this.allocator.untrack(requestId);
  }

  /**
   * Stops scheduling a request (it keeps its blocks within maxPausedBlocks). The budget is
   * enforced here, not only at the next step: an engine whose requests are all paused does
   * not step, and would hold the blocks over budget until other work arrived.
   */
  pause(requestId: string): void {
    this.scheduler.pause(requestId);
    const evicted = this.scheduler.evictPaused().length;
    this.counters.preemptionsTotal += evicted;
    this.counters.pausedEvictionsTotal += evicted;
  }

  resume(requestId: string): void {
    this.scheduler.resume(requestId);
  }

  /** Whether a step would do anything: a sequence that is neither paused nor finished. */
  hasWork(): boolean {
    const counts = this.scheduler.counts();
    return counts.running + counts.waiting > 0;
  }

  /** Live requests (any state, paused ones included). */
  get numRequests(): number {
    return this.seqs.size;
  }

  /** A live request's scheduling state and the KV blocks it holds; null when not live. */
  inspect(requestId: string): {
    readonly state: 'waiting' | 'running';
    readonly paused: boolean;
    readonly numComputed: number;
    readonly numOutputTokens: number;
    readonly numBlocks: number;
  } | null {
    const state = this.scheduler.inspect(requestId);
    if (state === null) return null;
    return { ...state, numBlocks: this.allocator.kvOf(requestId)?.blocks.length ?? 0 };
  }

  /**
   * KV token slots the live sequences' blocks hold, and how many hold a position (for the
   * memory-waste measurement: (reserved − filled) ÷ reserved). Blocks kept only by the
   * prefix cache (evictable, counted free) are not included.
   */
  kvSlotUsage(): { readonly reservedSlots: number; readonly filledSlots: number } {
    return this.allocator.slotUsage();
  }

  load(): EngineLoad {
    const pool = this.allocator.pool.stats();
    const counts = this.scheduler.counts();
    return {
      ...counts,
      kvBlocksUsed: pool.usedBlocks,
      kvBlocksTotal: pool.totalBlocks,
      kvUtilization: pool.utilization,
    };
  }

  stats(): EngineStats {
    return { ...this.load(), ...this.counters };
  }

  /** One engine step: schedule, run the model, sample; the step's events. */
  step(): StepOutcome {
    const plan = this.scheduler.schedule();
    const events: EngineEvent[] = [];
    this.counters.stepsTotal += 1;
    this.counters.preemptionsTotal += plan.preempted.length;
    this.counters.pausedEvictionsTotal += plan.pausedEvictions.length;
    for (const admitted of plan.admitted) {
      const seq = this.seqs.get(admitted.seqId)!;
      seq.cachedPromptTokens ??= Math.min(
        admitted.numCachedTokens,
        seq.request.promptTokens.length,
      );
      // Looked up at every admission: a preempted sequence's prompt + output so far.
      if (this.options.prefixCaching) {
        this.counters.prefixQueriedTokensTotal += admitted.numTokens;
        this.counters.prefixHitTokensTotal += admitted.numCachedTokens;
      }
    }
    for (const ended of plan.finished) {
      const seq = this.seqs.get(ended.seqId)!;
      const rest = seq.text.finish();
      events.push(this.done(seq, rest.stopped ? 'stop' : ended.reason, rest.text));
      this.forget(ended.seqId);
    }

    let logits: Map<string, Float32Array>;
    try {
      logits = this.runModel(plan.scheduled);
    } catch (error) {
      // The model failed (a bug or the machine): the step's sequences cannot go on.
      for (const entry of plan.scheduled) {
        events.push({
          kind: 'error',
          requestId: entry.seqId,
          message: `the engine failed: ${(error as Error).message}`,
        });
        this.cancel(entry.seqId);
      }
      this.scheduler.onStepDone();
      return { events, numScheduledTokens: 0 };
    }

    const results: StepResult[] = [];
    for (const entry of plan.scheduled) {
      const seq = this.seqs.get(entry.seqId)!;
      this.allocator.registerFull(entry.seqId);
      if (!entry.samples) continue;
      const sampled = seq.sampler.sample(logits.get(entry.seqId)!);
      seq.tokens.push(sampled.token);
      seq.generated += 1;
      this.counters.generationTokensTotal += 1;
      const verdict = seq.text.push(sampled.token);
      events.push({
        kind: 'token',
        requestId: entry.seqId,
        token: sampled.token,
        text: verdict.text,
        logprob: sampled.logprob,
        topLogprobs: sampled.topLogprobs,
      });
      let end: { reason: FinishReason; text: string } | null = null;
      if (verdict.kind === 'stop') end = { reason: 'stop', text: verdict.tail };
      else if (seq.generated >= seq.request.maxTokens) {
        const rest = seq.text.finish();
        end = { reason: rest.stopped ? 'stop' : 'length', text: rest.text };
      }
      if (end !== null) {
        events.push(this.done(seq, end.reason, end.text));
        results.push({ seqId: entry.seqId, stopped: true });
      }
    }
    for (const ended of this.scheduler.onStepDone(results)) this.forget(ended.seqId);
    return { events, numScheduledTokens: plan.numScheduledTokens };
  }

  /**
   * Runs the plan's chunks through the model, as few forward calls as maxTokensPerStep
   * allows (a chunk longer than what is left of a call continues in the next one); the
   * logits of each sequence's last computed position.
   */
  private runModel(scheduled: readonly ScheduledSeq[]): Map<string, Float32Array> {
    const capacity = this.model.maxTokensPerStep;
    const logits = new Map<string, Float32Array>();
    let call: SequenceStep[] = [];
    let callIds: string[] = [];
    let used = 0;
    const flush = (): void => {
      if (call.length === 0) return;
      const out = this.model.forward(call);
      out.forEach((row, i) => logits.set(callIds[i]!, row));
      call = [];
      callIds = [];
      used = 0;
    };
    for (const entry of scheduled) {
      const kv = this.allocator.kvOf(entry.seqId);
      const seq = this.seqs.get(entry.seqId);
      if (kv === null || seq === undefined || kv.numTokens !== entry.startPosition)
        throw new Error(`sequence ${entry.seqId} is not where the plan has it`);
      let at = entry.startPosition;
      const end = at + entry.numTokens;
      while (at < end) {
        if (used === capacity) flush();
        const n = Math.min(end - at, capacity - used);
        call.push({ tokens: seq.tokens.slice(at, at + n), kv });
        callIds.push(entry.seqId);
        used += n;
        at += n;
      }
    }
    flush();
    return logits;
  }

  private done(seq: Sequence, reason: FinishReason, text: string): EngineEvent {
    return {
      kind: 'done',
      requestId: seq.request.requestId,
      reason,
      text,
      promptTokens: seq.request.promptTokens.length,
      completionTokens: seq.generated,
      cachedPromptTokens: seq.cachedPromptTokens ?? 0,
    };
  }

  private forget(requestId: string): void {
    this.seqs.delete(requestId);
    this.allocator.untrack(requestId);
  }
}
