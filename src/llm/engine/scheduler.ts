// The continuous-batching scheduler (vLLM-style), a pure policy over token counts: it never
// sees token ids or the model, only how many positions each sequence has computed and how
// many it has, and KV memory through `KvAllocator`. The engine loop calls
//
//   schedule() ─► plan: for each scheduled sequence how many tokens it computes this step
//   (run the model on the plan, sample where `samples` is true)
//   onStepDone(results) ─► tokens appended, finished sequences removed and their blocks freed
//
// Every sequence is "tokens to compute" (vLLM v1): numTokens = prompt + output so far,
// numComputed = positions in the KV cache. A prefill computes a chunk of numTokens −
// numComputed; a decode computes the one token sampled last step. When a step's chunk reaches
// numTokens, the model samples a new token (`samples`).
//
//   waiting (by priority, then arrival) ──admit──▶ running (same order) ──finish/cancel──▶ gone
//        ▲                                             │
//        └─────────── preempted: blocks freed, numComputed = 0 (recompute) ◀┘
//
// Policy, in the order schedule() applies it:
// 1. Decodes first. Every running sequence whose prompt is computed gets its one token before
//    any prefill chunk is planned. vLLM v1 puts both under one budget in running order; we
//    keep the one budget but order decodes ahead, so a long prompt (even an older one) never
//    delays others' next token: a decode is one token and its delay is what users see as
//    inter-token latency, while a prefill chunk's delay only adds to a time-to-first-token
//    already being paid.
// 2. Running prefills (chunked, recomputes after preemption) with what is left of the budget.
// 3. Admission from the waiting queue (only in a step that preempted nothing), head first, while a sequence slot and budget remain
//    and the head's first chunk fits in free blocks. Admission never preempts, and a head that
//    does not fit stops admission (strict FCFS: a big request is not starved by small ones).
// Preemption: when a running sequence cannot get blocks for its tokens, the newest running
// sequence (last in priority-then-arrival order) is preempted, even one already planned this
// step (its plan entry is withdrawn and its tokens go back to the budget), until the append
// fits; when the one asking is itself the newest, it is preempted. A sequence alone in the
// running queue that still does not fit can never fit: it ends with 'kv_cache_full'.
// A preempted sequence keeps its output and goes back to the waiting queue at its place by
// (priority, arrival) — ahead of everything that arrived after it, i.e. the front for its
// priority — and recomputes prompt + output before it samples again.
// Priority: lower number first; FCFS within a priority. Rejection (a prompt larger than the
// whole KV budget), allocation failure and unknown ids are values, never exceptions.

import type { KvAllocator } from './kv-allocator.ts';
import type { FinishedSeq, ScheduledSeq, StepPlan, StepResult } from './step-plan.ts';

export interface SchedulerOptions {
  /** Tokens all scheduled sequences compute together in one step (≥ 1). */
  readonly maxNumTokensPerStep: number;
  /** Sequences in the running batch at once (≥ 1). */
  readonly maxNumSeqs: number;
}

export interface SchedulerRequest {
  readonly seqId: string;
  readonly numPromptTokens: number;
  /** Output tokens at most; reaching it ends the sequence with 'length'. */
  readonly maxTokens: number;
  /** Lower runs first; default 0. */
  readonly priority?: number;
}

export type AddResult =
  | { readonly ok: true }
  | {
      readonly ok: false;
      readonly reason: 'invalid' | 'duplicate' | 'too_long';
      readonly message: string;
    };

export type SeqState = 'waiting' | 'running';

interface Seq {
  readonly seqId: string;
  readonly priority: number;
  /** Arrival order, for FCFS within a priority. */
  readonly arrival: number;
  readonly numPromptTokens: number;
  readonly maxTokens: number;
  numOutputTokens: number;
  /** Positions whose keys and values are in the cache. */
  numComputed: number;
  state: SeqState;
}

/** Priority, then arrival: negative when `a` goes first. */
function order(a: Seq, b: Seq): number {
  return a.priority - b.priority || a.arrival - b.arrival;
}

