// The dynamic batcher bound to a model runtime: its executor joins a batch's requests along
// dim 0, runs the model once, and splits the outputs back by each request's rows.
//
//   batch of n requests ─► concatRequests ─► runtime.infer (once) ─► splitOutputs ─► n outcomes
//                                                  │ failed, threw, or could not be split
//                                                  └─► each request alone, so one bad request
//                                                      cannot fail its neighbours
//
// Joining needs every input and output of the model to be batched along dim 0 (declared
// first dimension -1). A model with a fixed-size output (a label table [3]) or an open-rank
// one cannot be split back by rows, however many rows the batch has: its requests still
// queue (deadlines, priorities, shedding), but each runs alone.
//
// Unless the config says `adaptive: false`, the batcher gathers only while measured per-row
// costs say it pays (adaptive-gathering.ts); the config's delay and size stay upper bounds.

import type { InferOutcome, InferRequest, ModelRuntime } from '../../runtimes/runtime.ts';
import type { BatchingConfig } from '../../store/serving-records.ts';
import {
  AdaptiveGathering,
  defaultAdaptiveGathering,
  type AdaptiveGatheringHooks,
  type AdaptiveGatheringOptions,
} from './adaptive-gathering.ts';
import { monotonicClock, timerScheduler } from './batch-timers.ts';
import { concatRequests, splitOutputs } from './batch-tensors.ts';
import {
  DynamicBatcher,
  type BatchRun,
  type BatcherClock,
  type BatcherHooks,
  type BatcherScheduler,
} from './dynamic-batcher.ts';

export type InferBatcher = DynamicBatcher<InferRequest, InferOutcome>;

/** The batcher's hooks, and one for every model execution (a rerun alone counts too). */
export interface InferBatcherHooks extends BatcherHooks, AdaptiveGatheringHooks {
  /** The model is about to run once, on `rows` rows. */
  onExecution?(rows: number): void;
}

export interface InferBatcherOptions {
  readonly hooks?: InferBatcherHooks;
  readonly clock?: BatcherClock;
  readonly scheduler?: BatcherScheduler;
  /** The adaptive batcher's tuning (tests); used unless the config has `adaptive: false`. */
  readonly adaptive?: AdaptiveGatheringOptions;
}

export function createInferBatcher(
  runtime: Pick<ModelRuntime, 'infer' | 'inputs' | 'outputs'>,
  config: BatchingConfig,
  options: InferBatcherOptions = {},
): InferBatcher {
  const joinable = joinsAlongRows(runtime);
  const adaptive =
    config.adaptive === false
      ? undefined
      : new AdaptiveGathering(options.adaptive ?? defaultAdaptiveGathering, options.hooks ?? {});
  return new DynamicBatcher<InferRequest, InferOutcome>({
    config,
    executor: (requests, _rows, run) =>
      runBatch(
        runtime,
        requests,
        joinable,
        options.hooks?.onExecution?.bind(options.hooks),
        run,
        options.clock ?? monotonicClock,
      ),
    clock: options.clock ?? monotonicClock,
    scheduler: options.scheduler ?? timerScheduler,
    ...(options.hooks === undefined ? {} : { hooks: options.hooks }),
    ...(adaptive === undefined ? {} : { adaptive }),
  });
}

/** Whether every declared input and output of the model has the batch as its first dimension. */
export function joinsAlongRows(runtime: Pick<ModelRuntime, 'inputs' | 'outputs'>): boolean {
  const batched = (spec: { readonly shape: readonly number[] }): boolean =>
    spec.shape.length > 0 && spec.shape[0] === -1;
  return (
    runtime.inputs.length > 0 && runtime.inputs.every(batched) && runtime.outputs.every(batched)
  );
}

/**
 * Runs requests that share a shape key as one model execution when the model joins along
 * rows (`joinable`), else one by one; one outcome per request, in order.
 */
export async function runBatch(
  model: Pick<ModelRuntime, 'infer'>,
  requests: readonly InferRequest[],
  joinable = true,
  onExecution?: (rows: number) => void,
  batch?: BatchRun,
  clock: BatcherClock = monotonicClock,
): Promise<InferOutcome[]> {
  // Every model call goes through here, so each is counted with its own rows, and the batch
  // notes when the model ran (first call's start to last call's end) for its trace.
  const run = async (request: InferRequest): Promise<InferOutcome> => {
    onExecution?.(request.inputs[0]?.shape[0] ?? 1);
    if (batch === undefined) return model.infer(request);
    if (batch.workStartedMicros < 0) batch.workStartedMicros = clock.nowMicros();
    try {
      return await model.infer(request);
    } finally {
      batch.workEndedMicros = clock.nowMicros();
    }
  };
  if (requests.length === 1 || !joinable) return eachAlone(run, requests);
  let outcome: InferOutcome;
  try {
    outcome = await run(concatRequests(requests));
  } catch {
    return eachAlone(run, requests);
  }
  if (!outcome.ok) return eachAlone(run, requests);
  const split = splitOutputs(
    outcome.outputs,
    requests.map((r) => r.inputs[0]?.shape[0] ?? 0),
  );
  // Outputs not laid out by rows after all: each request's own run is the only safe answer.
  if (!split.ok) return eachAlone(run, requests);
  return split.outputs.map((outputs) => ({ ok: true, outputs }));
}

async function eachAlone(
  run: (request: InferRequest) => Promise<InferOutcome>,
  requests: readonly InferRequest[],
): Promise<InferOutcome[]> {
  const each: InferOutcome[] = [];
  for (const request of requests) {
    try {
      each.push(await run(request));
    } catch (error) {
      each.push({ ok: false, kind: 'failed', message: `the model failed: ${String(error)}` });
    }
  }
  return each;
}
