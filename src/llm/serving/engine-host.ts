// LlmEngine on worker threads: each thread (engine-thread.ts) runs a ServingEngine of its own
// (a model replica and KV cache each: data parallelism, as engine/parallel-engine.ts), and
// this host, on the caller's thread, routes requests to them and hands their events back.
//
//   submit ─► checks (synchronous refusal) ─► least-loaded thread (prefix affinity) ─► post
//   thread ─{step: events, load}─► events grouped per request ─► onEvents (one call a step)
//   cancel ─► forgotten here at once (no event after it) ─► thread frees its blocks
//   close ─► every request still live ends with an error event, then the threads stop
//   onEvents throws ─► that request is cancelled (blocks freed), the error reported once
//     (onCallbackError); the other requests and the host go on
//   load() ─► the threads' last reports (+ submits they have not taken yet, as waiting)
//
// Routing: a request goes to the thread with the fewest running + waiting requests, unless
// a thread that recently took a request with the same first prompt block (whose KV it may
// still hold in its prefix cache) is close to that (within max(2, 25 %)). A request of the
// same `group` as the one submitted just before it (the n choices of one prompt) goes where
// that one went, whatever the loads: there it shares the prompt's blocks.
//
// The threads know a request by a key of the host's (`k1`, `k2`, …), never by the caller's
// id: a caller may cancel an id and submit it again at once, while the thread's step messages
// for the old one (sent before the cancel reached it) are still on their way; under its own
// key the old request's events find no one and are dropped.

import { Worker } from 'node:worker_threads';
import { moduleEntry, threadStart } from '../../core/module-entry.ts';
import { checkEngineRequest } from './check-engine-request.ts';
import type { ServingEngineSetup } from './create-serving-engine.ts';
import type {
  EngineEvent,
  EngineLoad,
  EngineOptions,
  EngineRequest,
  EngineStats,
  LlmEngine,
  SubmitResult,
} from './engine-api.ts';
import type {
  EngineHostMessage,
  EngineThreadData,
  EngineThreadLimits,
  EngineThreadMessage,
} from './engine-thread.ts';

// The compiled thread module when this one is compiled, else the source with tsx registered
// in the thread first (module-entry.ts).
const thread = threadStart(moduleEntry(import.meta.url, './engine-thread'));

/** First-block keys remembered for prefix affinity (oldest forgotten first). */
const maxAffinityKeys = 4096;

interface EngineThread {
  readonly index: number;
  readonly worker: Worker;
  readonly limits: EngineThreadLimits;
  load: EngineLoad;
  posted: number;
  received: number;
  gone: string | null;
  readonly requests: Set<string>;
}

interface Pending {
  /** The request's key on its thread. */
  readonly key: string;
  readonly thread: EngineThread;
  readonly onEvents: (events: readonly EngineEvent[]) => void;
}

export type EngineHostResult =
  | { readonly ok: true; readonly engine: EngineHost }
  | { readonly ok: false; readonly message: string };

const emptyLoad: EngineLoad = {
  running: 0,
  waiting: 0,
  paused: 0,
  kvBlocksUsed: 0,
  kvBlocksTotal: 0,
  kvUtilization: 0,
};

export class EngineHost implements LlmEngine {
  readonly contextLength: number;
  private readonly requests = new Map<string, Pending>();
  /** Thread key → the caller's request id, while the request is live. */
  private readonly idsByKey = new Map<string, string>();
  private nextKey = 1;
  /** First prompt block (as text) → the thread that last took a request starting with it. */
  private readonly affinity = new Map<string, number>();
  private nextJob = 1;
  /** stats() calls waiting on a thread's answer (null: the thread is gone). */
  private readonly statsWaiters = new Map<
    number,
    { readonly thread: EngineThread; readonly resolve: (stats: EngineStats | null) => void }
  >();
  private closed = false;
  /** The last submit's group and thread, for its siblings submitted right after it. */
  private lastGroup: { readonly group: string; readonly thread: EngineThread } | null = null;
  /**
   * Told once of a request whose onEvents threw (the request is cancelled then). A callback's
   * error must not escape: it would be thrown from a worker thread's `message` listener (an
   * uncaught exception: the process ends) or out of close(). Default: a line on stderr.
   */
  onCallbackError: (requestId: string, error: unknown) => void = (requestId, error) => {
    process.stderr.write(
      `engine host: the event callback of request ${requestId} threw; it is cancelled: ${
        error instanceof Error ? (error.stack ?? error.message) : String(error)
      }\n`,
    );
  };

