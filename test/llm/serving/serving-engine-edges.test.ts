// Edges of the in-process engine. The model failing mid-step: the step's sequences end with an error
// event and give back every block, sequences not in that step (paused, or waiting) carry on to
// their outputs alone, and the engine keeps serving.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { LlamaModel } from '../../../src/llm/model/llama-model.ts';
import type { EngineEvent, EngineTokenEvent } from '../../../src/llm/serving/engine-api.ts';
import {
  comparable,
  drain,
  greedy,
  inProcess,
  readReference,
  record,
  runAlone,
  type Outcome,
} from './serving-fixture.ts';

test('a model failure mid-step ends that step’s sequences with an error and frees their blocks', async () => {
  const long = (await readReference()).prompts.find((p) => p.ids.length > 200)!.ids;
  const requests = [0, 1, 2, 3].map((i) => greedy(`m${i}`, long.slice(i * 20, i * 20 + 40), 20));
  const alone = runAlone(await inProcess(), requests);
  // maxNumBatchedTokens 16: a 40-token prefill takes several forward calls and steps.
  const engine = await inProcess({ maxNumBatchedTokens: 16, prefixCaching: true });
  const model = (engine as unknown as { model: LlamaModel }).model;
  const outcomes = new Map<string, Outcome>();
  for (const request of requests.slice(0, 3)) engine.add(request);
  for (let i = 0; i < 5; i++) for (const e of engine.step().events) record(outcomes, e);
  engine.pause('m0'); // not scheduled in the failing step: it must survive it
  const forward = model.forward.bind(model);
  let calls = 0;
  model.forward = (steps) => {
    calls += 1;
    if (calls === 1) {
      forward(steps.slice(0, 1)); // part of the step done, then the failure
      throw new Error('simulated failure');
    }
    return forward(steps);
  };
  const failed = engine.step().events;
  for (const e of failed) record(outcomes, e);
  const errored = failed.filter((e) => e.kind === 'error').map((e) => e.requestId);
  assert.deepEqual(errored.sort(), ['m1', 'm2']);
  assert.equal(engine.inspect('m1'), null);
  assert.equal(engine.inspect('m2'), null);
  const held = engine.inspect('m0')!.numBlocks;
  assert.equal(engine.load().kvBlocksUsed, held, 'only the paused sequence holds blocks');
  engine.resume('m0');
  engine.add(requests[3]!);
  drain(engine, outcomes);
  for (const id of ['m0', 'm3'])
    assert.deepEqual(comparable(outcomes.get(id)), comparable(alone.get(id)), id);
  assert.equal(engine.load().kvBlocksUsed, 0);
  // The blocks the failed step was writing are not in the prefix cache: the same prompts
  // again give their outputs alone.
  const again = requests.slice(1, 3).map((r) => ({ ...r, requestId: `${r.requestId}-again` }));
  for (const r of again) engine.add(r);
  const rerun = drain(engine);
  for (const [i, r] of again.entries())
    assert.deepEqual(
      comparable(rerun.get(r.requestId)),
      comparable(alone.get(requests[i + 1]!.requestId)),
    );
});

test('static batching: a paused sequence evicted past maxPausedBlocks lets the next batch in at that step', async () => {
  // The engine thread stops stepping after a step that schedules nothing and says nothing
  // (it waits for a message): such a step while a request waits for an empty batch would
  // stall it until someone else submits, resumes or cancels.
  const long = (await readReference()).prompts.find((p) => p.ids.length > 200)!.ids;
  const engine = await inProcess({ batching: 'static', maxPausedBlocks: 0 });
  const outcomes = new Map<string, Outcome>();
  engine.add(greedy('a', long.slice(0, 30), 40));
  for (let i = 0; i < 3; i++) for (const e of engine.step().events) record(outcomes, e);
  engine.add(greedy('c', long.slice(50, 70), 5));
  engine.pause('a');
  assert.equal(engine.inspect('c')?.state, 'waiting');
  const step = engine.step();
  assert.equal(engine.inspect('a')?.state, 'waiting', 'the paused one gave its blocks back');
  assert.equal(engine.inspect('c')?.state, 'running', 'the empty batch took the waiting one');
  assert.ok(step.numScheduledTokens > 0);
  engine.resume('a');
  drain(engine, outcomes);
  assert.equal(outcomes.get('c')?.done?.reason, 'length');
  assert.equal(outcomes.get('a')?.done?.reason, 'length');
});

