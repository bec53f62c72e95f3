// A per-model dynamic batcher, in the shape of Triton's: requests wait briefly so that the
// model runs several at once. Pure apart from the clock, the scheduler and the executor it is
// given, so tests drive it with a fake clock and see exactly which batches form.
//
//   enqueue ──► full? ──yes──► {ok:false, 'queue_full'}            (429 + Retry-After)
//     │ no           queues: Map<shape key, ShapeQueue>
//     ▼                ┌──────────────────────────────────────────────┐
//   ShapeQueue(key) ── │ high:   [h1] ⇄ [h2]            rows, oldest  │ ─┐
//                      │ normal: [n1] ⇄ [n2] ⇄ [n3]                   │  │ pump(): expire
//                      └──────────────────────────────────────────────┘  │ past-deadline,
//   ShapeQueue(key') ── …                                                │ pick a ready queue
//                                                                        ▼ (batch-policy.ts)
//   one timer ◄── armed for the earliest of: a deadline, a queue's     executor(batch) — one
//                 oldest arrival + maxDelayMicros (only while idle)    at a time; the next
//                                                                      batch forms meanwhile
//
// Ownership: an entry is in exactly one place — a queue (entry.list ≠ null), the running
// batch, or settled. Each request settles exactly once: done | failed (it ran, or its batch
// threw) | expired (its deadline passed while queued; it is never run) | cancelled (its
// AbortSignal fired while queued). Shedding is the enqueue's return value, never a settle.
// pump() runs on every enqueue, cancel, timer and batch completion; it never re-enters.
//
// Adaptive (options.adaptive, adaptive-gathering.ts): while it says not to gather, a queue is
// ready as soon as it holds a request (no delay) and a batch takes one request; while it
// gathers, the config's rule above applies. Every completed batch reports its rows, its own
// time and the wait gathering added to it; the CPU clock is read when the adaptive batcher
// asks (at the ends of its measured stretches).

import { cutRows, isReady, readyAtMicros } from './batch-policy.ts';
import { DeadlineHeap } from './deadline-heap.ts';
import { RequestList } from './request-list.ts';
import { frontBatch, queueState, type Entry, type ShapeQueue } from './shape-queue.ts';
import type { BatchingConfig } from '../../store/serving-records.ts';

export type {
  Priority,
  BatcherClock,
  TimerHandle,
  BatcherScheduler,
  BatchRequest,
  CancelSignal,
  BatchExecutor,
  BatchRun,
  Settled,
  EnqueueResult,
  BatcherHooks,
  DynamicBatcherOptions,
} from './batcher-types.ts';
import type {
  BatchRequest,
  BatchRun,
  DynamicBatcherOptions,
  EnqueueResult,
  Settled,
  TimerHandle,
} from './batcher-types.ts';

export class DynamicBatcher<T, R> {
  private readonly queues = new Map<string, ShapeQueue<T, R>>();
  private queued = 0;
  private running = false;
  private draining = false;
  private pumping = false;
  private pumpAgain = false;
  private timer: { readonly atMicros: number; readonly handle: TimerHandle } | null = null;
  /** The CPU clock, for the adaptive batcher's stretches (null: none). */
  private readonly cpuMicros: (() => number) | null;
  /** When the model last became free (the end of the last batch), µs. */
  private idleSinceMicros = Number.NEGATIVE_INFINITY;
  /** The config without its delay: what readiness follows while not gathering. */
  private readonly noWait: BatchingConfig;
  /** A deferred pump is scheduled (scheduler.soon). */
  private pumpSoon = false;
  /** The queue depth changed since the hook last heard of it. */
  private depthChanged = false;
  private readonly deferredPump = (): void => {
    this.pumpSoon = false;
    this.pump();
  };
  /** Queued requests that have a deadline, earliest first. */
  private readonly deadlines = new DeadlineHeap<Entry<T, R>>(
    (entry) => entry.request.deadlineMicros!,
    (entry) => entry.list === null,
  );

  constructor(private readonly options: DynamicBatcherOptions<T, R>) {
    this.noWait = { ...options.config, maxDelayMicros: 0 };
    const clock = options.clock;
    this.cpuMicros = clock.cpuMicros === undefined ? null : () => clock.cpuMicros!();
  }

  /** The rule readiness follows now: the config's, or no waiting while not gathering. */
  private get rule(): BatchingConfig {
    const adaptive = this.options.adaptive;
    return adaptive === undefined || adaptive.gathering ? this.options.config : this.noWait;
  }

  /** Requests waiting in queues (not counting the batch that is running). */
  get depth(): number {
    return this.queued;
  }

  /** Whether a batch is executing now. */
  get busy(): boolean {
    return this.running;
  }

