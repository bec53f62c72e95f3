// The threaded host's ends, ids and counts (LlmEngine's contract): close() with requests in
// flight ends each of them with an error event (a caller waiting for its end is never left
// hanging) and stats() after it answers; a request id cancelled and submitted again at once
// gets only the new request's events, never those the thread sent for the old one before the
// cancel reached it; a flood of submits in one tick never queues past maxWaiting, and a
// request the host accepted is never refused by its thread; stats() reads the threads' load
// after the messages before it; a callback that throws ends only its own request (close()
// completes); a thread whose only sequence is paused past maxPausedBlocks gives its blocks
// back without a step; and random submits, cancels, pauses, resumes and id reuse
// over two threads with tiny caches (preemption; timing varies run to run) end each request
// once, with its output alone, and leave nothing held.

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

test('a flood of submits in one tick fills the free batch slots and maxWaiting, the rest refused', async () => {
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
    // 2 threads × 2 free batch slots, then the waiting queue (all threads together).
    assert.equal(accepted.length, 4 + 5, 'the free batch slots and the waiting queue');
    assert.equal(refused, 31);
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

/** mulberry32, so a failing seed reruns the same actions (the threads' timing still varies). */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

for (const seed of [1, 2, 3]) {
  test(`through two threads, random submits, cancels, pauses, resumes and id reuse (seed ${seed})`, async () => {
    const rand = random(seed);
    const long = (await readReference()).prompts.find((p) => p.ids.length > 200)!.ids;
    const requests = Array.from({ length: 40 }, (_, i) => {
      const start = Math.floor(rand() * 150);
      const shared = rand() < 0.5 ? long.slice(0, 32) : [];
      return greedy(
        `r${i % 25}`, // ids come back once their first holder ended or was cancelled
        [...shared, ...long.slice(start, start + 1 + Math.floor(rand() * 40))],
        1 + Math.floor(rand() * 50),
      );
    });
    const started = await startEngine(folder, {
      ...baseOptions,
      threads: 2,
      kvCacheBytes: 9 * 16384, // 9 blocks a thread (8 the longest request): preemption
      maxNumSeqs: 4,
      maxNumBatchedTokens: 32,
      maxPausedBlocks: 3,
    });
    if (!started.ok) assert.fail(started.message);
    const engine = started.engine;
    const reference = await inProcess({ prefixCaching: false });
    try {
      const live = new Map<string, { index: number; outcome: Outcome & { ends: number } }>();
      const finished: { index: number; outcome: Outcome & { ends: number } }[] = [];
      const cancelled: { outcome: Outcome & { ends: number }; tokens: number; ends: number }[] = [];
      let next = 0;
      const deadline = Date.now() + 120_000; // generous: a request that never ends fails here
      while (next < requests.length || live.size > 0) {
        if (Date.now() > deadline) assert.fail(`still live: ${[...live.keys()].join(' ')}`);
        const ids = [...live.keys()];
        const any = ids[Math.floor(rand() * ids.length)];
        const canSubmit = next < requests.length && !live.has(requests[next]!.requestId);
        const what = rand();
        if (canSubmit && what < 0.6) {
          const index = next++;
          const outcome = submitOne(engine, requests[index]!);
          live.set(requests[index]!.requestId, { index, outcome });
        } else if (any === undefined || what < 0.9) {
          // most turns only let the threads run (a request lasts many turns)
        } else if (what < 0.902) {
          engine.cancel(any);
          const { outcome } = live.get(any)!;
          cancelled.push({ outcome, tokens: outcome.tokens.length, ends: outcome.ends });
          live.delete(any);
        } else if (what < 0.95) engine.pause(any);
        else engine.resume(any);
        for (const [id, entry] of live)
          if (entry.outcome.ends > 0) {
            live.delete(id);
            finished.push(entry);
          }
        if (next >= requests.length || live.has(requests[next]!.requestId))
          for (const id of live.keys()) engine.resume(id); // let the run drain
        await new Promise((resolve) => setImmediate(resolve));
      }
      for (const { index, outcome } of finished) {
        const request = requests[index]!;
        assert.equal(outcome.ends, 1, `${request.requestId} (#${index}) ends once`);
        assert.deepEqual(outcome.errors, [], `#${index}`);
        const alone = runAlone(reference, [request]).get(request.requestId);
        assert.deepEqual(comparable(outcome), comparable(alone), `#${index}`);
      }
      await until(() => engine.load().kvBlocksUsed === 0 && engine.load().running === 0, 'idle');
      const stats = await engine.stats();
      assert.equal(stats.kvBlocksUsed, 0);
      assert.equal(stats.waiting + stats.paused, 0, JSON.stringify(stats));
      for (const c of cancelled) {
        assert.equal(c.outcome.tokens.length, c.tokens, 'no token after a cancel');
        assert.equal(c.outcome.ends, c.ends, 'no end after a cancel');
      }
    } finally {
      await engine.close();
    }
  });
}

test('stats() after cancels reports the load the thread has then, not the host’s stale view', async () => {
  const started = await startEngine(folder, { ...baseOptions, threads: 1 });
  if (!started.ok) assert.fail(started.message);
  const engine = started.engine;
  try {
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < 12; i++) submitOne(engine, greedy(`s${round}-${i}`, [5, 6, 7, i], 200));
      for (let i = 0; i < 12; i++) engine.cancel(`s${round}-${i}`);
      const stats = await engine.stats(); // answered after the cancels were handled
      assert.deepEqual(
        [stats.running, stats.waiting, stats.paused, stats.kvBlocksUsed],
        [0, 0, 0, 0],
        `round ${round}: ${JSON.stringify(stats)}`,
      );
    }
  } finally {
    await engine.close();
  }
});

