// LlmEngine on worker threads: each thread (engine-thread.ts) runs a ServingEngine of its own
// (a model replica and KV cache each: data parallelism, as engine/parallel-engine.ts), and
// this host, on the caller's thread, routes requests to them and hands their events back.
//
//   submit ─► checks (synchronous refusal) ─► least-loaded thread (prefix affinity) ─► post
//   thread ─{step: events, load}─► events grouped per request ─► onEvents (one call a step)
//   cancel ─► forgotten here at once (no event after it) ─► thread frees its blocks
//   load() ─► the threads' last reports (+ submits they have not taken yet, as waiting)
//
// Routing: a request goes to the thread with the fewest running + waiting requests, unless
// a thread that recently took a request with the same first prompt block (whose KV it may
// still hold in its prefix cache) is close to that (within max(2, 25 %)).

import { Worker } from 'node:worker_threads';
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

const threadEntry = new URL('./engine-thread.ts', import.meta.url).href;
// A worker thread does not inherit the process's TypeScript loader (`--import tsx`): the
// thread registers tsx itself, then imports its entry.
const threadBoot = `import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))})
  .then((tsx) => { tsx.register(); return import(${JSON.stringify(threadEntry)}); })`;

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
  /** First prompt block (as text) → the thread that last took a request starting with it. */
  private readonly affinity = new Map<string, number>();
  private nextJob = 1;
  /** stats() calls waiting on a thread's answer (null: the thread is gone). */
  private readonly statsWaiters = new Map<
    number,
    { readonly thread: EngineThread; readonly resolve: (stats: EngineStats | null) => void }
  >();
  private closed = false;

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
    const { threads: count, ...setup } = options;
    const workers = Array.from(
      { length: count },
      () =>
        new Worker(threadBoot, {
          eval: true,
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
    // maxWaiting bounds the engine's queue, all threads together.
    if (this.load().waiting >= this.options.maxWaiting)
      return {
        ok: false,
        reason: 'queue_full',
        message: `${this.options.maxWaiting} requests are already waiting`,
      };
    const key = this.affinityKey(request.promptTokens);
    const thread = this.pick(live, key);
    if (key !== null) {
      this.affinity.delete(key);
      this.affinity.set(key, thread.index);
      if (this.affinity.size > maxAffinityKeys)
        this.affinity.delete(this.affinity.keys().next().value!);
    }
    this.requests.set(request.requestId, { thread, onEvents });
    thread.requests.add(request.requestId);
    thread.posted += 1;
    this.post(thread, { type: 'submit', request });
    return { ok: true };
  }

  cancel(requestId: string): void {
    const pending = this.requests.get(requestId);
    if (pending === undefined) return;
    this.forget(requestId);
    this.post(pending.thread, { type: 'cancel', requestId });
  }

  pause(requestId: string): void {
    const pending = this.requests.get(requestId);
    if (pending !== undefined) this.post(pending.thread, { type: 'pause', requestId });
  }

  resume(requestId: string): void {
    const pending = this.requests.get(requestId);
    if (pending !== undefined) this.post(pending.thread, { type: 'resume', requestId });
  }

  load(): EngineLoad {
    let { running, waiting, paused, kvBlocksUsed, kvBlocksTotal } = emptyLoad;
    for (const thread of this.threads) {
      if (thread.gone !== null) continue;
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
        .filter((t) => t.gone === null)
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

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.requests.clear();
    for (const waiter of this.statsWaiters.values()) waiter.resolve(null);
    this.statsWaiters.clear();
    await Promise.all(this.threads.map((t) => t.worker.terminate()));
  }

  /** Threads, for tests: which one runs a request, and each one's last load. */
  threadOf(requestId: string): number | null {
    return this.requests.get(requestId)?.thread.index ?? null;
  }

  private onMessage(thread: EngineThread, message: EngineThreadMessage): void {
    if (this.closed) return;
    if (message.type === 'stats') {
      const waiter = this.statsWaiters.get(message.job);
      this.statsWaiters.delete(message.job);
      waiter?.resolve(message.stats);
      return;
    }
    if (message.type !== 'step') return;
    thread.load = message.load;
    thread.received = message.received;
    if (message.events.length === 0) return;
    const byRequest = new Map<string, EngineEvent[]>();
    for (const event of message.events) {
      if (!this.requests.has(event.requestId)) continue; // cancelled: nothing after it
      const list = byRequest.get(event.requestId);
      if (list === undefined) byRequest.set(event.requestId, [event]);
      else list.push(event);
    }
    // Every request gets its events even if one callback throws; the first error is rethrown.
    let failure: Error | null = null;
    for (const [requestId, events] of byRequest) {
      const pending = this.requests.get(requestId);
      if (pending === undefined) continue; // cancelled by an earlier callback of this step
      if (events.some((e) => e.kind !== 'token')) this.forget(requestId);
      try {
        pending.onEvents(events);
      } catch (error) {
        failure ??= error instanceof Error ? error : new Error(String(error));
      }
    }
    if (failure !== null) throw failure;
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
    for (const requestId of [...thread.requests]) {
      const pending = this.requests.get(requestId);
      this.forget(requestId);
      pending?.onEvents([
        { kind: 'error', requestId, message: `engine thread ${thread.index} stopped: ${why}` },
      ]);
    }
  }

  private forget(requestId: string): void {
    const pending = this.requests.get(requestId);
    if (pending === undefined) return;
    this.requests.delete(requestId);
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