  enqueue(request: BatchRequest<T>): EnqueueResult<R> {
    const now = this.options.clock.nowMicros();
    if (request.signal?.aborted === true) return settledNow({ kind: 'cancelled' });
    if (request.deadlineMicros !== null && request.deadlineMicros <= now)
      return settledNow({ kind: 'expired', queuedMicros: 0 });
    this.expireDue(now); // expired entries must not hold places a live request could take
    if (this.queued >= this.options.config.maxQueue) return { ok: false, reason: 'queue_full' };

    let queue = this.queues.get(request.key);
    if (queue === undefined) {
      queue = {
        key: request.key,
        high: new RequestList(),
        normal: new RequestList(),
        rows: 0,
        aloneCount: 0,
      };
      this.queues.set(request.key, queue);
    }
    let settle!: (outcome: Settled<R>) => void;
    const done = new Promise<Settled<R>>((resolve) => (settle = resolve));
    const entry: Entry<T, R> = {
      request,
      arrivalMicros: now,
      queue,
      prev: null,
      next: null,
      list: null,
      settle,
      unlisten: null,
    };
    (request.priority === 'high' ? queue.high : queue.normal).push(entry);
    if (request.deadlineMicros !== null) {
      this.deadlines.push(entry);
      this.deadlines.compact(this.queued + 1);
    }
    queue.rows += request.rows;
    if (request.alone === true) queue.aloneCount += 1;
    this.queued += 1;
    const signal = request.signal;
    if (signal !== undefined) {
      const onAbort = (): void => this.cancel(entry);
      signal.addEventListener('abort', onAbort, { once: true });
      entry.unlisten = () => signal.removeEventListener('abort', onAbort);
    }
    this.depthChanged = true;
    const scheduler = this.options.scheduler;
    if (scheduler.soon === undefined || this.running) {
      this.pump();
    } else if (!this.pumpSoon) {
      this.pumpSoon = true;
      scheduler.soon(this.deferredPump);
    }
    return { ok: true, done };
  }

  /**
   * Lets the caller run one request of `rows` rows itself, at once, outside the queue — when
   * the batch it would form is that request alone anyway: the model is free, nothing waits,
   * and the adaptive batcher is not gathering. The batcher is then busy (requests that arrive
   * queue) until the returned `release` is called, exactly once, with what happened: 'ran'
   * (measured like a batch), 'failed' (the run threw) or 'skipped' (never run). null: enqueue
   * the request instead. It skips the queue's bookkeeping (entry, promise, shape key,
   * executor) that a batch of one does not need. While gathering, even a lone request at an
   * idle model queues: the frames of one read are enqueued in one turn and join (the
   * deferred pump), where running the first at once would split them into two executions.
   */
  runNow(rows: number): ((what: 'ran' | 'failed' | 'skipped') => void) | null {
    const adaptive = this.options.adaptive;
    if (this.running || this.queued > 0 || this.pumpSoon) return null;
    if (adaptive === undefined || adaptive.gathering) return null;
    const clock = this.options.clock;
    const started = clock.nowMicros();
    adaptive.tick(started);
    this.running = true;
    this.options.hooks?.onBatch?.(1, rows);
    let released = false;
    return (what) => {
      if (released) return;
      released = true;
      const ended = clock.nowMicros();
      if (what === 'ran')
        adaptive.completed(
          { rows, executeMicros: ended - started, waitMicros: 0 },
          ended,
          this.cpuMicros,
        );
      else if (what === 'failed') adaptive.failed(ended);
      this.running = false;
      this.idleSinceMicros = ended;
      this.pump();
    };
  }

  /** From now on every queued request is ready at once (a stopping worker runs them all). */
  drain(): void {
    this.draining = true;
    this.pump();
  }

  private cancel(entry: Entry<T, R>): void {
    if (entry.list === null) return; // already running or settled
    this.unqueue(entry);
    this.settle(entry, { kind: 'cancelled' });
    this.pump();
  }

  private pump(): void {
    if (this.pumping) {
      this.pumpAgain = true;
      return;
    }
    this.pumping = true;
    try {
      do {
        this.pumpAgain = false;
        const now = this.options.clock.nowMicros();
        this.expireDue(now);
        if (!this.running) {
          this.options.adaptive?.tick(now);
          const queue = this.pickReady(now);
          if (queue !== null) this.dispatch(queue, now);
        }
        this.arm(now);
      } while (this.pumpAgain);
    } finally {
      this.pumping = false;
    }
    if (this.depthChanged) {
      this.depthChanged = false;
      this.options.hooks?.onQueueDepth?.(this.queued);
    }
  }

  /** Ready queues holding a high-priority request first, then the one waiting longest. */
  private pickReady(now: number): ShapeQueue<T, R> | null {
    let best: ShapeQueue<T, R> | null = null;
    let bestHigh = false;
    let bestOldest = 0;
    for (const queue of this.queues.values()) {
      const state = queueState(queue);
      if (!isReady(state, this.rule, now, this.draining)) continue;
      const high = queue.high.size > 0;
      if (
        best === null ||
        (high && !bestHigh) ||
        (high === bestHigh && state.oldestArrivalMicros < bestOldest)
      ) {
        [best, bestHigh, bestOldest] = [queue, high, state.oldestArrivalMicros];
      }
    }
    return best;
  }

