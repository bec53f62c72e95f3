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
  record,
  runAlone,
  thirtyTwoRequests,
  type Outcome,
} from './serving-fixture.ts';
import type { EngineRequest } from '../../../src/llm/serving/engine-api.ts';

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

/** Ten requests whose sequences each fit a 12-block cache alone, but not together. */
async function tenRequests(prefix: string): Promise<EngineRequest[]> {
  const long = (await readReference()).prompts.find((p) => p.ids.length > 200)!.ids;
  return Array.from({ length: 10 }, (_, i) =>
    greedy(`${prefix}${i}`, long.slice(i * 17, i * 17 + 10 + i * 5), 30 + (i % 4) * 5),
  );
}

test('a tiny KV cache forces preemptions and every output is still what it is alone', async () => {
  const requests = await tenRequests('t');
  const alone = runAlone(await inProcess({ prefixCaching: false }), requests);
  for (const prefixCaching of [false, true]) {
    // 12 blocks of 16 positions: one sequence needs up to 7.
    const engine = await inProcess({ kvCacheBytes: 12 * 16384, prefixCaching });
    for (const request of requests) assert.deepEqual(engine.add(request), { ok: true });
    const outcomes = drain(engine);
    const stats = engine.stats();
    assert.ok(stats.preemptionsTotal > 0, `preemptions: ${stats.preemptionsTotal}`);
    for (const request of requests)
      assert.deepEqual(
        comparable(outcomes.get(request.requestId)),
        comparable(alone.get(request.requestId)),
        `${request.requestId}, prefix caching ${prefixCaching}`,
      );
    assert.equal(stats.kvBlocksUsed, 0);
    if (!prefixCaching) continue;
    // Recomputes after preemption found their own blocks in the cache, but no two prompts
    // share a first block: each computed its whole prompt at its first admission, and that is
    // what usage reports as cached (0), not a later admission's hit.
    assert.ok(stats.prefixHitTokensTotal > 0, 'some recompute hit the cache');
    for (const request of requests)
      assert.equal(outcomes.get(request.requestId)?.done?.cachedPromptTokens, 0, request.requestId);
  }
});

test('cancel frees the blocks at once and no event follows', async () => {
  const requests = await tenRequests('c');
  const engine = await inProcess();
  const before = engine.load().kvBlocksUsed;
  engine.add(requests[9]!);
  const outcomes = new Map<string, Outcome>();
  for (let i = 0; i < 5; i++) for (const e of engine.step().events) record(outcomes, e);
  assert.ok(engine.load().kvBlocksUsed > before);
  engine.cancel('c9');
  assert.equal(engine.load().kvBlocksUsed, before, 'back to the prior value at once');
  assert.equal(engine.hasWork(), false);

  // Among others: exactly the cancelled one's blocks come back, and only it goes quiet.
  for (const request of requests.slice(0, 4)) engine.add(request);
  for (let i = 0; i < 6; i++) for (const e of engine.step().events) record(outcomes, e);
  const used = engine.load().kvBlocksUsed;
  const held = engine.inspect('c1')!.numBlocks;
  assert.ok(held > 0);
  const tokensBefore = outcomes.get('c1')!.tokens.length;
  engine.cancel('c1');
  assert.equal(engine.load().kvBlocksUsed, used - held);
  assert.equal(engine.inspect('c1'), null);
  drain(engine, outcomes);
  assert.equal(outcomes.get('c1')!.tokens.length, tokensBefore, 'no token after the cancel');
  assert.equal(outcomes.get('c1')!.done, null, 'no done event either');
  for (const id of ['c0', 'c2', 'c3']) assert.equal(outcomes.get(id)?.done?.reason, 'length');
  assert.equal(engine.load().kvBlocksUsed, 0);
  engine.cancel('unknown'); // a no-op
});

