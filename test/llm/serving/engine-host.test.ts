// The serving engine on worker threads behind LlmEngine (startEngine): 32 concurrent greedy
// requests over two threads each produce what they produce alone in process; refusals are
// synchronous values; a cancel frees the thread's blocks and nothing follows it; pause holds a
// stream while others go on; stats and load come back from the threads.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { EngineEvent, EngineRequest, LlmEngine } from '../../../src/llm/serving/engine-api.ts';
import type { EngineHost } from '../../../src/llm/serving/engine-host.ts';
import { startEngine } from '../../../src/llm/serving/start-engine.ts';
import {
  baseOptions,
  comparable,
  emptyOutcome,
  folder,
  greedy,
  inProcess,
  record,
  runAlone,
  thirtyTwoRequests,
  type Outcome,
} from './serving-fixture.ts';

/** Polls `condition` (no fixed sleeps) until it holds, failing after a generous timeout. */
async function until(condition: () => boolean, what: string, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

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

/** Submits one request, collecting its events into a live outcome. */
function submitOne(engine: LlmEngine, request: EngineRequest): Outcome & { calls: number } {
  const outcome = { ...emptyOutcome(), calls: 0 };
  const submitted = engine.submit(request, (events) => {
    outcome.calls += 1;
    const outcomes = new Map<string, Outcome>([[request.requestId, outcome]]);
    for (const event of events) record(outcomes, event);
  });
  if (!submitted.ok) assert.fail(submitted.message);
  return outcome;
}

test('through the threads: cancel frees the blocks and nothing follows; pause holds one stream while another goes on', async () => {
  const requests = await thirtyTwoRequests('h');
  const long = greedy('long', requests[0]!.promptTokens, 500);
  const paused = greedy('paused', requests[5]!.promptTokens, 400);
  const other = greedy('other', requests[7]!.promptTokens, 60);
  const alone = runAlone(await inProcess(), [paused, other]);
  const started = await startEngine(folder, { ...baseOptions, threads: 1 });
  if (!started.ok) assert.fail(started.message);
  const engine = started.engine;
  try {
    // Cancel: 16 sequences of 500 tokens (far more work than the thread does before the
    // cancels reach it); the blocks come back (the thread reports at once), no event follows.
    const cancelled = Array.from({ length: 16 }, (_, i) =>
      submitOne(engine, greedy(`long${i}`, [...long.promptTokens, i], 500)),
    );
    await until(() => cancelled[0]!.tokens.length >= 2, 'the first tokens');
    await until(() => engine.load().kvBlocksUsed > 0, 'a load report with blocks in use');
    for (let i = 0; i < 16; i++) engine.cancel(`long${i}`);
    const calls = cancelled.map((c) => c.calls);
    await until(() => engine.load().kvBlocksUsed === 0, 'the blocks freed');
    const afterCancel = await engine.stats(); // answered after the cancels were handled
    assert.equal(afterCancel.kvBlocksUsed, 0);
    assert.equal(afterCancel.running + afterCancel.waiting, 0);
    assert.ok(afterCancel.generationTokensTotal < 16 * 500, 'cancelled before the end');

    // Pause one of two streams: the other finishes while it holds still; then it resumes.
    const p = submitOne(engine, paused);
    const o = submitOne(engine, other);
    await until(() => p.tokens.length >= 3, 'tokens of the stream to pause');
    engine.pause('paused');
    await until(() => engine.load().paused === 1, 'the pause to reach the thread');
    const heldAt = p.tokens.length;
    assert.ok(engine.load().kvBlocksUsed > 0);
    await until(() => o.done !== null, 'the other stream to finish');
    assert.equal(p.tokens.length, heldAt, 'no token while paused');
    assert.equal(p.done, null);
    engine.resume('paused');
    await until(() => p.done !== null, 'the resumed stream to finish');
    assert.deepEqual(comparable(p), comparable(alone.get('paused')));
    assert.deepEqual(comparable(o), comparable(alone.get('other')));
    assert.deepEqual(
      cancelled.map((c) => c.calls),
      calls,
      'no events after the cancel',
    );
    assert.ok(cancelled.every((c) => c.done === null));
    await until(() => engine.load().running === 0 && engine.load().kvBlocksUsed === 0, 'idle');
    const stats = await engine.stats();
    assert.equal(stats.pausedEvictionsTotal, 0);
    assert.equal(
      stats.promptTokensTotal,
      16 * (long.promptTokens.length + 1) + paused.promptTokens.length + other.promptTokens.length,
    );
  } finally {
    await engine.close();
  }
});

test('through the threads: refusals are synchronous values', async () => {
  const started = await startEngine(folder, {
    ...baseOptions,
    threads: 1,
    maxNumSeqs: 1,
    maxWaiting: 1,
  });
  if (!started.ok) assert.fail(started.message);
  const engine = started.engine;
  const outcomes: Outcome[] = [];
  try {
    const request = greedy('a', [5, 6, 7], 30);
    const refusal = (r: EngineRequest) => {
      const submitted = engine.submit(r, () => undefined);
      return submitted.ok ? 'ok' : submitted.reason;
    };
    assert.equal(refusal({ ...request, maxTokens: 600 }), 'too_long');
    assert.equal(refusal({ ...request, promptTokens: [] }), 'invalid');
    assert.equal(refusal({ ...request, sampling: { topP: 2 } }), 'invalid');
    outcomes.push(submitOne(engine, request));
    assert.equal(refusal(request), 'invalid', 'a duplicate id');
    outcomes.push(submitOne(engine, { ...request, requestId: 'b' }));
    // Two submitted, neither taken by the thread yet: one takes the batch's one slot, one
    // waits; the third is one too many.
    assert.equal(refusal({ ...request, requestId: 'c' }), 'queue_full');
    await until(() => outcomes.every((o) => o.done !== null), 'both to finish');
  } finally {
    await engine.close();
  }
  assert.equal(engine.submit(greedy('late', [1], 1), () => undefined).ok, false);
});

test('a folder that does not load, or bad options, are a message', async () => {
  const missing = await startEngine(`${folder}-missing`, baseOptions);
  assert.equal(missing.ok, false);
  if (!missing.ok) assert.match(missing.message, /no config\.json/);
  const bad = await startEngine(folder, { ...baseOptions, maxNumSeqs: 0 });
  assert.equal(bad.ok, false);
  if (!bad.ok) assert.match(bad.message, /maxNumSeqs/);
});

test('a request goes to the least-loaded thread, or to the one that had its first block when loads are close', async () => {
  const started = await startEngine(folder, { ...baseOptions, threads: 2 });
  if (!started.ok) assert.fail(started.message);
  const engine = started.engine as EngineHost;
  try {
    const block = (first: number): number[] => Array.from({ length: 16 }, (_, i) => first + i);
    const ids: [string, number[]][] = [
      ['a', [...block(10), 1]], // thread 0 (both idle)
      ['b', [...block(40), 2]], // thread 1 (the less loaded)
      ['c', [...block(70), 3]], // thread 0 (loads equal: the first)
      ['d', [...block(10), 4]], // thread 0: a's first block, though thread 1 has fewer (2 vs 1)
      ['e', [...block(100), 5]], // thread 1 (the less loaded; no affinity)
    ];
    const outcomes = ids.map(([id, prompt]) => submitOne(engine, greedy(id, prompt, 4)));
    assert.deepEqual(
      ids.map(([id]) => engine.threadOf(id)),
      [0, 1, 0, 0, 1],
    );
    await until(() => outcomes.every((o) => o.done !== null), 'all to finish');
  } finally {
    await engine.close();
  }
});

test('the n choices of one prompt (a group, submitted in a row) go to one thread and share its blocks', async () => {
  const requests = await thirtyTwoRequests('n');
  const prompt = [...requests[3]!.promptTokens, ...requests[4]!.promptTokens].slice(0, 100);
  assert.equal(prompt.length, 100);
  const started = await startEngine(folder, { ...baseOptions, threads: 2 });
  if (!started.ok) assert.fail(started.message);
  const engine = started.engine as EngineHost;
  try {
    // One thread busy first: the choices' first goes to the other; the loads then tip back.
    const busy = submitOne(engine, greedy('busy', requests[9]!.promptTokens, 8));
    const choices = [0, 1, 2, 3, 4, 5].map((i) =>
      greedy(`choice${i}`, prompt, 8, { group: 'cmpl-1/0' }),
    );
    const outcomes = choices.map((choice) => submitOne(engine, choice));
    const threads = choices.map((choice) => engine.threadOf(choice.requestId));
    assert.deepEqual(new Set(threads).size, 1, `threads ${threads.join(',')}`);
    await until(
      () => busy.done !== null && outcomes.every((o) => o.done !== null),
      'all to finish',
    );
    for (const outcome of outcomes) assert.deepEqual(outcome.tokens, outcomes[0]!.tokens);
    const stats = await engine.stats();
    assert.ok(stats.prefixHitTokensTotal >= 5 * 96, `${stats.prefixHitTokensTotal} hit tokens`);
  } finally {
    await engine.close();
  }
});

test('a thread that dies ends its requests with an error; stats and new requests go on', async () => {
  const started = await startEngine(folder, { ...baseOptions, threads: 2 });
  if (!started.ok) assert.fail(started.message);
  const engine = started.engine as EngineHost;
  try {
    const first = submitOne(engine, greedy('first', [5, 6, 7], 500));
    assert.equal(engine.threadOf('first'), 0);
    await until(() => first.tokens.length > 0, 'the first tokens');
    // Reach in to kill thread 0 as a crash would (tests only).
    const threads = (
      engine as unknown as { threads: { worker: { terminate(): Promise<number> } }[] }
    ).threads;
    await threads[0]!.worker.terminate();
    await until(() => first.errors.length > 0, 'the error event');
    assert.match(first.errors[0]!, /engine thread 0 stopped/);
    const stats = await engine.stats(); // the live thread answers
    assert.equal(stats.kvBlocksTotal, 256);
    const next = submitOne(engine, greedy('next', [5, 6, 7], 4));
    assert.equal(engine.threadOf('next'), 1);
    await until(() => next.done !== null, 'a request on the other thread');
  } finally {
    await engine.close();
  }
});
