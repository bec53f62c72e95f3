// Decoding on several cores: N worker threads, each with its own replica of the model
// (generation-thread.ts), requests split between them round-robin. Data parallelism, as in
// vLLM's data-parallel mode: no synchronization inside a step, so it pays off even for a
// model whose products are too small to split (a 1 M-parameter Llama's take microseconds).
// The price is memory: every thread holds the weights and its own KV cache.
//
//   generate(requests) ─► thread 0: requests 0, 2, 4, …  ─┐
//                      └► thread 1: requests 1, 3, 5, …  ─┴► events, request indices mapped back

import { Worker } from 'node:worker_threads';
import { moduleEntry, threadStart } from '../../core/module-entry.ts';
import type { ModelOptions } from './create-model.ts';
import type { GenerationEvent } from './generation.ts';
import type {
  GenerateMessage,
  ThreadData,
  ThreadMessage,
  ThreadRequest,
  ThreadStats,
} from './generation-thread.ts';

// The compiled thread module when this one is compiled, else the source with tsx registered
// in the thread first (module-entry.ts).
const thread = threadStart(moduleEntry(import.meta.url, './generation-thread'));

interface Job {
  readonly thread: number;
  /** Global request index of each of this job's requests. */
  readonly indices: readonly number[];
}

export class ParallelEngine {
  private nextJob = 1;

  /** Why a thread is gone, per thread that is. */
  private readonly gone = new Map<number, string>();

  private constructor(private readonly workers: readonly Worker[]) {
    for (const [thread, worker] of workers.entries()) {
      worker.on('error', (error) => this.gone.set(thread, error.message));
      worker.on('exit', (code) => {
        if (!this.gone.has(thread)) this.gone.set(thread, `it exited (code ${code})`);
      });
    }
  }

  /** Starts `threads` threads, each loading `folder`; or why one could not. */
  static async start(
    folder: string,
    threads: number,
    options: ModelOptions = {},
  ): Promise<{ ok: true; engine: ParallelEngine } | { ok: false; message: string }> {
    const workers = Array.from(
      { length: threads },
      () =>
        new Worker(thread.script, {
          eval: thread.eval,
          workerData: { folder, options } satisfies ThreadData,
        }),
    );
    const ready = await Promise.all(
      workers.map(
        (worker) =>
          new Promise<string | null>((resolve) => {
            worker.once('message', (message: ThreadMessage) =>
              resolve(
                message.type === 'ready'
                  ? null
                  : 'message' in message
                    ? message.message
                    : 'not ready',
              ),
            );
            worker.once('error', (error) => resolve(error.message));
          }),
      ),
    );
    const problem = ready.find((r) => r !== null);
    if (problem !== undefined && problem !== null) {
      await Promise.all(workers.map((w) => w.terminate()));
      return { ok: false, message: problem };
    }
    return { ok: true, engine: new ParallelEngine(workers) };
  }

  get threads(): number {
    return this.workers.length;
  }

  /**
   * Runs `requests` split across the threads; yields every event with `request` as the index
   * in `requests`. Token ids only: text (and so stop strings) is the caller's business.
   * Stopping the iteration early cancels what is still running (the threads free its blocks);
   * a thread that dies fails the call.
   */
  async *generate(requests: readonly ThreadRequest[]): AsyncGenerator<GenerationEvent> {
    const queue: GenerationEvent[] = [];
    let wake: (() => void) | null = null;
    let pending = 0;
    let failure: string | null = null;
    const jobs = new Map<number, Job>();
    const unfinished = new Set<number>();
    const cleanups: (() => void)[] = [];
    for (const [thread, why] of this.gone)
      if (thread < requests.length) throw new Error(`generation thread ${thread} stopped: ${why}`);
    for (let thread = 0; thread < this.workers.length; thread++) {
      const indices: number[] = [];
      for (let i = thread; i < requests.length; i += this.workers.length) indices.push(i);
      if (indices.length === 0) continue;
      const job = this.nextJob++;
      jobs.set(job, { thread, indices });
      unfinished.add(job);
      pending += 1;
      const worker = this.workers[thread]!;
      const finish = (problem: string | null): void => {
        if (!unfinished.delete(job)) return;
        if (problem !== null) failure ??= problem;
        pending -= 1;
      };
      const listener = (message: ThreadMessage): void => {
        if (!('job' in message) || message.job !== job) return;
        if (message.type === 'events') {
          for (const event of message.events)
            queue.push({ ...event, request: indices[event.request]! });
        } else finish(message.type === 'error' ? message.message : null);
        wake?.();
      };
      const died = (why: string): void => {
        finish(`generation thread ${thread} stopped: ${why}`);
        wake?.();
      };
      const onError = (error: Error): void => died(error.message);
      const onExit = (code: number): void => died(`it exited (code ${code})`);
      worker.on('message', listener);
      worker.on('error', onError);
      worker.on('exit', onExit);
      cleanups.push(() => {
        worker.off('message', listener);
        worker.off('error', onError);
        worker.off('exit', onExit);
      });
      worker.postMessage({
        type: 'generate',
        job,
        requests: indices.map((i) => requests[i]!),
      } satisfies GenerateMessage);
    }
    try {
      for (;;) {
        while (queue.length > 0) yield queue.shift()!;
        if (failure !== null) throw new Error(failure);
        if (pending === 0) return;
        await new Promise<void>((resolve) => (wake = resolve));
        wake = null;
      }
    } finally {
      // Stopped early (or failed): the threads stop what they still run for this call.
      for (const job of unfinished)
        this.workers[jobs.get(job)!.thread]!.postMessage({
          type: 'cancel',
          job,
        } satisfies GenerateMessage);
      for (const cleanup of cleanups) cleanup();
    }
  }

  /** Each thread's KV block pool and token count, once the work it was given before is done. */
  async stats(): Promise<ThreadStats[]> {
    return Promise.all(
      this.workers.map((worker, thread) => {
        const job = this.nextJob++;
        return new Promise<ThreadStats>((resolve, reject) => {
          const gone = this.gone.get(thread);
          if (gone !== undefined) {
            reject(new Error(`generation thread ${thread} stopped: ${gone}`));
            return;
          }
          const onExit = (code: number): void => {
            worker.off('message', listener);
            reject(new Error(`generation thread ${thread} stopped: it exited (code ${code})`));
          };
          const listener = (message: ThreadMessage): void => {
            if (message.type !== 'stats' || message.job !== job) return;
            worker.off('message', listener);
            worker.off('exit', onExit);
            resolve(message.stats);
          };
          worker.on('message', listener);
          worker.once('exit', onExit);
          worker.postMessage({ type: 'stats', job } satisfies GenerateMessage);
        });
      }),
    );
  }

  async close(): Promise<void> {
    await Promise.all(this.workers.map((worker) => worker.terminate()));
  }
}
