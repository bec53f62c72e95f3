// The adaptive batcher with a fake clock and an injected cost model: a batch of n rows takes
// cost(n) µs of fake time. It stops gathering where the per-row cost is flat in batch size,
// keeps gathering where it falls, probes again after its interval, follows a cost model that
// changes, and never holds a lone client for a delay that brings no companions.
// No real timers, no sleeps: time moves only when the test finishes a batch.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  AdaptiveGathering,
  type AdaptiveGatheringOptions,
} from '../../../src/worker/batching/adaptive-gathering.ts';
import { DynamicBatcher } from '../../../src/worker/batching/dynamic-batcher.ts';
import type { BatchingConfig } from '../../../src/store/serving-records.ts';
import { FakeTime, HeldExecutor, settle } from './fake-time.ts';

const options: AdaptiveGatheringOptions = {
  probeIntervalMicros: 1_000_000,
  probeBatches: 4,
  minSamples: 2,
  weight: 0.25,
  staleMicros: 60_000_000,
  gain: 0.1,
  keepGain: 0.05,
};

type CostModel = (rows: number) => number;
/** Per-row cost flat in batch size: compute-bound at one row. */
const flat: CostModel = (rows) => 100 * rows;
/** A per-call cost that batching shares out: per-row cost falls with batch size. */
const falling: CostModel = (rows) => 100 + 10 * rows;

function setup(config: Partial<BatchingConfig> = {}, cpuCost?: CostModel) {
  const time = new FakeTime();
  // With `cpuCost`, the clock has a CPU counter too, advanced by that model (the wall clock
  // by the other): the batcher must then read costs on the CPU counter.
  let cpuMicros = 0;
  const clock =
    cpuCost === undefined ? time : { nowMicros: () => time.micros, cpuMicros: () => cpuMicros };
  const executor = new HeldExecutor<number>(time);
  const events: string[] = [];
  const adaptive = new AdaptiveGathering(options, {
    onGathering: (on) => events.push(on ? 'gather' : 'alone'),
    onProbe: (on) => events.push(on ? 'probe:gather' : 'probe:alone'),
  });
  const batcher = new DynamicBatcher<number, number>({
    config: { maxBatchSize: 8, maxDelayMicros: 0, maxQueue: 100, ...config },
    executor: executor.run,
    clock,
    scheduler: time,
    adaptive,
  });
  let cost: CostModel = flat;
  let next = 0;
  const enqueue = (): void => {
    const queued = batcher.enqueue({
      key: 'x',
      rows: 1,
      priority: 'normal',
      deadlineMicros: null,
      payload: next++,
    });
    assert.ok(queued.ok);
  };
  /** Runs every batch started so far (and those that form meanwhile) at the cost model's price. */
  const runAll = async (): Promise<number[]> => {
    const sizes: number[] = [];
    for (let done = executor.batches.length - executor.running; ; done++) {
      const batch = executor.batches[done];
      if (batch === undefined) break;
      time.advanceTo(time.micros + cost(batch.rows));
      if (cpuCost !== undefined) cpuMicros += cpuCost(batch.rows);
      batch.finish();
      sizes.push(batch.rows);
      await settle();
    }
    return sizes;
  };
  /** `n` requests at once: the first starts alone (the model was idle), the rest queue. */
  const burst = async (n: number): Promise<number[]> => {
    for (let i = 0; i < n; i++) enqueue();
    return runAll();
  };
  return {
    time,
    adaptive,
    events,
    burst,
    enqueue,
    runAll,
    setCost: (model: CostModel) => (cost = model),
  };
}

void test('cold start gathers; a flat per-row cost turns gathering off, and requests run one by one', async () => {
  const { adaptive, burst, events, setCost } = setup();
  setCost(flat);
  assert.equal(adaptive.gathering, true); // nothing measured yet: a bounded gathering probe
  assert.deepEqual(await burst(8), [1, 7]);
  assert.deepEqual(await burst(8), [1, 7]); // four batches: the probe ends here
  assert.equal(adaptive.gathering, false);
  assert.deepEqual(events, ['gather', 'alone']);
  // Not gathering: what queues runs request by request, as with batching off.
  assert.deepEqual(await burst(8), [1, 1, 1, 1, 1, 1, 1, 1]);
  assert.equal(adaptive.cost(0, 0)?.executeMicrosPerRow, 100);
});

void test('a per-row cost falling with batch size keeps gathering on', async () => {
  const { adaptive, burst, events, setCost } = setup();
  setCost(falling);
  for (let i = 0; i < 5; i++) assert.deepEqual(await burst(8), [1, 7]);
  assert.equal(adaptive.gathering, true);
  assert.deepEqual(events, ['gather']);
});

void test('after its probe interval it probes the other mode for a bounded number of batches', async () => {
  const { adaptive, burst, events, time, setCost } = setup();
  setCost(flat);
  await burst(8);
  await burst(8);
  assert.equal(adaptive.gathering, false);
  // Before the interval: no probe, whatever the traffic.
  assert.deepEqual(await burst(4), [1, 1, 1, 1]);
  assert.equal(adaptive.probing, false);
  time.advanceTo(time.micros + options.probeIntervalMicros);
  // The probe gathers for probeBatches batches (1 + 7, 1 + 7), then the flat cost turns it off.
  assert.deepEqual(await burst(8), [1, 7]);
  assert.equal(adaptive.probing, true);
  assert.deepEqual(await burst(8), [1, 7]);
  assert.equal(adaptive.probing, false);
  assert.equal(adaptive.gathering, false);
  assert.deepEqual(events, ['gather', 'alone', 'probe:gather', 'gather', 'alone']);
});

