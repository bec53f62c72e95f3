// One thread of a ParallelEngine (parallel-engine.ts): loads its own copy of the model (a
// data-parallel replica: weights, kernel arena and KV cache of its own), then runs the
// requests it is given with `generate` and posts their events back, one message per decode
// step's worth of events. Between steps the thread returns to its event loop, so a cancel
// (the caller stopped listening) ends the job there and frees its KV blocks.
//
//   main ─{load}─► thread: loadLlamaFolder + createModel ─{ready | failed}─► main
//   main ─{generate, job, requests}─► thread: generate(…) ─{events, job, […]}*─{done, job}─► main
//   main ─{cancel, job}─► thread: the job's generator is closed before its next step
//   main ─{stats, job}─► thread, once the jobs before it are done ─{stats, job, stats}─► main

import { parentPort, workerData } from 'node:worker_threads';
import type { BlockPoolStats } from '../kv-cache/block-pool.ts';
import { loadLlamaFolder } from '../loader/load-llama-folder.ts';
import { createModel, type ModelOptions } from './create-model.ts';
import { generate, type GenerationEvent, type GenerationRequest } from './generation.ts';

export interface ThreadData {
  readonly folder: string;
  readonly options: ModelOptions;
}

export type ThreadMessage =
  | { readonly type: 'ready' }
  | { readonly type: 'failed'; readonly message: string }
  | { readonly type: 'events'; readonly job: number; readonly events: GenerationEvent[] }
  | { readonly type: 'done'; readonly job: number }
  | { readonly type: 'error'; readonly job: number; readonly message: string }
  | { readonly type: 'stats'; readonly job: number; readonly stats: ThreadStats };

/** A thread's KV block pool, and how many tokens it has generated since it started. */
export interface ThreadStats {
  readonly kv: BlockPoolStats;
  readonly generatedTokens: number;
}

/** A request as a thread takes it: token ids only (text, and so stop strings, stay on the caller's side). */
export type ThreadRequest = Omit<GenerationRequest, 'textStream' | 'stopStrings'>;

export type GenerateMessage =
  | {
      readonly type: 'generate';
      readonly job: number;
      readonly requests: readonly ThreadRequest[];
    }
  | { readonly type: 'cancel'; readonly job: number }
  | { readonly type: 'stats'; readonly job: number };

const port = parentPort;
if (port === null) throw new Error('generation-thread.ts runs as a worker thread');
const data = workerData as ThreadData;

const loaded = await loadLlamaFolder(data.folder);
const created = loaded.ok ? createModel(loaded.config, loaded.weights, data.options) : null;
if (!loaded.ok) port.postMessage({ type: 'failed', message: loaded.message });
else if (created !== null && !created.ok)
  port.postMessage({ type: 'failed', message: created.message });
else if (created !== null) {
  const model = created.model;
  const cancelled = new Set<number>();
  let generatedTokens = 0;
  // Jobs run one at a time, in the order they came.
  let queue = Promise.resolve();
  const run = async (job: number, requests: readonly ThreadRequest[]): Promise<void> => {
    const events = generate(model, model.pool!, requests);
    try {
      let batch: GenerationEvent[] = [];
      for (const event of events) {
        if (event.kind === 'token') generatedTokens += 1;
        batch.push(event);
        // One message a step: a step yields one event per live sequence.
        if (batch.length >= requests.length) {
          port.postMessage({ type: 'events', job, events: batch });
          batch = [];
          await new Promise<void>((resolve) => setImmediate(resolve)); // let a cancel in
          if (cancelled.has(job)) break; // the for…of closes the generator: blocks freed
        }
      }
      if (batch.length > 0) port.postMessage({ type: 'events', job, events: batch });
      port.postMessage({ type: 'done', job });
    } catch (error) {
      port.postMessage({ type: 'error', job, message: (error as Error).message });
    } finally {
      cancelled.delete(job);
    }
  };
  port.on('message', (message: GenerateMessage) => {
    if (message.type === 'cancel') cancelled.add(message.job);
    else if (message.type === 'stats')
      queue = queue.then(() =>
        port.postMessage({
          type: 'stats',
          job: message.job,
          stats: { kv: model.pool!.stats(), generatedTokens } satisfies ThreadStats,
        }),
      );
    else queue = queue.then(() => run(message.job, message.requests));
  });
  port.postMessage({ type: 'ready' });
}
