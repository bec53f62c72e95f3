// The threaded host's ends and ids (LlmEngine's contract): close() with requests in flight
// ends each of them with an error event (a caller waiting for its end is never left
// hanging) and stats() after it answers; a request id cancelled and submitted again at once
// gets only the new request's events, never those the thread sent for the old one before the
// cancel reached it; a flood of submits in one tick never queues past maxWaiting.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { EngineEvent, EngineRequest, LlmEngine } from '../../../src/llm/serving/engine-api.ts';
import { startEngine } from '../../../src/llm/serving/start-engine.ts';
import {
  baseOptions,
  comparable,
  emptyOutcome,
  folder,
  greedy,
  inProcess,
  readReference,
  record,
  runAlone,
  type Outcome,
} from './serving-fixture.ts';

async function until(condition: () => boolean, what: string, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

function submitOne(engine: LlmEngine, request: EngineRequest): Outcome & { ends: number } {
  const outcome = { ...emptyOutcome(), ends: 0 };
  const submitted = engine.submit(request, (events: readonly EngineEvent[]) => {
    for (const event of events) {
      assert.equal(event.requestId, request.requestId);
      if (event.kind !== 'token') outcome.ends += 1;
      record(new Map<string, Outcome>([[request.requestId, outcome]]), event);
    }
  });
  if (!submitted.ok) assert.fail(submitted.message);
  return outcome;
}

test('close() with requests in flight ends each of them; stats() after close answers', async () => {
  const started = await startEngine(folder, { ...baseOptions, threads: 2 });
  if (!started.ok) assert.fail(started.message);
  const engine = started.engine;
  const running = Array.from({ length: 4 }, (_, i) =>
    submitOne(engine, greedy(`run${i}`, [5, 6, 7 + i], 480)),
  );
  await until(() => running.every((o) => o.tokens.length > 0), 'tokens from each');
  const queued = submitOne(engine, greedy('queued', [9, 9, 9], 480));
  await engine.close();
  for (const outcome of [...running, queued]) {
    assert.equal(outcome.ends, 1, 'one end each');
    assert.equal(outcome.done, null);
    assert.match(outcome.errors[0] ?? '', /closed/);
  }
  const stats = await engine.stats();
  assert.equal(stats.running + stats.waiting, 0);
  assert.equal(engine.submit(greedy('late', [1], 1), () => undefined).ok, false);
});

test('an id cancelled and submitted again gets only the new request’s events', async () => {
  const long = (await readReference()).prompts.find((p) => p.ids.length > 200)!.ids;
  const fresh = greedy('x', long.slice(3, 40), 20);
  const alone = runAlone(await inProcess(), [fresh]);
  const started = await startEngine(folder, { ...baseOptions, threads: 1 });
  if (!started.ok) assert.fail(started.message);
  const engine = started.engine;
  try {
    for (let round = 0; round < 5; round++) {
      // Others keep the thread stepping (and posting) while the old 'x' generates.
      const others = Array.from({ length: 8 }, (_, i) =>
        submitOne(engine, greedy(`o${round}-${i}`, long.slice(i, i + 30), 200)),
      );
      const old = submitOne(engine, greedy('x', long.slice(100, 180), 400));
      await until(() => old.tokens.length >= 3, 'the old x to generate');
      // Keep this thread busy for a moment so the engine thread's step messages (with old
      // x's tokens) queue up behind this turn; the assertions hold whatever arrives.
      const spinUntil = Date.now() + 30;
      while (Date.now() < spinUntil);
      engine.cancel('x');
      const seen = submitOne(engine, fresh);
      await until(() => seen.done !== null || seen.errors.length > 0, 'the new x to end');
      assert.deepEqual(comparable(seen), comparable(alone.get('x')), `round ${round}`);
      assert.equal(seen.ends, 1);
      assert.equal(seen.done?.promptTokens, fresh.promptTokens.length);
      for (let i = 0; i < 8; i++) engine.cancel(`o${round}-${i}`);
      assert.ok(others.every((o) => o.ends <= 1));
    }
  } finally {
    await engine.close();
  }
});

test('a flood of submits in one tick queues at most maxWaiting, the rest refused', async () => {
  const started = await startEngine(folder, {
    ...baseOptions,
    threads: 2,
    maxNumSeqs: 2,
    maxWaiting: 5,
  });
  if (!started.ok) assert.fail(started.message);
  const engine = started.engine;
  try {
    const accepted: Outcome[] = [];
    let refused = 0;
    for (let i = 0; i < 40; i++) {
      const request = greedy(`f${i}`, [5, 6, 7, i], 50);
      const outcome = emptyOutcome();
      const result = engine.submit(request, (events) => {
        for (const event of events) record(new Map([[request.requestId, outcome]]), event);
      });
      if (result.ok) accepted.push(outcome);
      else {
        assert.equal(result.reason, 'queue_full');
        refused += 1;
      }
    }
    assert.equal(accepted.length, 5, 'the waiting queue, all threads together');
    assert.equal(refused, 35);
    await until(() => accepted.every((o) => o.done !== null), 'the accepted ones to finish');
  } finally {
    await engine.close();
  }
});

test('a request the host accepted is never refused by its thread for a full queue', async () => {
  // The host's count of a thread's waiting requests lags the thread (its last report): here
  // two paused waiting requests (not counted as waiting) are resumed in the same tick as new
  // submits. maxWaiting is the host's bound; the thread must not turn accepted requests into
  // errors (a worker answers those with a 500, not a 429).
  const started = await startEngine(folder, {
    ...baseOptions,
    threads: 1,
    maxNumSeqs: 1,
    maxWaiting: 4,
  });
  if (!started.ok) assert.fail(started.message);
  const engine = started.engine;
  try {
    const first = submitOne(engine, greedy('first', [5, 6, 7], 480));
    const held = ['b', 'c'].map((id) => submitOne(engine, greedy(id, [8, 9, id.length], 8)));
    engine.pause('b');
    engine.pause('c');
    await until(() => first.tokens.length > 0, 'the first to run');
    await until(
      () => engine.load().paused === 2 && engine.load().waiting === 0,
      'the pauses reported',
    );
    engine.resume('b');
    engine.resume('c');
    const flood: Outcome[] = [];
    for (let i = 0; i < 4; i++) {
      const request = greedy(`n${i}`, [10, 11, i], 8);
      const outcome = emptyOutcome();
      const result = engine.submit(request, (events) => {
        for (const event of events) record(new Map([[request.requestId, outcome]]), event);
      });
      if (result.ok) flood.push(outcome);
    }
    assert.equal(flood.length, 4, 'the host saw room for four');
    engine.cancel('first');
    await until(
      () => [...held, ...flood].every((o) => o.done !== null || o.errors.length > 0),
      'every accepted request to end',
    );
    for (const outcome of [...held, ...flood]) {
      assert.deepEqual(outcome.errors, []);
      assert.equal(outcome.done?.reason, 'length');
    }
  } finally {
    await engine.close();
  }
});