test('a shared system prompt is computed once: prefix hits, and the same outputs on and off', async () => {
  const long = (await readReference()).prompts.find((p) => p.ids.length > 200)!.ids;
  const system = long.slice(0, 100);
  const requests = Array.from({ length: 12 }, (_, i) =>
    greedy(`s${i}`, [...system, ...long.slice(120 + i * 7, 125 + i * 9)], 20),
  );
  const run = async (prefixCaching: boolean) => {
    const engine = await inProcess({ prefixCaching });
    engine.add(requests[0]!);
    const outcomes = drain(engine); // the first computes the system prompt …
    for (const request of requests.slice(1)) engine.add(request);
    drain(engine, outcomes); // … the others find it in the cache
    return { outcomes, stats: engine.stats() };
  };
  const on = await run(true);
  const off = await run(false);
  for (const request of requests)
    assert.deepEqual(
      comparable(on.outcomes.get(request.requestId)),
      comparable(off.outcomes.get(request.requestId)),
      request.requestId,
    );
  // Every request after the first reuses the system prompt's 6 full blocks (96 tokens).
  for (const request of requests.slice(1))
    assert.equal(on.outcomes.get(request.requestId)?.done?.cachedPromptTokens, 96);
  assert.equal(on.outcomes.get('s0')?.done?.cachedPromptTokens, 0);
  assert.equal(on.stats.prefixHitTokensTotal, 96 * 11);
  assert.equal(
    on.stats.prefixQueriedTokensTotal,
    requests.reduce((n, r) => n + r.promptTokens.length, 0),
  );
  assert.equal(off.stats.prefixHitTokensTotal, 0);
  assert.equal(off.stats.prefixQueriedTokensTotal, 0, 'nothing looked up with caching off');
  for (const request of requests)
    assert.equal(off.outcomes.get(request.requestId)?.done?.cachedPromptTokens, 0);
});

test('a paused sequence keeps its blocks while others go on, and resumes where it was', async () => {
  const requests = await tenRequests('p');
  const alone = runAlone(await inProcess(), requests.slice(0, 3));
  const engine = await inProcess();
  for (const request of requests.slice(0, 3)) engine.add(request);
  const outcomes = new Map<string, Outcome>();
  const step = () => {
    for (const e of engine.step().events) record(outcomes, e);
  };
  while ((outcomes.get('p0')?.tokens.length ?? 0) < 3) step();
  engine.pause('p0');
  const held = engine.inspect('p0')!;
  const others = outcomes.get('p1')!.tokens.length;
  for (let i = 0; i < 10; i++) step();
  assert.equal(outcomes.get('p0')!.tokens.length, 3, 'no token while paused');
  assert.deepEqual(engine.inspect('p0'), { ...held, paused: true }, 'blocks kept');
  assert.ok(held.numBlocks > 0);
  assert.equal(outcomes.get('p1')!.tokens.length, others + 10, 'the others kept going');
  assert.deepEqual(engine.load().paused, 1);
  engine.resume('p0');
  drain(engine, outcomes);
  for (const id of ['p0', 'p1', 'p2'])
    assert.deepEqual(comparable(outcomes.get(id)), comparable(alone.get(id)), id);
  assert.equal(engine.stats().pausedEvictionsTotal, 0);
});

test('past maxPausedBlocks a paused sequence is preempted and recomputes identically when resumed', async () => {
  const requests = await tenRequests('q');
  const alone = runAlone(await inProcess(), requests.slice(0, 2));
  // At most 1 block paused: q0 (2 blocks once its 10-token prompt has 10 more) is evicted
  // when it is paused.
  const engine = await inProcess({ maxPausedBlocks: 1, prefixCaching: false });
  for (const request of requests.slice(0, 2)) engine.add(request);
  const outcomes = new Map<string, Outcome>();
  while ((outcomes.get('q0')?.tokens.length ?? 0) < 10)
    for (const e of engine.step().events) record(outcomes, e);
  assert.ok(engine.inspect('q0')!.numBlocks > 1);
  engine.pause('q0');
  for (const e of engine.step().events) record(outcomes, e);
  assert.deepEqual(engine.inspect('q0'), {
    state: 'waiting',
    paused: true,
    numComputed: 0,
    numOutputTokens: 10,
    numBlocks: 0,
  });
  const stats = engine.stats();
  assert.equal(stats.pausedEvictionsTotal, 1);
  assert.equal(stats.preemptionsTotal, 1);
  // Still paused: not admitted again while the other finishes.
  drain(engine, outcomes);
  assert.equal(outcomes.get('q0')!.tokens.length, 10);
  assert.equal(engine.inspect('q0')?.state, 'waiting');
  engine.resume('q0');
  drain(engine, outcomes);
  for (const id of ['q0', 'q1'])
    assert.deepEqual(comparable(outcomes.get(id)), comparable(alone.get(id)), id);
});

