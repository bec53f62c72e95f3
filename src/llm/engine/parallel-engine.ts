// Decoding on several cores: N worker threads, each with its own replica of the model
// (generation-thread.ts), requests split between them round-robin. Data parallelism, as in
// vLLM's data-parallel mode: no synchronization inside a step, so it pays off even for a
// model whose products are too small to split (a 1 M-parameter Llama's take microseconds).
// The price is memory: every thread holds the weights and its own KV cache.
//
//   generate(requests) ─► thread 0: requests 0, 2, 4, …  ─┐
//                      └► thread 1: requests 1, 3, 5, …  ─┴► events, request indices mapped back

import { Worker } from 'node:worker_threads';
import type { ModelOptions } from './create-model.ts';
import type { GenerationEvent, GenerationRequest } from './generation.ts';
import type { GenerateMessage, ThreadData, ThreadMessage } from './generation-thread.ts';

const threadEntry = new URL('./generation-thread.ts', import.meta.url).href;
// A worker thread does not inherit the process's TypeScript loader (`--import tsx`): the
// thread registers tsx itself, then imports its entry.
const threadBoot = `import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))})
  .then((tsx) => { tsx.register(); return import(${JSON.stringify(threadEntry)}); })`;

interface Job {
  readonly thread: number;
  /** Global request index of each of this job's requests. */
  readonly indices: readonly number[];
}

export class ParallelEngine {
  private nextJob = 1;

  private constructor(private readonly workers: readonly Worker[]) {}

  /** Starts `threads` threads, each loading `folder`; or why one could not. */
  static async start(
    folder: string,
    threads: number,
    options: ModelOptions = {},
  ): Promise<{ ok: true; engine: ParallelEngine } | { ok: false; message: string }> {
    const workers = Array.from(
      { length: threads },
      () =>
        new Worker(threadBoot, {
          eval: true,
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
   * in `requests`. Text streams are not supported here (events carry token ids).
   */
  async *generate(
    requests: readonly Omit<GenerationRequest, 'textStream'>[],
  ): AsyncGenerator<GenerationEvent> {
    const queue: GenerationEvent[] = [];
    let wake: (() => void) | null = null;
    let pending = 0;
    let failure: string | null = null;
    const jobs = new Map<number, Job>();
    const listeners: { worker: Worker; listener: (m: ThreadMessage) => void }[] = [];
    for (let thread = 0; thread < this.workers.length; thread++) {
      const indices: number[] = [];
      for (let i = thread; i < requests.length; i += this.workers.length) indices.push(i);
      if (indices.length === 0) continue;
      const job = this.nextJob++;
      jobs.set(job, { thread, indices });
      pending += 1;
      const worker = this.workers[thread]!;
      const listener = (message: ThreadMessage): void => {
        if (!('job' in message) || message.job !== job) return;
        if (message.type === 'events') {
          for (const event of message.events)
            queue.push({ ...event, request: indices[event.request]! });
        } else {
          if (message.type === 'error') failure = message.message;
          pending -= 1;
        }
        wake?.();
      };
      worker.on('message', listener);
      listeners.push({ worker, listener });
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
      for (const { worker, listener } of listeners) worker.off('message', listener);
    }
  }

  async close(): Promise<void> {
    await Promise.all(this.workers.map((worker) => worker.terminate()));
  }
}