test('edges: prompt + max_tokens exactly the context; max_tokens 1; greedy log-probabilities', async () => {
  const long = (await readReference()).prompts.find((p) => p.ids.length > 200)!.ids;
  const engine = await inProcess();
  const prompt = [...long, ...long, ...long].slice(0, 500);
  assert.deepEqual(engine.add(greedy('ctx', prompt, 12)), { ok: true });
  assert.equal(engine.add(greedy('over', prompt, 13)).ok, false);
  // A prompt of exactly two blocks, its first block cached by 'ctx': the last token still runs.
  const twoBlocks = prompt.slice(0, 32);
  const withLogprobs = greedy('lp', twoBlocks, 6, { sampling: { temperature: 0, logprobs: 4 } });
  engine.add(greedy('one', twoBlocks, 1));
  const outcomes = drain(engine);
  assert.equal(outcomes.get('ctx')?.done?.reason, 'length');
  assert.equal(outcomes.get('ctx')?.tokens.length, 12);
  assert.equal(outcomes.get('one')?.tokens.length, 1);
  assert.equal(outcomes.get('one')?.done?.cachedPromptTokens, 16);
  const events: EngineEvent[] = [];
  engine.add(withLogprobs);
  while (engine.hasWork()) events.push(...engine.step().events);
  const tokens = events.filter((e): e is EngineTokenEvent => e.kind === 'token');
  assert.equal(tokens.length, 6);
  assert.equal(tokens[0]!.token, outcomes.get('one')!.tokens[0]);
  for (const t of tokens) {
    // Greedy picks the most likely token: it heads the top list, with the same log-probability.
    assert.equal(t.topLogprobs.length, 4);
    assert.equal(t.topLogprobs[0]!.token, t.token);
    assert.equal(t.topLogprobs[0]!.logprob, t.logprob);
    for (let i = 1; i < 4; i++)
      assert.ok(t.topLogprobs[i]!.logprob <= t.topLogprobs[i - 1]!.logprob);
  }
});

test('pausing past maxPausedBlocks evicts at once, though no step follows (every sequence paused)', async () => {
  // An engine thread steps only while something is unpaused: an eviction left for the next
  // step would keep the blocks over budget until other work arrives.
  const long = (await readReference()).prompts.find((p) => p.ids.length > 200)!.ids;
  const request = greedy('idle', long.slice(0, 40), 30);
  const alone = runAlone(await inProcess(), [request]);
  const engine = await inProcess({ maxPausedBlocks: 1, prefixCaching: false });
  const outcomes = new Map<string, Outcome>();
  engine.add(request);
  while ((outcomes.get('idle')?.tokens.length ?? 0) < 5)
    for (const e of engine.step().events) record(outcomes, e);
  assert.ok(engine.inspect('idle')!.numBlocks > 1);
  engine.pause('idle');
  assert.equal(engine.hasWork(), false, 'nothing left to step');
  assert.deepEqual(engine.inspect('idle'), {
    state: 'waiting',
    paused: true,
    numComputed: 0,
    numOutputTokens: 5,
    numBlocks: 0,
  });
  const stats = engine.stats();
  assert.equal(stats.kvBlocksUsed, 0);
  assert.equal(stats.pausedEvictionsTotal, 1);
  assert.equal(stats.preemptionsTotal, 1);
  engine.resume('idle');
  drain(engine, outcomes);
  assert.deepEqual(comparable(outcomes.get('idle')), comparable(alone.get('idle')));
});