  private dispatch(queue: ShapeQueue<T, R>, now: number): void {
    const adaptive = this.options.adaptive;
    const gathering = adaptive?.gathering ?? true;
    const limit = gathering ? cutRows(queue.rows, this.options.config) : 0;
    const { batch, rows } = frontBatch(queue, limit);
    // The wait gathering added: time requests were held while the model was free. Only a
    // delay holds them (with none, a request waits only for the model or this turn's code).
    let waitMicros = 0;
    if (adaptive !== undefined && gathering && this.options.config.maxDelayMicros > 0) {
      for (const entry of batch)
        waitMicros += Math.max(0, now - Math.max(entry.arrivalMicros, this.idleSinceMicros));
    }
    for (const entry of batch) this.unqueue(entry);
    this.running = true;
    this.options.hooks?.onBatch?.(batch.length, rows);
    const run: BatchRun = {
      requests: batch.length,
      rows,
      startedMicros: now,
      endedMicros: now,
      workStartedMicros: -1,
      workEndedMicros: -1,
    };
    let pending: Promise<readonly R[]>;
    try {
      pending = this.options.executor(
        batch.map((e) => e.request.payload),
        rows,
        run,
      );
    } catch (error) {
      pending = Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
    pending
      .then(
        (results) => {
          run.endedMicros = this.options.clock.nowMicros();
          if (results.length !== batch.length) {
            const error = new Error(`executor gave ${results.length} results for ${batch.length}`);
            adaptive?.failed(run.endedMicros);
            for (const entry of batch) this.fail(entry, error, now);
            return;
          }
          adaptive?.completed(
            { rows, executeMicros: run.endedMicros - now, waitMicros },
            run.endedMicros,
            this.cpuMicros,
          );
          batch.forEach((entry, i) =>
            this.settle(entry, {
              kind: 'done',
              value: results[i] as R,
              queuedMicros: now - entry.arrivalMicros,
              batch: run,
            }),
          );
        },
        (error: unknown) => {
          adaptive?.failed(this.options.clock.nowMicros());
          for (const entry of batch) this.fail(entry, error, now);
        },
      )
      .finally(() => {
        this.running = false;
        this.idleSinceMicros = this.options.clock.nowMicros();
        this.pump();
      })
      .catch(() => undefined); // settle and pump never throw; keep the chain unhandled-free
  }

  private fail(entry: Entry<T, R>, error: unknown, dispatchedMicros: number): void {
    this.settle(entry, {
      kind: 'failed',
      error,
      queuedMicros: dispatchedMicros - entry.arrivalMicros,
    });
  }

  /** Settles every queued request whose deadline is at or before `now`. */
  private expireDue(now: number): void {
    for (;;) {
      const entry = this.deadlines.peek();
      if (entry === null || entry.request.deadlineMicros! > now) return;
      this.deadlines.take();
      this.unqueue(entry);
      this.settle(entry, { kind: 'expired', queuedMicros: now - entry.arrivalMicros });
    }
  }

  /** One timer for the next thing that can happen without an enqueue or a batch finishing. */
  private arm(now: number): void {
    let next = Number.POSITIVE_INFINITY;
    for (const queue of this.queues.values()) {
      if (!this.running) {
        const state = queueState(queue);
        if (!isReady(state, this.rule, now, this.draining))
          next = Math.min(next, readyAtMicros(state, this.rule));
      }
    }
    const soonest = this.deadlines.peek();
    if (soonest !== null) next = Math.min(next, soonest.request.deadlineMicros!);
    if (this.timer !== null && this.timer.atMicros === next) return;
    this.timer?.handle.cancel();
    this.timer = null;
    if (next === Number.POSITIVE_INFINITY) return;
    const handle = this.options.scheduler.schedule(Math.max(0, next - now), () => {
      this.timer = null;
      this.pump();
    });
    this.timer = { atMicros: next, handle };
  }

  private unqueue(entry: Entry<T, R>): void {
    const queue = entry.queue;
    entry.list?.remove(entry);
    queue.rows -= entry.request.rows;
    if (entry.request.alone === true) queue.aloneCount -= 1;
    if (queue.high.size === 0 && queue.normal.size === 0) this.queues.delete(queue.key);
    this.queued -= 1;
    entry.unlisten?.();
    entry.unlisten = null;
    this.depthChanged = true; // reported once, at the end of the pump
  }

  private settle(entry: Entry<T, R>, outcome: Settled<R>): void {
    const settle = entry.settle;
    entry.settle = null;
    settle?.(outcome);
  }
}

function settledNow<R>(outcome: Settled<R>): EnqueueResult<R> {
  return { ok: true, done: Promise.resolve(outcome) };
}
