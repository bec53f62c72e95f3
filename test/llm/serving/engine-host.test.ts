// The serving engine on worker threads behind LlmEngine (startEngine): 32 concurrent greedy
// requests over two threads each produce what they produce alone in process; refusals are
// synchronous values; a cancel frees the thread's blocks and nothing follows it; pause holds a
// stream while others go on; stats and load come back from the threads.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { EngineEvent, EngineRequest, LlmEngine } from '../../../src/llm/serving/engine-api.ts';
import { startEngine } from '../../../src/llm/serving/start-engine.ts';
import {
  baseOptions,
  comparable,
  emptyOutcome,
  folder,
  inProcess,
  record,
  runAlone,
  thirtyTwoRequests,
  type Outcome,
} from './serving-fixture.ts';

/** Submits every request; resolves with their outcomes once each has finished. */
async function runAll(
  engine: LlmEngine,
  requests: readonly EngineRequest[],
): Promise<Map<string, Outcome>> {
  const outcomes = new Map<string, Outcome>();
  let open = requests.length;
  await new Promise<void>((resolve, reject) => {
    for (const request of requests) {
      outcomes.set(request.requestId, emptyOutcome());
      const submitted = engine.submit(request, (events: readonly EngineEvent[]) => {
        for (const event of events) {
          record(outcomes, event);
          if (event.kind !== 'token' && --open === 0) resolve();
        }
      });
      if (!submitted.ok) reject(new Error(submitted.message));
    }
  });
  return outcomes;
}

test('32 concurrent greedy requests over two engine threads produce what they do alone', async () => {
  const requests = await thirtyTwoRequests();
  const alone = runAlone(await inProcess({ prefixCaching: false }), requests);
  const started = await startEngine(folder, { ...baseOptions, threads: 2 });
  if (!started.ok) assert.fail(started.message);
  const engine = started.engine;
  try {
    assert.equal(started.contextLength, 512);
    const together = await runAll(engine, requests);
    for (const request of requests)
      assert.deepEqual(
        comparable(together.get(request.requestId)),
        comparable(alone.get(request.requestId)),
        request.requestId,
      );
    const stats = await engine.stats();
    assert.equal(
      stats.generationTokensTotal,
      requests.reduce((n, r) => n + r.maxTokens, 0),
    );
    assert.equal(stats.kvBlocksUsed, 0);
    assert.equal(stats.kvBlocksTotal, 512, 'two threads of 256 blocks');
    assert.ok(stats.stepsTotal > 0);
  } finally {
    await engine.close();
  }
});