test('a seeded sampled request gives the same tokens on either thread as in process', async () => {
  const long = (await readReference()).prompts.find((p) => p.ids.length > 200)!.ids;
  const seeded = (id: string): EngineRequest =>
    greedy(id, long.slice(10, 50), 30, {
      sampling: { temperature: 1, topP: 0.9, seed: 1234, logprobs: 2 },
    });
  const alone = runAlone(await inProcess(), [seeded('s')]).get('s');
  const started = await startEngine(folder, { ...baseOptions, threads: 2, prefixCaching: false });
  if (!started.ok) assert.fail(started.message);
  const engine = started.engine as EngineHost;
  try {
    const outcomes = ['s0', 's1', 's2', 's3'].map((id) => submitOne(engine, seeded(id)));
    assert.deepEqual(new Set(['s0', 's1', 's2', 's3'].map((id) => engine.threadOf(id))).size, 2);
    await until(() => outcomes.every((o) => o.ends === 1), 'all four');
    for (const outcome of outcomes) assert.deepEqual(comparable(outcome), comparable(alone));
  } finally {
    await engine.close();
  }
});

test('a thread whose only sequence is paused past maxPausedBlocks gives its blocks back without a step', async () => {
  const long = (await readReference()).prompts.find((p) => p.ids.length > 200)!.ids;
  const started = await startEngine(folder, { ...baseOptions, threads: 1, maxPausedBlocks: 0 });
  if (!started.ok) assert.fail(started.message);
  const engine = started.engine;
  try {
    const outcome = submitOne(engine, greedy('held', long.slice(0, 40), 400));
    await until(() => outcome.tokens.length >= 2, 'the first tokens');
    engine.pause('held');
    // Answered after the pause was handled: the thread, idle since (nothing unpaused), has
    // already preempted it.
    const stats = await engine.stats();
    assert.equal(outcome.done, null, 'paused before its end');
    assert.equal(stats.paused, 1);
    assert.equal(stats.kvBlocksUsed, 0);
    assert.equal(stats.pausedEvictionsTotal, 1);
    engine.resume('held');
    await until(() => outcome.done !== null, 'the resumed request to finish');
    assert.equal(outcome.tokens.length, 400);
  } finally {
    await engine.close();
  }
});

test('an onEvents callback that throws ends its request only, is reported once, and close() completes', async () => {
  const long = (await readReference()).prompts.find((p) => p.ids.length > 200)!.ids;
  const other = greedy('other', long.slice(60, 100), 40);
  const alone = runAlone(await inProcess(), [other]);
  const started = await startEngine(folder, { ...baseOptions, threads: 1 });
  if (!started.ok) assert.fail(started.message);
  const engine = started.engine as EngineHost;
  const reported: string[] = [];
  engine.onCallbackError = (requestId, error) => {
    assert.match(String(error), /callback bug/);
    reported.push(requestId);
  };
  let closed = false;
  try {
    let throwerCalls = 0;
    const submitted = engine.submit(greedy('thrower', long.slice(0, 40), 400), () => {
      throwerCalls += 1;
      throw new Error('callback bug');
    });
    assert.equal(submitted.ok, true);
    const o = submitOne(engine, other);
    await until(() => o.done !== null, 'the other request to finish');
    assert.deepEqual(comparable(o), comparable(alone.get('other')));
    assert.equal(throwerCalls, 1, 'nothing delivered after the throw');
    assert.deepEqual(reported, ['thrower']);
    const stats = await engine.stats(); // after the cancel the throw caused
    assert.equal(stats.running + stats.waiting, 0, 'the thrower was cancelled');
    assert.equal(stats.kvBlocksUsed, 0, 'its blocks freed');
    assert.ok(stats.generationTokensTotal < 40 + 400, 'it did not run to its end');

    // A callback that throws on the error event close() delivers: close() still completes.
    let closingCalls = 0;
    engine.submit(greedy('closing', long.slice(0, 40), 400), (events) => {
      closingCalls += 1;
      assert.equal(events[0]?.kind, 'error');
      throw new Error('callback bug');
    });
    await engine.close();
    closed = true;
    assert.equal(closingCalls, 1);
    assert.deepEqual(reported, ['thrower', 'closing']);
  } finally {
    if (!closed) await engine.close();
  }
});
