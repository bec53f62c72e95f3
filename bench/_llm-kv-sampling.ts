// bench/llm-serving.ts part (c): a workload run on the in-process ServingEngine (its step
// loop driven here, so that the KV cache can be read between steps), each request added at
// its arrival time. Before every step (where reserved = computed) the engine's block slots,
// reserved and filled (`kvSlotUsage`), and every live request holding blocks (positions
// held, `inspect`) are sampled into a KvWasteMeter, weighted by that step's duration: the
// memory stays as sampled while the step runs.

import { createServingEngine } from '../src/llm/serving/create-serving-engine.ts';
import type { EngineOptions } from '../src/llm/serving/engine-api.ts';
import { KvWasteMeter, type KvSequenceSample, type KvWaste } from './_llm-kv-waste.ts';
import type { WorkloadRequest } from './_llm-workload.ts';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export async function measureKvWaste(
  modelDir: string,
  options: EngineOptions,
  workload: readonly WorkloadRequest[],
): Promise<KvWaste> {
  const { threads: _threads, ...setup } = options;
  const created = await createServingEngine(modelDir, setup);
  if (!created.ok) throw new Error(`creating the engine: ${created.message}`);
  const engine = created.engine;
  const meter = new KvWasteMeter(engine.contextLength);
  const live = new Map<string, WorkloadRequest>();
  let next = 0;
  const start = performance.now();
  while (next < workload.length || engine.hasWork()) {
    const elapsed = performance.now() - start;
    while (next < workload.length && workload[next]!.arrivalMs <= elapsed) {
      const request = workload[next++]!;
      const id = `kv-${request.index}`;
      const added = engine.add({
        requestId: id,
        promptTokens: request.promptTokens,
        maxTokens: request.maxTokens,
        sampling: { temperature: 0 },
        stopTokenIds: [],
        stopStrings: [],
      });
      if (!added.ok) throw new Error(`request ${id} refused: ${added.message}`);
      live.set(id, request);
    }
    if (!engine.hasWork()) {
      await sleep(Math.max(0, workload[next]!.arrivalMs - (performance.now() - start)));
      continue;
    }
    const sequences: KvSequenceSample[] = [];
    for (const [id, request] of live) {
      const state = engine.inspect(id);
      if (state === null || state.numBlocks === 0) continue;
      sequences.push({
        numTokens: state.numComputed,
        promptTokens: request.promptTokens.length,
        maxTokens: request.maxTokens,
      });
    }
    const slots = engine.kvSlotUsage();
    const sample = {
      pagedReservedSlots: slots.reservedSlots,
      pagedFilledSlots: slots.filledSlots,
      sequences,
    };
    const before = performance.now();
    const outcome = engine.step();
    meter.add(sample, performance.now() - before);
    for (const event of outcome.events) if (event.kind !== 'token') live.delete(event.requestId);
  }
  return meter.result();
}
