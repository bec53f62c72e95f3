// Property test of the batcher's invariants under random arrivals, cancellations, deadlines
// and batch durations (seeded PRNG, fake clock, so every run is the same run):
//   - every request ends exactly once: done, cancelled, expired, or shed at enqueue;
//   - a batch of several requests never exceeds maxBatchSize rows, and shares one key;
//   - an expired or cancelled request never reaches the executor, and nothing runs twice;
//   - at most one batch runs at a time; the queue never holds more than maxQueue.
// Odd seeds run the adaptive batcher (short probes, so both modes and their switches occur).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AdaptiveGathering } from '../../../src/worker/batching/adaptive-gathering.ts';
import { DynamicBatcher, type Priority } from '../../../src/worker/batching/dynamic-batcher.ts';
import type { BatchingConfig } from '../../../src/store/serving-records.ts';
import { createRandom } from '../../../src/core/random.ts';
import { FakeTime, settle } from './fake-time.ts';

/** The project's seeded PRNG (mulberry32), uniform in [0, 1). */
function prng(seed: number): () => number {
  return createRandom(seed).next;
}

interface Item {
  readonly id: number;
  readonly key: string;
  readonly rows: number;
  readonly deadline: number | null;
}

/** Endings seen across all seeds, so the test shows it exercised every path. */
const seen = new Map<string, number>();

async function run(seed: number): Promise<void> {
  const random = prng(seed);
  // Checked at the end: a throw inside the executor would only fail that batch.
  const violations: string[] = [];
  const check = (ok: boolean, message: string): void => {
    if (!ok) violations.push(`seed ${seed}: ${message}`);
  };
  const pick = (n: number): number => Math.floor(random() * n);
  const config: BatchingConfig = {
    maxBatchSize: 1 + pick(16),
    maxDelayMicros: pick(3000),
    maxQueue: 1 + pick(40),
    ...(random() < 0.5 ? { preferredBatchSizes: [2, 4, 8].filter(() => random() < 0.6) } : {}),
  };
  const time = new FakeTime();
  const endings = new Map<number, string[]>();
  const end = (id: number, how: string): void => {
    endings.set(id, [...(endings.get(id) ?? []), how]);
    seen.set(how, (seen.get(how) ?? 0) + 1);
  };
  const executed = new Set<number>();
  const expiredOrCancelled = new Set<number>();
  let running = 0;
  const finishers: { at: number; finish: () => void }[] = [];

  const adaptive =
    seed % 2 === 1
      ? new AdaptiveGathering({
          probeIntervalMicros: 20_000,
          firstProbeMicros: 5_000,
          stretchBatches: 2,
          stretchMicros: 0,
          maxGapMicros: 20_000,
          weight: 0.5,
          gain: 0.1,
          keepGain: 0.05,
        })
      : undefined;
  const batcher = new DynamicBatcher<Item, number>({
    config,
    ...(adaptive === undefined ? {} : { adaptive }),
    clock: time,
    scheduler: time,
    executor: (items, rows) => {
      running += 1;
      check(running === 1, 'two batches ran at once');
      check(rows === items.reduce((n, i) => n + i.rows, 0), 'rows miscounted');
      if (items.length > 1) check(rows <= config.maxBatchSize, `batch of ${rows} rows`);
      check(new Set(items.map((i) => i.key)).size === 1, 'keys mixed in one batch');
      for (const item of items) {
        check(!executed.has(item.id), `request ${item.id} ran twice`);
        check(!expiredOrCancelled.has(item.id), `request ${item.id} ran after it ended`);
        if (item.deadline !== null) check(item.deadline > time.micros, 'ran past its deadline');
        executed.add(item.id);
      }
      return new Promise((resolve, reject) => {
        finishers.push({
          at: time.micros + pick(3000),
          finish: () => {
            running -= 1;
            if (random() < 0.05) reject(new Error('model failed'));
            else resolve(items.map((i) => i.id));
          },
        });
      });
    },
  });

  const controllers = new Map<number, AbortController>();
  let nextId = 0;
  for (let step = 0; step < 400; step++) {
    const action = random();
    if (action < 0.5) {
      const id = nextId++;
      const item: Item = {
        id,
        key: ['a', 'b', 'c'][pick(3)] ?? 'a',
        rows: random() < 0.05 ? config.maxBatchSize + 1 + pick(4) : 1 + pick(4),
        deadline: random() < 0.4 ? time.micros + pick(4000) : null,
      };
      const controller = new AbortController();
      controllers.set(id, controller);
      const priority: Priority = random() < 0.3 ? 'high' : 'normal';
      const result = batcher.enqueue({
        key: item.key,
        rows: item.rows,
        priority,
        deadlineMicros: item.deadline,
        payload: item,
        signal: controller.signal,
      });
      if (!result.ok) end(id, 'shed');
      else {
        void result.done.then((outcome) => {
          end(id, outcome.kind);
          if (outcome.kind === 'expired' || outcome.kind === 'cancelled')
            expiredOrCancelled.add(id);
          if (outcome.kind === 'done') check(outcome.value === id, 'got the result of another');
          if (outcome.kind === 'expired' || outcome.kind === 'cancelled')
            check(!executed.has(id), `request ${id} ran, then ended ${outcome.kind}`);
        });
      }
      check(batcher.depth <= config.maxQueue, 'queue past maxQueue');
    } else if (action < 0.6 && nextId > 0) {
      controllers.get(pick(nextId))?.abort();
    } else {
      time.advanceTo(time.micros + pick(1500));
    }
    // Batches whose time has come finish, in order.
    finishers.sort((x, y) => x.at - y.at);
    while (finishers.length > 0 && (finishers[0]?.at ?? Infinity) <= time.micros) {
      finishers.shift()?.finish();
      await settle();
    }
    await settle();
  }
  // Let everything finish: run time forward until no batch is left.
  for (let guard = 0; guard < 10_000 && (finishers.length > 0 || batcher.depth > 0); guard++) {
    const next = finishers.shift();
    if (next !== undefined) {
      time.advanceTo(Math.max(time.micros, next.at));
      next.finish();
    } else time.advanceTo(time.micros + 10_000);
    await settle();
  }
  await settle();

  assert.deepEqual(violations, []);
  assert.equal(batcher.depth, 0);
  for (let id = 0; id < nextId; id++) {
    const how = endings.get(id);
    assert.equal(how?.length, 1, `request ${id} ended ${JSON.stringify(how)} (seed ${seed})`);
  }
}

void test('batcher invariants hold under random arrivals, cancellations and deadlines', async () => {
  for (let seed = 1; seed <= 40; seed++) await run(seed);
  for (const how of ['done', 'failed', 'expired', 'cancelled', 'shed'])
    assert.ok((seen.get(how) ?? 0) > 0, `no request ended ${how}: ${JSON.stringify([...seen])}`);
});
