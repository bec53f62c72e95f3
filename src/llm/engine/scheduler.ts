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
//    and the head's first chunk fits in free blocks. Admission never preempts a running
//    sequence (paused ones give way: below), and a head that does not fit stops admission
//    (strict FCFS: a big request is not starved by small ones); one that does not fit with
//    nothing running never will (its cached prefix and first chunk exceed the whole cache)
//    and ends with 'kv_cache_full'.
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
//
// Prefix caching: at every admission (the first, and after a preemption, for prompt + output
// so far) the allocator may already hold the sequence's first k positions (`kv.admit`, a
// prefix-cache hit): it then starts with numComputed = k and computes only the rest. A head
// whose next block past its hit a running, unpaused sequence is computing (the same tokens:
// `kv.computingShared`, e.g. the n choices of one request) is skipped until that block is
// cached, so the prompt is computed once, not once per choice in the same step (continuous
// batching only; the skipped head does not hold the queue behind it).
//
// Pause (backpressure from a slow reader): a paused sequence is never scheduled nor admitted;
// a running one keeps its blocks. Paused sequences give way first: out of blocks (for a
// running sequence or the waiting head), the oldest-paused running sequence is preempted
// before any running one; and when paused sequences hold more than maxPausedBlocks blocks
// together, the oldest-paused are preempted until they do not (pausedEvictions; evictPaused()
// does it at once, between steps). A paused sequence does not count against maxNumSeqs
// (a slow reader must not hold a batch slot); when resumed ones make the unpaused running
// sequences more than maxNumSeqs, a step plans the first maxNumSeqs of them in running order.
// Resumed, it decodes again, or (preempted meanwhile) is admitted again at its place.
//
// Batching 'static' (only to measure continuous batching against): admission happens only
// when nothing is running, and then takes up to maxNumSeqs sequences at once, their prefills
// chunked under the budget over the next steps — a batch formed once and run to completion.

import type { KvAllocator } from './kv-allocator.ts';
import type { AdmittedSeq, FinishedSeq, ScheduledSeq, StepPlan, StepResult } from './step-plan.ts';

export interface SchedulerOptions {
  /** Tokens all scheduled sequences compute together in one step (≥ 1). */
  readonly maxNumTokensPerStep: number;
  /** Sequences in the running batch at once (≥ 1). */
  readonly maxNumSeqs: number;
  /** Blocks paused sequences may hold together (≥ 0); default unbounded. */
  readonly maxPausedBlocks?: number;
  /** 'continuous' (default) or 'static': see the header. */
  readonly batching?: 'continuous' | 'static';
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
  paused: boolean;
  /** When it was paused (a counter), for oldest-paused-first eviction. */
  pausedAt: number;
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
  private pauses = 0;
  /** The last plan's entries, applied by onStepDone. */
  private inFlight: ScheduledSeq[] = [];
  /** Between schedule() and onStepDone(): the allocator is ahead of numComputed. */
  private stepOpen = false;

