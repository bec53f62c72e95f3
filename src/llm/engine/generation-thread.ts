// One thread of a ParallelEngine (parallel-engine.ts): loads its own copy of the model (a
// data-parallel replica: weights, kernel arena and KV cache of its own), then runs the
// requests it is given with `generate` and posts their events back, one message per decode
// step's worth of events.
//
//   main ─{load}─► thread: loadLlamaFolder + createModel ─{ready | failed}─► main
//   main ─{generate, job, requests}─► thread: generate(…) ─{events, job, […]}*─{done, job}─► main

import { parentPort, workerData } from 'node:worker_threads';
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
  | { readonly type: 'error'; readonly job: number; readonly message: string };

export interface GenerateMessage {
  readonly type: 'generate';
  readonly job: number;
  /** Without text streams: text is the caller's business on the main thread. */
  readonly requests: readonly Omit<GenerationRequest, 'textStream'>[];
}

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
  port.on('message', (message: GenerateMessage) => {
    try {
      let batch: GenerationEvent[] = [];
      for (const event of generate(model, model.pool!, message.requests)) {
        batch.push(event);
        // One message a step: a step yields one event per live sequence.
        if (batch.length >= message.requests.length) {
          port.postMessage({ type: 'events', job: message.job, events: batch });
          batch = [];
        }
      }
      if (batch.length > 0) port.postMessage({ type: 'events', job: message.job, events: batch });
      port.postMessage({ type: 'done', job: message.job });
    } catch (error) {
      port.postMessage({
        type: 'error',
        job: message.job,
        message: (error as Error).message,
      });
    }
  });
  port.postMessage({ type: 'ready' });
}