  private constructor(
    private readonly threads: readonly EngineThread[],
    private readonly options: EngineOptions,
  ) {
    this.contextLength = threads[0]!.limits.contextLength;
    for (const thread of threads) {
      thread.worker.on('message', (message: EngineThreadMessage) =>
        this.onMessage(thread, message),
      );
      thread.worker.on('error', (error) => this.lose(thread, error.message));
      thread.worker.on('exit', (code) => this.lose(thread, `it exited (code ${code})`));
    }
  }

  /** Starts `options.threads` engine threads on `folder`; or why one could not. */
  static async start(folder: string, options: EngineOptions): Promise<EngineHostResult> {
    const { threads: count, ...threadOptions } = options;
    // maxWaiting is the host's bound (all threads together, decided at submit). A thread must
    // not apply it again: the host's view of its queue lags (preemptions, resumed paused
    // requests), and a request the host accepted would end in an error instead of a refusal.
    const setup = { ...threadOptions, maxWaiting: Number.MAX_SAFE_INTEGER };
    const workers = Array.from(
      { length: count },
      () =>
        new Worker(thread.script, {
          eval: thread.eval,
          workerData: {
            folder,
            options: setup satisfies ServingEngineSetup,
          } satisfies EngineThreadData,
        }),
    );
    const started = await Promise.all(
      workers.map(
        (worker) =>
          new Promise<EngineThreadLimits | string>((resolve) => {
            worker.once('message', (message: EngineThreadMessage) =>
              resolve(
                message.type === 'ready'
                  ? message.limits
                  : message.type === 'failed'
                    ? message.message
                    : 'the engine thread did not start',
              ),
            );
            worker.once('error', (error) => resolve(error.message));
            worker.once('exit', (code) => resolve(`the engine thread exited (code ${code})`));
          }),
      ),
    );
    const problem = started.find((s): s is string => typeof s === 'string');
    if (problem !== undefined) {
      await Promise.all(workers.map((w) => w.terminate()));
      return { ok: false, message: problem };
    }
    const threads = workers.map((worker, index): EngineThread => {
      const limits = started[index] as EngineThreadLimits;
      return {
        index,
        worker,
        limits,
        load: limits.load,
        posted: 0,
        received: 0,
        gone: null,
        requests: new Set(),
      };
    });
    return { ok: true, engine: new EngineHost(threads, options) };
  }

  submit(request: EngineRequest, onEvents: (events: readonly EngineEvent[]) => void): SubmitResult {
    if (this.closed) return { ok: false, reason: 'closed', message: 'the engine is closed' };
    const live = this.threads.filter((t) => t.gone === null);
    if (live.length === 0)
      return {
        ok: false,
        reason: 'closed',
        message: `the engine's threads stopped: ${this.threads[0]!.gone}`,
      };
    const limits = live[0]!.limits;
    const problem = checkEngineRequest(request, { ...limits, hasTokenizer: true });
    if (problem !== null) return problem;
    if (this.requests.has(request.requestId))
      return {
        ok: false,
        reason: 'invalid',
        message: `request ${request.requestId} is already running`,
      };
    if (request.promptTokens.length > limits.kvCapacityTokens)
      return {
        ok: false,
        reason: 'too_long',
        message: `the prompt's ${request.promptTokens.length} tokens exceed the KV cache's ${limits.kvCapacityTokens} positions`,
      };
    // maxWaiting bounds the engine's queue, all threads together. Requests that will take a
    // free batch slot at the next step are not queued behind anything: a burst that fits the
    // batches plus the queue (the gateway's bound for a replica) is accepted whole.
    const now = this.load();
    const freeSlots = Math.max(0, live.length * this.options.maxNumSeqs - now.running);
    if (now.waiting - freeSlots >= this.options.maxWaiting)
      return {
        ok: false,
        reason: 'queue_full',
        message: `${this.options.maxWaiting} requests are already waiting`,
      };
    const key = this.affinityKey(request.promptTokens);
    const last = this.lastGroup;
    const thread =
      request.group !== undefined && last?.group === request.group && last.thread.gone === null
        ? last.thread
        : this.pick(live, key);
    this.lastGroup = request.group === undefined ? null : { group: request.group, thread };
    if (key !== null) {
      this.affinity.delete(key);
      this.affinity.set(key, thread.index);
      if (this.affinity.size > maxAffinityKeys)
        this.affinity.delete(this.affinity.keys().next().value!);
    }
    const requestKey = `k${this.nextKey++}`;
    this.requests.set(request.requestId, { key: requestKey, thread, onEvents });
    this.idsByKey.set(requestKey, request.requestId);
    thread.requests.add(request.requestId);
    thread.posted += 1;
    this.post(thread, { type: 'submit', request: { ...request, requestId: requestKey } });
    return { ok: true };
  }