/** Inserts `seq` into `queue` (kept sorted by `order`) at its place. */
function insertSorted(queue: Seq[], seq: Seq): void {
  let i = queue.length;
  while (i > 0 && order(queue[i - 1]!, seq) > 0) i--;
  queue.splice(i, 0, seq);
}

const numTokensOf = (seq: Seq): number => seq.numPromptTokens + seq.numOutputTokens;
const isDecode = (seq: Seq): boolean =>
  seq.numOutputTokens > 0 && seq.numComputed === numTokensOf(seq) - 1;

export class Scheduler {
  private readonly waiting: Seq[] = [];
  private readonly running: Seq[] = [];
  private readonly byId = new Map<string, Seq>();
  private arrivals = 0;
  /** The last plan's entries, applied by onStepDone. */
  private inFlight: ScheduledSeq[] = [];
  /** Between schedule() and onStepDone(): the allocator is ahead of numComputed. */
  private stepOpen = false;

  constructor(
    private readonly kv: KvAllocator,
    readonly options: SchedulerOptions,
  ) {
    for (const [name, value] of Object.entries(options))
      if (!Number.isInteger(value) || value < 1)
        throw new RangeError(`scheduler ${name} must be a whole number ≥ 1, not ${value}`);
  }

  /** Queues a request (waiting); a value says why it was not queued. */
  add(request: SchedulerRequest): AddResult {
    const { seqId, numPromptTokens, maxTokens, priority = 0 } = request;
    if (this.byId.has(seqId))
      return { ok: false, reason: 'duplicate', message: `sequence ${seqId} is already queued` };
    if (!Number.isInteger(numPromptTokens) || numPromptTokens < 1)
      return {
        ok: false,
        reason: 'invalid',
        message: `the prompt must have ≥ 1 token, not ${numPromptTokens}`,
      };
    if (!Number.isInteger(maxTokens) || maxTokens < 1)
      return {
        ok: false,
        reason: 'invalid',
        message: `max tokens must be a whole number ≥ 1, not ${maxTokens}`,
      };
    if (!Number.isFinite(priority))
      return {
        ok: false,
        reason: 'invalid',
        message: `priority must be a number, not ${priority}`,
      };
    // The whole prompt must be in the cache before the first token is sampled.
    const capacityTokens = this.kv.numTotalBlocks * this.kv.blockSize;
    if (numPromptTokens > capacityTokens) {
      return {
        ok: false,
        reason: 'too_long',
        message: `the prompt's ${numPromptTokens} tokens exceed the KV cache's ${capacityTokens} positions`,
      };
    }
    const seq: Seq = {
      seqId,
      priority,
      arrival: this.arrivals++,
      numPromptTokens,
      maxTokens,
      numOutputTokens: 0,
      numComputed: 0,
      state: 'waiting',
    };
    this.byId.set(seqId, seq);
    insertSorted(this.waiting, seq);
    return { ok: true };
  }

  /** Drops a sequence in any state and frees its blocks now; false when it is not known. */
  cancel(seqId: string): boolean {
    const seq = this.byId.get(seqId);
    if (seq === undefined) return false;
    this.remove(seq);
    return true;
  }