test('static batching admits nothing while a batch runs', async () => {
  const requests = await tenRequests('b');
  const engine = await inProcess({ batching: 'static' });
  engine.add(greedy('b0', requests[0]!.promptTokens, 5));
  engine.add(greedy('b1', requests[1]!.promptTokens, 12));
  const outcomes = new Map<string, Outcome>();
  for (const e of engine.step().events) record(outcomes, e);
  engine.add(greedy('b2', requests[2]!.promptTokens, 5));
  let steps = 0;
  while (outcomes.get('b1')?.done == null) {
    assert.equal(engine.inspect('b2')?.state, 'waiting', `step ${steps}: b2 waits for the batch`);
    for (const e of engine.step().events) record(outcomes, e);
    steps += 1;
  }
  assert.ok(outcomes.get('b0')?.done, 'b0 ended first; b2 still waited for b1');
  assert.equal(outcomes.get('b2'), undefined);
  drain(engine, outcomes);
  assert.equal(outcomes.get('b2')?.done?.reason, 'length');

  // Continuous batching admits the newcomer at the next step.
  const continuous = await inProcess();
  continuous.add(greedy('b0', requests[0]!.promptTokens, 12));
  continuous.step();
  continuous.add(greedy('b2', requests[2]!.promptTokens, 5));
  continuous.step();
  assert.equal(continuous.inspect('b2')?.state, 'running');
});

test('seeded sampling reproduces, alone or batched, with log-probabilities', async () => {
  const requests = await tenRequests('x');
  const sampled = (id: string, seed: number): EngineRequest => ({
    ...greedy(id, requests[3]!.promptTokens, 24),
    sampling: { temperature: 0.9, topP: 0.95, seed, logprobs: 2 },
  });
  const alone = runAlone(await inProcess(), [sampled('x', 42)]).get('x')!;
  const engine = await inProcess();
  engine.add(sampled('a', 42));
  engine.add(sampled('b', 7));
  for (const request of requests.slice(4)) engine.add(request);
  const outcomes = new Map<string, Outcome>();
  const logprobs: (number | null)[] = [];
  while (engine.hasWork())
    for (const e of engine.step().events) {
      record(outcomes, e);
      if (e.kind === 'token' && e.requestId === 'a') {
        logprobs.push(e.logprob);
        assert.equal(e.topLogprobs.length, 2);
      }
    }
  assert.deepEqual(comparable(outcomes.get('a')), comparable(alone));
  assert.notDeepEqual(outcomes.get('b')!.tokens, alone.tokens, 'another seed, other tokens');
  assert.ok(logprobs.every((l) => l !== null && l <= 0));
});

test('a stop token or a stop string ends the request with stop', async () => {
  const requests = await tenRequests('z');
  const prompt = requests[5]!.promptTokens;
  const base = runAlone(await inProcess(), [greedy('g', prompt, 40)]).get('g')!;
  const stopToken = base.tokens[6]!;
  const at = base.tokens.indexOf(stopToken);
  const needle = base.text.slice(12, 15);
  const cut = base.text.indexOf(needle);
  assert.ok(needle.length === 3 && cut > 0);
  const engine = await inProcess();
  engine.add(greedy('token', prompt, 40, { stopTokenIds: [stopToken] }));
  engine.add(greedy('string', prompt, 40, { stopStrings: ['never appears', needle] }));
  const outcomes = drain(engine);
  const byToken = outcomes.get('token')!;
  assert.equal(byToken.done?.reason, 'stop');
  assert.deepEqual(byToken.tokens, base.tokens.slice(0, at + 1));
  assert.ok(base.text.startsWith(byToken.text));
  const byString = outcomes.get('string')!;
  assert.equal(byString.done?.reason, 'stop');
  assert.equal(byString.text, base.text.slice(0, cut));
  assert.ok(byString.tokens.length < 40);
  assert.equal(engine.load().kvBlocksUsed, 0);
});