  cancel(requestId: string): void {
    const pending = this.requests.get(requestId);
    if (pending === undefined) return;
    this.forget(requestId);
    this.post(pending.thread, { type: 'cancel', requestId: pending.key });
  }

  pause(requestId: string): void {
    const pending = this.requests.get(requestId);
    if (pending !== undefined) this.post(pending.thread, { type: 'pause', requestId: pending.key });
  }

  resume(requestId: string): void {
    const pending = this.requests.get(requestId);
    if (pending !== undefined)
      this.post(pending.thread, { type: 'resume', requestId: pending.key });
  }

  load(): EngineLoad {
    let { running, waiting, paused, kvBlocksUsed, kvBlocksTotal } = emptyLoad;
    for (const thread of this.threads) {
      if (thread.gone !== null || this.closed) continue; // closed: nothing runs
      running += thread.load.running;
      waiting += this.waitingOn(thread);
      paused += thread.load.paused;
      kvBlocksUsed += thread.load.kvBlocksUsed;
      kvBlocksTotal += thread.load.kvBlocksTotal;
    }
    return {
      running,
      waiting,
      paused,
      kvBlocksUsed,
      kvBlocksTotal,
      kvUtilization: kvBlocksTotal === 0 ? 0 : kvBlocksUsed / kvBlocksTotal,
    };
  }

  /** Each live thread's counters, summed (after the messages sent before this call). */
  async stats(): Promise<EngineStats> {
    const parts = await Promise.all(
      this.threads
        .filter((t) => t.gone === null && !this.closed)
        .map(
          (thread) =>
            new Promise<EngineStats | null>((resolve) => {
              const job = this.nextJob++;
              this.statsWaiters.set(job, { thread, resolve });
              this.post(thread, { type: 'stats', job });
            }),
        ),
    );
    const sum: Record<string, number> = {};
    for (const part of parts) {
      if (part === null) continue;
      for (const [name, value] of Object.entries(part) as [string, number][])
        sum[name] = (sum[name] ?? 0) + value;
    }
    const load = this.load();
    return {
      ...load,
      promptTokensTotal: sum.promptTokensTotal ?? 0,
      generationTokensTotal: sum.generationTokensTotal ?? 0,
      prefixQueriedTokensTotal: sum.prefixQueriedTokensTotal ?? 0,
      prefixHitTokensTotal: sum.prefixHitTokensTotal ?? 0,
      preemptionsTotal: sum.preemptionsTotal ?? 0,
      stepsTotal: sum.stepsTotal ?? 0,
      pausedEvictionsTotal: sum.pausedEvictionsTotal ?? 0,
    };
  }

  /** Stops the threads; every request still live ends first with an `error` event. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const live = [...this.requests];
    for (const [requestId] of live) this.forget(requestId);
    for (const waiter of this.statsWaiters.values()) waiter.resolve(null);
    this.statsWaiters.clear();
    // A caller waiting for its request's end must get one (the contract: each submit ends
    // with done or error unless cancelled), or its response would hang.
    for (const [requestId, pending] of live)
      this.deliver(requestId, pending, [
        { kind: 'error', requestId, message: 'the engine closed' },
      ]);
    await Promise.all(this.threads.map((t) => t.worker.terminate()));
  }

  /** Threads, for tests: which one runs a request, and each one's last load. */
  threadOf(requestId: string): number | null {
    return this.requests.get(requestId)?.thread.index ?? null;
  }