void test('it switches when the cost model changes, both ways', async () => {
  const { adaptive, burst, time, setCost } = setup();
  setCost(falling);
  await burst(8);
  await burst(8);
  assert.equal(adaptive.gathering, true);
  // The model becomes compute-bound: the same 110 µs a row at any size. The larger bucket's
  // average rises past the stay-on line within a bounded number of batches.
  setCost((rows) => 110 * rows);
  let bursts = 0;
  while (adaptive.gathering && bursts < 40) {
    await burst(8);
    bursts++;
  }
  assert.equal(adaptive.gathering, false, 'gathering never stopped on a flat cost');
  // Back to a falling cost: not gathering, only a probe can see it; after the interval it does.
  setCost(falling);
  await burst(8);
  assert.equal(adaptive.gathering, false);
  time.advanceTo(time.micros + options.probeIntervalMicros);
  await burst(8);
  await burst(8);
  assert.equal(adaptive.probing, false);
  assert.equal(adaptive.gathering, true);
  assert.deepEqual(await burst(8), [1, 7]);
});

void test('a delay that brings no companions is dropped: a lone client stops waiting', async () => {
  const { adaptive, enqueue, runAll, time, setCost } = setup({ maxDelayMicros: 2000 });
  setCost(falling);
  for (let i = 0; i < options.probeBatches; i++) {
    enqueue();
    assert.deepEqual(await runAll(), []); // held for companions while gathering…
    time.advanceTo(time.micros + 2000);
    assert.deepEqual(await runAll(), [1]); // …that never came
  }
  // Only one-row executions were ever measured: no evidence that gathering pays.
  assert.equal(adaptive.gathering, false);
  enqueue();
  assert.deepEqual(await runAll(), [1]); // at once, no delay
});

void test('gathering with a delay on a cheap model: the wait it adds outweighs the saving', async () => {
  const { adaptive, enqueue, runAll, time, setCost } = setup({ maxDelayMicros: 2000 });
  // 10 µs a call + 1 µs a row: joining four saves ~7 µs a row in the model, but the four
  // were held ~1.25 ms each for it.
  setCost((rows) => 10 + rows);
  for (let i = 0; i < 2; i++) {
    enqueue();
    time.advanceTo(time.micros + 2000);
    assert.deepEqual(await runAll(), [1]);
  }
  for (let round = 0; round < 2; round++) {
    for (let i = 0; i < 4; i++) {
      if (i > 0) time.advanceTo(time.micros + 500);
      enqueue();
      assert.deepEqual(await runAll(), []);
    }
    time.advanceTo(time.micros + 500);
    assert.deepEqual(await runAll(), [4]); // the first one's delay passed
  }
  const joined = adaptive.cost(2, time.micros);
  assert.ok(joined !== null && joined.executeMicrosPerRow < 10, 'joining did save model time');
  assert.equal(adaptive.gathering, false);
  enqueue();
  assert.deepEqual(await runAll(), [1]);
});

void test('a model where batching pays only at high concurrency: off at low load, on at high', async () => {
  const { adaptive, burst, time, setCost } = setup();
  // Flat up to 4 rows (each row its own kernel), then one call for the whole batch.
  setCost((rows) => (rows <= 4 ? 100 * rows : 400 + 10 * (rows - 4)));
  assert.deepEqual(await burst(3), [1, 2]);
  assert.deepEqual(await burst(3), [1, 2]);
  assert.equal(adaptive.gathering, false); // batches of 2 cost what 2 alone do
  assert.deepEqual(await burst(16), Array<number>(16).fill(1));
  time.advanceTo(time.micros + options.probeIntervalMicros);
  // The load is high now: the probe's batches are full, and cheaper per row.
  assert.deepEqual(await burst(16), [1, 8, 7]);
  assert.deepEqual(await burst(16), [1, 8, 7]);
  assert.equal(adaptive.gathering, true);
});

void test('with a CPU clock, costs are read in CPU time: wall time on a busy machine does not mislead', async () => {
  // Wall time falls per row with batch size (each execution first waits ~1 ms for a core on
  // a busy machine), but the model's own work is flat: batching saves nothing.
  const { adaptive, burst, setCost } = setup({}, flat);
  setCost((rows) => 1000 + 100 * rows);
  await burst(8);
  await burst(8);
  assert.equal(adaptive.gathering, false);
  assert.equal(adaptive.cost(0, 0)?.executeMicrosPerRow, 100);
});

void test('one larger bucket reading cheap by chance does not turn gathering on: buckets are pooled', () => {
  const adaptive = new AdaptiveGathering(options);
  // Per row: 100 µs at 1, 2 and 5–8 rows, 85 at 3–4 (noise): pooled, 95 — not 10 % cheaper.
  for (let round = 0; round < 2; round++) {
    adaptive.completed(1, { executeMicros: 100, waitMicros: 0 }, 0);
    adaptive.completed(2, { executeMicros: 200, waitMicros: 0 }, 0);
    adaptive.completed(4, { executeMicros: 340, waitMicros: 0 }, 0);
    adaptive.completed(8, { executeMicros: 800, waitMicros: 0 }, 0);
  }
  assert.equal(adaptive.probing, false);
  assert.equal(adaptive.gathering, false);
});