test('bad requests are refused synchronously with a reason', async () => {
  const engine = await inProcess({ maxWaiting: 2 });
  const ok = greedy('ok', [1, 2, 3], 4);
  assert.equal(engine.add({ ...ok, promptTokens: [] }).ok, false);
  assert.deepEqual(engine.add({ ...ok, maxTokens: 0 }), {
    ok: false,
    reason: 'invalid',
    message: 'max_tokens must be a whole number ≥ 1, not 0',
  });
  assert.equal(engine.add({ ...ok, promptTokens: [5000] }).ok, false);
  const tooLong = engine.add({ ...ok, maxTokens: 510 });
  assert.equal(tooLong.ok === false && tooLong.reason, 'too_long');
  const badSampling = engine.add({ ...ok, sampling: { temperature: -1 } });
  assert.equal(badSampling.ok === false && badSampling.reason, 'invalid');
  assert.deepEqual(engine.add(ok), { ok: true });
  assert.equal(engine.add(ok).ok, false, 'a duplicate id');
  assert.deepEqual(engine.add({ ...ok, requestId: 'ok2' }), { ok: true });
  const full = engine.add({ ...ok, requestId: 'ok3' });
  assert.equal(full.ok === false && full.reason, 'queue_full');
});

test('a sequence that outgrows the whole KV cache ends with kv_cache_full and frees it', async () => {
  const requests = await tenRequests('k');
  const prompt = requests[2]!.promptTokens; // 20 tokens
  const alone = runAlone(await inProcess(), [greedy('k', prompt, 30)]).get('k')!;
  const engine = await inProcess({ kvCacheBytes: 2 * 16384 }); // 2 blocks: 32 positions
  engine.add(greedy('k', prompt, 30));
  const outcome = drain(engine).get('k')!;
  assert.equal(outcome.done?.reason, 'kv_cache_full');
  // Positions 0–31 computed: the token sampled after position 31 is the 13th.
  assert.deepEqual(outcome.tokens, alone.tokens.slice(0, 13));
  assert.ok(alone.text.startsWith(outcome.text));
  assert.equal(engine.load().kvBlocksUsed, 0);
});

test('the paged cache reserves only the unfilled tail of each last block', async () => {
  const requests = await thirtyTwoRequests('w');
  const engine = await inProcess({ prefixCaching: false });
  for (const request of requests) engine.add(request);
  for (let i = 0; i < 20; i++) engine.step();
  const { reservedSlots, filledSlots } = engine.kvSlotUsage();
  const live = requests.filter((r) => engine.inspect(r.requestId) !== null);
  let expectedFilled = 0;
  for (const r of live) expectedFilled += engine.inspect(r.requestId)!.numComputed;
  assert.equal(filledSlots, expectedFilled);
  assert.equal(reservedSlots, engine.load().kvBlocksUsed * 16);
  assert.ok(reservedSlots - filledSlots < live.length * 16);
});

test('n choices of one prompt added together share its full blocks: choices 1..n-1 take them from the cache', async () => {
  // The worker submits a request's n choices at once, each with the same prompt. Admitted in
  // the same step, each would compute the prompt itself; the later ones wait until the first
  // has computed (and cached) the blocks they share, then compute only the rest.
  const long = (await readReference()).prompts.find((p) => p.ids.length > 200)!.ids;
  const prompt = long.slice(0, 100);
  const greedyChoices = [0, 1, 2, 3].map((i) => greedy(`g${i}`, prompt, 20));
  const seeded = [0, 1, 2, 3].map((i) =>
    greedy(`s${i}`, prompt, 20, { sampling: { temperature: 1, seed: 7 + i } }),
  );
  const alone = runAlone(await inProcess({ prefixCaching: false }), [greedyChoices[0]!, ...seeded]);
  // 128 tokens a step: the prompt in one step; 32: over four, the waiting choices wait for all.
  for (const maxNumBatchedTokens of [128, 32]) {
    for (const choices of [greedyChoices, seeded]) {
      const engine = await inProcess({ maxNumBatchedTokens });
      for (const choice of choices) assert.deepEqual(engine.add(choice), { ok: true });
      const outcomes = drain(engine);
      for (const [i, choice] of choices.entries()) {
        const id = choice.requestId;
        const expected = alone.get(id.startsWith('g') ? 'g0' : id);
        assert.deepEqual(comparable(outcomes.get(id)), comparable(expected), id);
        // 96: the prompt's 6 full blocks (its last token always runs).
        assert.equal(outcomes.get(id)?.done?.cachedPromptTokens, i === 0 ? 0 : 96, id);
      }
      const stats = engine.stats();
      assert.equal(stats.prefixHitTokensTotal, 3 * 96, `${maxNumBatchedTokens} tokens a step`);
      assert.equal(stats.kvBlocksUsed, 0);
    }
  }
});