  /** The next step's plan; call onStepDone with the step's results before the next one. */
  schedule(): StepPlan {
    // A second plan before the first is applied would count its chunks twice: a bug in the
    // loop, not an outcome to handle.
    if (this.stepOpen) throw new Error('schedule() again before onStepDone() of the last step');
    this.stepOpen = true;
    const scheduled = new Map<Seq, ScheduledSeq>();
    const preempted: string[] = [];
    const finished: FinishedSeq[] = [];
    let budget = this.options.maxNumTokensPerStep;

    const preempt = (victim: Seq): void => {
      const entry = scheduled.get(victim);
      if (entry !== undefined) {
        budget += entry.numTokens;
        scheduled.delete(victim);
      }
      this.kv.free(victim.seqId);
      this.running.splice(this.running.indexOf(victim), 1);
      victim.numComputed = 0;
      victim.state = 'waiting';
      insertSorted(this.waiting, victim);
      preempted.push(victim.seqId);
    };

    // Plans `seq`'s next chunk, preempting the newest running sequences for blocks.
    const planRunning = (seq: Seq): void => {
      const numTokens = Math.min(numTokensOf(seq) - seq.numComputed, budget);
      if (numTokens < 1) return;
      while (!this.kv.append(seq.seqId, numTokens)) {
        const newest = this.running[this.running.length - 1]!;
        if (newest !== seq) {
          preempt(newest);
          continue;
        }
        if (this.running.length > 1) preempt(seq);
        else {
          finished.push({
            seqId: seq.seqId,
            reason: 'kv_cache_full',
            numOutputTokens: seq.numOutputTokens,
          });
          this.remove(seq);
        }
        return;
      }
      budget -= numTokens;
      scheduled.set(seq, this.entry(seq, numTokens));
    };

    for (const seq of this.running.filter(isDecode)) if (seq.state === 'running') planRunning(seq);
    for (const seq of this.running.filter((s) => !isDecode(s)))
      if (seq.state === 'running' && !scheduled.has(seq)) planRunning(seq);

    // No admission in a step that preempted: what was just freed would go to a newcomer that
    // the next append may preempt again (vLLM v1 does the same).
    while (
      preempted.length === 0 &&
      budget > 0 &&
      this.running.length < this.options.maxNumSeqs &&
      this.waiting.length > 0
    ) {
      const head = this.waiting[0]!;
      const numTokens = Math.min(numTokensOf(head), budget);
      if (!this.kv.append(head.seqId, numTokens)) break;
      this.waiting.shift();
      head.state = 'running';
      insertSorted(this.running, head);
      budget -= numTokens;
      scheduled.set(head, this.entry(head, numTokens));
    }

    // In running order, so a step's batch reads oldest first.
    this.inFlight = this.running.flatMap((seq) => scheduled.get(seq) ?? []);
    return {
      scheduled: this.inFlight,
      numScheduledTokens: this.options.maxNumTokensPerStep - budget,
      preempted,
      finished,
    };
  }

  /**
   * Applies the step planned by the last schedule(): positions computed, a token appended to
   * each sequence that sampled, finished ones removed with their blocks freed. `results` need
   * only name sequences that stopped; ones cancelled since the plan are ignored.
   */
  onStepDone(results: readonly StepResult[] = []): FinishedSeq[] {
    const stopped = new Set(results.filter((r) => r.stopped === true).map((r) => r.seqId));
    const finished: FinishedSeq[] = [];
    for (const entry of this.inFlight) {
      const seq = this.byId.get(entry.seqId);
      if (seq === undefined || seq.state !== 'running') continue;
      seq.numComputed += entry.numTokens;
      if (!entry.samples) continue;
      seq.numOutputTokens += 1;
      const reason = stopped.has(seq.seqId)
        ? 'stop'
        : seq.numOutputTokens >= seq.maxTokens
          ? 'length'
          : null;
      if (reason !== null) {
        finished.push({ seqId: seq.seqId, reason, numOutputTokens: seq.numOutputTokens });
        this.remove(seq);
      }
    }
    this.inFlight = [];
    this.stepOpen = false;
    return finished;
  }

  get numWaiting(): number {
    return this.waiting.length;
  }

  get numRunning(): number {
    return this.running.length;
  }

  /** A live sequence's state and counts; null once it finished, was cancelled, or is unknown. */
  inspect(seqId: string): {
    readonly state: SeqState;
    readonly numComputed: number;
    readonly numOutputTokens: number;
  } | null {
    const seq = this.byId.get(seqId);
    return seq === undefined
      ? null
      : { state: seq.state, numComputed: seq.numComputed, numOutputTokens: seq.numOutputTokens };
  }

  private entry(seq: Seq, numTokens: number): ScheduledSeq {
    return {
      seqId: seq.seqId,
      startPosition: seq.numComputed,
      numTokens,
      phase: isDecode(seq) ? 'decode' : 'prefill',
      samples: seq.numComputed + numTokens === numTokensOf(seq),
    };
  }

  private remove(seq: Seq): void {
    const queue = seq.state === 'running' ? this.running : this.waiting;
    queue.splice(queue.indexOf(seq), 1);
    this.byId.delete(seq.seqId);
    this.kv.free(seq.seqId);
  }
}
