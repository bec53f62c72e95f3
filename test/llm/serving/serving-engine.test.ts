// The in-process serving engine on the tiny-llama fixture: many concurrent greedy requests
// each get exactly what they get alone (also when a tiny KV cache forces preemption, with
// prefix caching on and off, paused and resumed); cancellation frees blocks at once; static
// batching admits nothing while a batch runs; seeds reproduce; stop strings and tokens end
// with 'stop'.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  comparable,
  drain,
  greedy,
  inProcess,
  readReference,
  runAlone,
  thirtyTwoRequests,
} from './serving-fixture.ts';

test('32 concurrent greedy requests each produce what they produce alone', async () => {
  const requests = await thirtyTwoRequests();
  const alone = runAlone(await inProcess({ prefixCaching: false }), requests);
  const engine = await inProcess();
  for (const request of requests) assert.deepEqual(engine.add(request), { ok: true });
  const together = drain(engine);
  for (const request of requests) {
    const outcome = together.get(request.requestId);
    assert.ok(outcome?.done, `${request.requestId} finished`);
    assert.equal(outcome.done.reason, 'length');
    assert.equal(outcome.tokens.length, request.maxTokens);
    assert.deepEqual(
      comparable(outcome),
      comparable(alone.get(request.requestId)),
      request.requestId,
    );
  }
  const stats = engine.stats();
  assert.equal(
    stats.generationTokensTotal,
    requests.reduce((n, r) => n + r.maxTokens, 0),
  );
  assert.equal(stats.kvBlocksUsed, 0, 'every block free at the end');
  // Several sequences really ran in one step: far fewer steps than tokens.
  assert.ok(stats.stepsTotal < stats.generationTokensTotal / 4, `${stats.stepsTotal} steps`);
});

test('the engine gives the greedy tokens and text PyTorch gives', async () => {
  const reference = await readReference();
  const engine = await inProcess();
  reference.prompts.forEach((p, i) => engine.add(greedy(`p${i}`, p.ids, 32)));
  const outcomes = drain(engine);
  reference.prompts.forEach((p, i) => {
    assert.deepEqual(outcomes.get(`p${i}`)?.tokens, p.greedyIds, `prompt ${i}`);
    assert.equal(outcomes.get(`p${i}`)?.text, p.greedyText, `prompt ${i}`);
  });
});