  constructor(
    private readonly kv: KvAllocator,
    readonly options: SchedulerOptions,
  ) {
    for (const name of ['maxNumTokensPerStep', 'maxNumSeqs'] as const) {
      const value = options[name];
      if (!Number.isInteger(value) || value < 1)
        throw new RangeError(`scheduler ${name} must be a whole number ≥ 1, not ${value}`);
    }
    const { maxPausedBlocks } = options;
    if (
      maxPausedBlocks !== undefined &&
      !(Number.isInteger(maxPausedBlocks) && maxPausedBlocks >= 0)
    )
      throw new RangeError(
        `scheduler maxPausedBlocks must be a whole number ≥ 0, not ${maxPausedBlocks}`,
      );
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
      paused: false,
      pausedAt: 0,
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

  /**
   * Stops scheduling a sequence (it keeps its blocks while running, within the paused-block
   * budget); false when it is not known. Pausing a paused sequence changes nothing.
   */
  pause(seqId: string): boolean {
    const seq = this.byId.get(seqId);
    if (seq === undefined) return false;
    if (!seq.paused) {
      seq.paused = true;
      seq.pausedAt = this.pauses++;
    }
    return true;
  }

  /**
   * Enforces the paused-block budget now, between steps: the oldest-paused running sequences
   * are preempted until the paused ones hold at most maxPausedBlocks blocks; their ids. Call
   * it after pause() when no step may follow soon (an engine whose sequences are all paused
   * does not step); schedule() does it too. Inside a step (after schedule(), before
   * onStepDone()) it does nothing: the next schedule() will.
   */
  evictPaused(): string[] {
    if (this.stepOpen) return [];
    const evicted: string[] = [];
    const maxPausedBlocks = this.options.maxPausedBlocks ?? Number.POSITIVE_INFINITY;
    while (this.numPausedBlocks > maxPausedBlocks) {
      const victim = this.oldestPausedRunning()!;
      this.preempt(victim);
      evicted.push(victim.seqId);
    }
    return evicted;
  }

  /** Lets a paused sequence run again; false when it is not known. */
  resume(seqId: string): boolean {
    const seq = this.byId.get(seqId);
    if (seq === undefined) return false;
    seq.paused = false;
    return true;
  }

  /** The next step's plan; call onStepDone with the step's results before the next one. */
  schedule(): StepPlan {
    // A second plan before the first is applied would count its chunks twice: a bug in the
    // loop, not an outcome to handle.
    if (this.stepOpen) throw new Error('schedule() again before onStepDone() of the last step');
    const scheduled = new Map<Seq, ScheduledSeq>();
    const preempted: string[] = [];
    const pausedEvictions: string[] = [];
    const admitted: AdmittedSeq[] = [];
    const finished: FinishedSeq[] = [];
    let budget = this.options.maxNumTokensPerStep;
    /** Whether a sequence was preempted for another's blocks (then no admission). */
    let preemptedForSpace = false;

    const preempt = (victim: Seq): void => {
      const entry = scheduled.get(victim);
      if (entry !== undefined) {
        budget += entry.numTokens;
        scheduled.delete(victim);
      }
      this.preempt(victim);
      preempted.push(victim.seqId);
    };

    // Paused sequences past their budget of blocks give them back, oldest-paused first (in
    // the engine usually done already when they were paused: evictPaused()).
    for (const seqId of this.evictPaused()) {
      preempted.push(seqId);
      pausedEvictions.push(seqId);
    }
    this.stepOpen = true;
    // After those evictions: a static batch emptied by them takes the next batch this step (a
    // step that schedules nothing and says nothing lets an engine thread wait for a message).
    const batchWasEmpty = this.running.length === 0;

    // Plans `seq`'s next chunk, preempting paused sequences first, then the newest running
    // ones, for blocks.
    const planRunning = (seq: Seq): void => {
      const numTokens = Math.min(numTokensOf(seq) - seq.numComputed, budget);
      // Resumed sequences may leave more unpaused running than a batch takes: the rest wait.
      if (numTokens < 1 || scheduled.size >= this.options.maxNumSeqs) return;
      while (!this.kv.append(seq.seqId, numTokens)) {
        preemptedForSpace = true;
        const paused = this.oldestPausedRunning();
        if (paused !== undefined) {
          preempt(paused);
          pausedEvictions.push(paused.seqId);
          continue;
        }
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

    const live = (s: Seq): boolean => s.state === 'running' && !s.paused;
    for (const seq of this.running.filter(isDecode)) if (live(seq)) planRunning(seq);
    for (const seq of this.running.filter((s) => !isDecode(s)))
      if (live(seq) && !scheduled.has(seq)) planRunning(seq);

    // No admission in a step that preempted for space: what was just freed would go to a
    // newcomer that the next append may preempt again (vLLM v1 does the same). Static
    // batching admits only into an empty batch, and then fills it whatever the budget.
    const isStatic = this.options.batching === 'static';
    const admitting = !preemptedForSpace && (!isStatic || batchWasEmpty);
    let index = 0;
    while (
      admitting &&
      (isStatic || budget > 0) &&
      this.numUnpausedRunning < this.options.maxNumSeqs &&
      index < this.waiting.length
    ) {
      const head = this.waiting[index]!;
      if (head.paused) {
        index += 1;
        continue;
      }
      const numCached = this.kv.admit?.(head.seqId, numTokensOf(head)) ?? 0;
      if (
        !Number.isInteger(numCached) ||
        numCached < 0 ||
        numCached > numTokensOf(head) - 1 ||
        numCached % this.kv.blockSize !== 0
      )
        throw new Error(`the allocator admitted ${head.seqId} with ${numCached} cached positions`);
      // Blocks of its prompt that a running sequence is computing now (the n choices of one
      // request, submitted together): it waits until they are cached rather than compute
      // them too. Static batching forms its batch at once, so it does not wait.
      if (
        !isStatic &&
        this.kv.computingShared?.(
          head.seqId,
          numTokensOf(head),
          numCached,
          this.running.filter((s) => !s.paused).map((s) => s.seqId),
        ) === true
      ) {
        this.kv.free(head.seqId);
        index += 1;
        continue;
      }
      const numTokens = Math.min(numTokensOf(head) - numCached, budget);
      if (numTokens > 0 && !this.kv.append(head.seqId, numTokens)) {
        this.kv.free(head.seqId);
        // Paused sequences give their blocks to the head before it waits for running ones.
        const paused = this.oldestPausedRunning();
        if (paused !== undefined) {
          preempt(paused);
          pausedEvictions.push(paused.seqId);
          index = this.waiting.indexOf(head); // the victim may have gone in ahead of it
          continue;
        }
        // Nothing holds blocks but the prefix cache (evictable): the head can never fit.
        if (this.running.length === 0) {
          finished.push({
            seqId: head.seqId,
            reason: 'kv_cache_full',
            numOutputTokens: head.numOutputTokens,
          });
          this.remove(head);
          continue;
        }
        break;
      }
      this.waiting.splice(index, 1);
      head.numComputed = numCached;
      head.state = 'running';
      insertSorted(this.running, head);
      budget -= numTokens;
      if (numTokens > 0) scheduled.set(head, this.entry(head, numTokens));
      admitted.push({
        seqId: head.seqId,
        numTokens: numTokensOf(head),
        numCachedTokens: numCached,
      });
    }

    // In running order, so a step's batch reads oldest first.
    this.inFlight = this.running.flatMap((seq) => scheduled.get(seq) ?? []);
    return {
      scheduled: this.inFlight,
      numScheduledTokens: this.options.maxNumTokensPerStep - budget,
      preempted,
      pausedEvictions,
      admitted,
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

  /** Sequences paused now, running (holding blocks) or waiting. */
  get numPaused(): number {
    let paused = 0;
    for (const seq of this.byId.values()) if (seq.paused) paused += 1;
    return paused;
  }

  /** Blocks the paused running sequences hold (between steps: ⌈numComputed ÷ blockSize⌉ each). */
  get numPausedBlocks(): number {
    let blocks = 0;
    for (const seq of this.running)
      if (seq.paused) blocks += Math.ceil(seq.numComputed / this.kv.blockSize);
    return blocks;
  }

  /** Unpaused running and waiting sequences, and paused ones (in either queue). */
  counts(): { readonly running: number; readonly waiting: number; readonly paused: number } {
    let pausedRunning = 0;
    for (const seq of this.running) if (seq.paused) pausedRunning += 1;
    const paused = this.numPaused;
    return {
      running: this.running.length - pausedRunning,
      waiting: this.waiting.length - (paused - pausedRunning),
      paused,
    };
  }

  private get numUnpausedRunning(): number {
    let count = 0;
    for (const seq of this.running) if (!seq.paused) count += 1;
    return count;
  }

  /** A live sequence's state and counts; null once it finished, was cancelled, or is unknown. */
  inspect(seqId: string): {
    readonly state: SeqState;
    readonly paused: boolean;
    readonly numComputed: number;
    readonly numOutputTokens: number;
  } | null {
    const seq = this.byId.get(seqId);
    return seq === undefined
      ? null
      : {
          state: seq.state,
          paused: seq.paused,
          numComputed: seq.numComputed,
          numOutputTokens: seq.numOutputTokens,
        };
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

  /** Back to the waiting queue at its place, its blocks freed: it recomputes when admitted. */
  private preempt(victim: Seq): void {
    this.kv.free(victim.seqId);
    this.running.splice(this.running.indexOf(victim), 1);
    victim.numComputed = 0;
    victim.state = 'waiting';
    insertSorted(this.waiting, victim);
  }

  private oldestPausedRunning(): Seq | undefined {
    let oldest: Seq | undefined;
    for (const s of this.running)
      if (s.paused && (oldest === undefined || s.pausedAt < oldest.pausedAt)) oldest = s;
    return oldest;
  }

  private remove(seq: Seq): void {
    const queue = seq.state === 'running' ? this.running : this.waiting;
    queue.splice(queue.indexOf(seq), 1);
    this.byId.delete(seq.seqId);
    this.kv.free(seq.seqId);
  }
}
