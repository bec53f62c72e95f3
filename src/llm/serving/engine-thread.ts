// One engine thread of an EngineHost (engine-host.ts): builds its own ServingEngine (a model
// replica, KV cache and tokenizer of its own) and runs its step loop, posting each step's
// events and the load after it. Between steps the thread returns to its event loop
// (setImmediate), so submits, cancels, pauses and resumes get in at every step; with nothing
// to run the loop stops (no spinning) until a message brings work.
//
//   main ─{submit|cancel|pause|resume}─► thread ─{step: events, load}*─► main
//   main ─{stats, job}─► thread ─{stats, job, stats}─► main
//   thread ─{ready, limits} | {failed, message}─► main, once at the start

import { parentPort, workerData } from 'node:worker_threads';
import { createServingEngine, type ServingEngineSetup } from './create-serving-engine.ts';
import type { EngineEvent, EngineLoad, EngineRequest, EngineStats } from './engine-api.ts';

export interface EngineThreadData {
  readonly folder: string;
  readonly options: ServingEngineSetup;
}

export interface EngineThreadLimits {
  readonly contextLength: number;
  readonly vocabSize: number;
  /** Positions the KV cache holds in all (a longer prompt can never run). */
  readonly kvCapacityTokens: number;
  readonly load: EngineLoad;
}

export type EngineThreadMessage =
  | { readonly type: 'ready'; readonly limits: EngineThreadLimits }
  | { readonly type: 'failed'; readonly message: string }
  | {
      readonly type: 'step';
      readonly events: readonly EngineEvent[];
      readonly load: EngineLoad;
      /** Submits the thread has taken so far (the host counts the rest as waiting). */
      readonly received: number;
    }
  | {
      readonly type: 'stats';
      readonly job: number;
      readonly stats: EngineStats;
      /** As in a step's message: the stats' load is the thread's latest (the host takes it). */
      readonly received: number;
    };

export type EngineHostMessage =
  | { readonly type: 'submit'; readonly request: EngineRequest }
  | { readonly type: 'cancel' | 'pause' | 'resume'; readonly requestId: string }
  | { readonly type: 'stats'; readonly job: number };

const port = parentPort;
if (port === null) throw new Error('engine-thread.ts runs as a worker thread');
const data = workerData as EngineThreadData;
const post = (message: EngineThreadMessage): void => port.postMessage(message);

const created = await createServingEngine(data.folder, data.options);
if (!created.ok) post({ type: 'failed', message: created.message });
else {
  const engine = created.engine;
  let received = 0;
  let looping = false;
  const report = (events: readonly EngineEvent[]): void =>
    post({ type: 'step', events, load: engine.load(), received });
  const loop = (): void => {
    if (!engine.hasWork()) {
      looping = false;
      report([]);
      return;
    }
    const outcome = engine.step();
    report(outcome.events);
    // Nothing could run (e.g. only paused sequences hold the batch): wait for a message.
    if (outcome.numScheduledTokens === 0 && outcome.events.length === 0) {
      looping = false;
      return;
    }
    setImmediate(loop);
  };
  const kick = (): void => {
    if (looping) return;
    looping = true;
    setImmediate(loop);
  };
  port.on('message', (message: EngineHostMessage) => {
    switch (message.type) {
      case 'submit': {
        received += 1;
        const added = engine.add(message.request);
        if (!added.ok)
          report([{ kind: 'error', requestId: message.request.requestId, message: added.message }]);
        break;
      }
      case 'cancel':
        engine.cancel(message.requestId);
        break;
      case 'pause':
        engine.pause(message.requestId);
        break;
      case 'resume':
        engine.resume(message.requestId);
        break;
      case 'stats':
        post({ type: 'stats', job: message.job, stats: engine.stats(), received });
        return;
    }
    // The load changed (blocks freed, a sequence paused): tell the host now, not after a step.
    if (!looping) report([]);
    kick();
  });
  const pool = engine.load();
  post({
    type: 'ready',
    limits: {
      contextLength: engine.contextLength,
      vocabSize: created.modelConfig.vocabSize,
      kvCapacityTokens: pool.kvBlocksTotal * data.options.blockSize,
      load: pool,
    },
  });
}