  private onMessage(thread: EngineThread, message: EngineThreadMessage): void {
    if (this.closed) return;
    if (message.type === 'stats') {
      // The thread's load now (after every message sent before the stats() call), newer than
      // its last step's report: stats() sums it, and load() reads it from here on.
      const { running, waiting, paused, kvBlocksUsed, kvBlocksTotal, kvUtilization } =
        message.stats;
      thread.load = { running, waiting, paused, kvBlocksUsed, kvBlocksTotal, kvUtilization };
      thread.received = message.received;
      const waiter = this.statsWaiters.get(message.job);
      this.statsWaiters.delete(message.job);
      waiter?.resolve(message.stats);
      return;
    }
    if (message.type !== 'step') return;
    thread.load = message.load;
    thread.received = message.received;
    if (message.events.length === 0) return;
    const byKey = new Map<string, EngineEvent[]>();
    for (const event of message.events) {
      const requestId = this.idsByKey.get(event.requestId);
      if (requestId === undefined) continue; // cancelled (or closed): nothing after it
      const list = byKey.get(event.requestId);
      const own = { ...event, requestId };
      if (list === undefined) byKey.set(event.requestId, [own]);
      else list.push(own);
    }
    // Every request gets its events even if one callback throws (deliver contains it).
    for (const [key, events] of byKey) {
      const requestId = this.idsByKey.get(key);
      if (requestId === undefined) continue; // cancelled by an earlier callback of this step
      const pending = this.requests.get(requestId)!;
      if (events.some((e) => e.kind !== 'token')) this.forget(requestId);
      this.deliver(requestId, pending, events);
    }
  }

  /**
   * Hands a request its events. A callback that throws ends its request: cancelled (its
   * thread frees the blocks; nothing more is delivered) and reported once; the error goes
   * no further.
   */
  private deliver(requestId: string, pending: Pending, events: readonly EngineEvent[]): void {
    try {
      pending.onEvents(events);
    } catch (error) {
      // Still the same request (not one submitted again under its id by the callback).
      if (this.requests.get(requestId) === pending) this.cancel(requestId);
      this.onCallbackError(requestId, error);
    }
  }

  /** A thread died: its requests end with an error; the others carry on. */
  private lose(thread: EngineThread, why: string): void {
    if (thread.gone !== null || this.closed) return;
    thread.gone = why;
    for (const [job, waiter] of this.statsWaiters)
      if (waiter.thread === thread) {
        this.statsWaiters.delete(job);
        waiter.resolve(null);
      }
    // One by one: a callback may cancel others of the thread's requests (a run's choices).
    for (const requestId of [...thread.requests]) {
      const pending = this.requests.get(requestId);
      if (pending === undefined) continue;
      this.forget(requestId);
      this.deliver(requestId, pending, [
        { kind: 'error', requestId, message: `engine thread ${thread.index} stopped: ${why}` },
      ]);
    }
  }

  private forget(requestId: string): void {
    const pending = this.requests.get(requestId);
    if (pending === undefined) return;
    this.requests.delete(requestId);
    this.idsByKey.delete(pending.key);
    pending.thread.requests.delete(requestId);
  }

  private post(thread: EngineThread, message: EngineHostMessage): void {
    if (thread.gone === null) thread.worker.postMessage(message);
  }

  /** Requests waiting on a thread: its last report, plus submits it has not taken yet. */
  private waitingOn(thread: EngineThread): number {
    return thread.load.waiting + (thread.posted - thread.received);
  }

  private affinityKey(prompt: readonly number[]): string | null {
    const blockSize = this.options.blockSize;
    return prompt.length >= blockSize ? prompt.slice(0, blockSize).join(',') : null;
  }

  private pick(live: readonly EngineThread[], key: string | null): EngineThread {
    const loadOf = (t: EngineThread): number => t.load.running + this.waitingOn(t);
    let least = live[0]!;
    for (const thread of live) if (loadOf(thread) < loadOf(least)) least = thread;
    if (key === null) return least;
    const index = this.affinity.get(key);
    const preferred = live.find((t) => t.index === index);
    if (preferred === undefined) return least;
    const slack = Math.max(2, Math.ceil(0.25 * loadOf(least)));
    return loadOf(preferred) <= loadOf(least) + slack ? preferred : least;
  }
}
