// The dynamic batcher bound to a model runtime: its executor joins a batch's requests along
// dim 0, runs the model once, and splits the outputs back by each request's rows.
//
//   batch of n requests ─► concatRequests ─► runtime.infer (once) ─► splitOutputs ─► n outcomes
//                                                  │ failed
//                                                  └─► each request alone, so one bad request
//                                                      cannot fail its neighbours

import type { InferOutcome, InferRequest, ModelRuntime } from '../../runtimes/runtime.ts';
import type { BatchingConfig } from '../../store/serving-records.ts';
import { monotonicClock, timerScheduler } from './batch-timers.ts';
import { concatRequests, splitOutputs } from './batch-tensors.ts';
import {
  DynamicBatcher,
  type BatcherClock,
  type BatcherHooks,
  type BatcherScheduler,
} from './dynamic-batcher.ts';

export type InferBatcher = DynamicBatcher<InferRequest, InferOutcome>;

export interface InferBatcherOptions {
  readonly hooks?: BatcherHooks;
  readonly clock?: BatcherClock;
  readonly scheduler?: BatcherScheduler;
}

export function createInferBatcher(
  runtime: Pick<ModelRuntime, 'infer'>,
  config: BatchingConfig,
  options: InferBatcherOptions = {},
): InferBatcher {
  return new DynamicBatcher<InferRequest, InferOutcome>({
    config,
    executor: (requests) => runBatch(runtime, requests),
    clock: options.clock ?? monotonicClock,
    scheduler: options.scheduler ?? timerScheduler,
    ...(options.hooks === undefined ? {} : { hooks: options.hooks }),
  });
}

/** Runs requests that share a shape key as one model execution; one outcome per request. */
export async function runBatch(
  runtime: Pick<ModelRuntime, 'infer'>,
  requests: readonly InferRequest[],
): Promise<InferOutcome[]> {
  const only = requests[0];
  if (requests.length === 1 && only !== undefined) return [await runtime.infer(only)];
  const outcome = await runtime.infer(concatRequests(requests));
  if (!outcome.ok) {
    const each: InferOutcome[] = [];
    for (const request of requests) each.push(await runtime.infer(request));
    return each;
  }
  const split = splitOutputs(
    outcome.outputs,
    requests.map((r) => r.inputs[0]?.shape[0] ?? 0),
  );
  if (!split.ok) {
    return requests.map(() => ({ ok: false, kind: 'failed', message: split.message }));
  }
  return split.outputs.map((outputs) => ({ ok: true, outputs }));
}
