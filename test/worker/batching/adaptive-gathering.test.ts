// The adaptive batcher with a fake clock and an injected cost model: a batch of n rows takes
// cost(n) µs of fake time. It compares the two modes in stretches measured back to back: it
// stops gathering where the per-row cost is flat in batch size, keeps gathering where it
// falls, probes again after its interval, follows a cost model that changes, never holds a
// lone client for a delay that brings no companions, and is not misled by costs that move
// with load rather than with batch size. No real timers, no sleeps: time moves only when the
// test finishes a batch.

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
  firstProbeMicros: 0,
  stretchBatches: 4,
  stretchMicros: 0,
  maxGapMicros: 100_000,
  weight: 1,
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
  let cpuReads = 0;
  const clock =
    cpuCost === undefined
      ? time
      : {
          nowMicros: () => time.micros,
          cpuMicros: () => {
            cpuReads++;
            return cpuMicros;
          },
        };
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
  /** CPU the process spends while no request runs (timers, collection). */
  const idleCpu = (micros: number): void => {
    cpuMicros += micros;
  };
  /**
   * Bursts of `n` until a probe has run and ended (bounded): one becomes due at an idle moment
   * once its interval has passed, so the first burst may start it. Their batch sizes.
   */
  const throughProbe = async (n: number): Promise<number[]> => {
    const sizes: number[] = [];
    for (let i = 0; i < 50; i++) {
      sizes.push(...(await burst(n)));
      if (!adaptive.probing) break;
    }
    assert.equal(adaptive.probing, false, 'the probe never ended');
    return sizes;
  };
  return {
    time,
    adaptive,
    batcher,
    executor,
    events,
    burst,
    enqueue,
    runAll,
    throughProbe,
    cpuReads: () => cpuReads,
    idleCpu,
    setCost: (model: CostModel) => (cost = model),
  };
}

/** The ratio gathering ÷ alone the batcher holds now. */
function ratio(adaptive: AdaptiveGathering): number {
  return adaptive.costs().ratio ?? Number.NaN;
}

void test('cold start gathers, as configured, and probes at once; a flat per-row cost turns it off', async () => {
  const { adaptive, burst, events, throughProbe, setCost } = setup();
  setCost(flat);
  assert.equal(adaptive.gathering, true); // nothing measured: the config's rule
  assert.deepEqual(await burst(8), [1, 7]);
  assert.equal(adaptive.probing, true); // …and a probe due from the first batch (here, at once)
  await throughProbe(8);
  assert.equal(adaptive.gathering, false);
  assert.deepEqual(events, ['gather', 'probe:alone', 'alone']);
  const { gather, alone } = adaptive.costs();
  assert.equal(alone?.executeMicrosPerRow, 100);
  assert.equal(gather?.executeMicrosPerRow, 100);
  assert.equal(ratio(adaptive), 1);
  // Not gathering: what queues runs request by request, as with batching off.
  assert.deepEqual(await burst(8), [1, 1, 1, 1, 1, 1, 1, 1]);
});

void test('a per-row cost falling with batch size keeps gathering on', async () => {
  const { adaptive, burst, events, throughProbe, setCost } = setup();
  setCost(falling);
  await throughProbe(8);
  assert.equal(adaptive.gathering, true);
  assert.ok(ratio(adaptive) < 0.9, `ratio ${ratio(adaptive)}`);
  assert.deepEqual(events, ['gather', 'probe:alone', 'alone', 'gather']);
  for (let i = 0; i < 3; i++) assert.deepEqual(await burst(8), [1, 7]);
});

void test('after its interval it probes again: a stretch of each mode, a bounded number of batches', async () => {
  const { adaptive, burst, events, time, throughProbe, setCost } = setup();
  setCost(flat);
  await throughProbe(8);
  // Before the interval: no probe, whatever the traffic.
  assert.deepEqual(await burst(4), [1, 1, 1, 1]);
  assert.equal(adaptive.probing, false);
  events.length = 0;
  time.advanceTo(time.micros + options.probeIntervalMicros);
  const sizes = await throughProbe(8);
  // Due at the next idle moment; the reference stretch (alone) starts at the next completion,
  // four batches, then the probe (gathering), four batches: at most 1 + 4 + 4 executions of
  // probe business, and the rest of the last burst alone again.
  assert.ok(sizes.length <= 16, `sizes ${sizes.join(',')}`);
  assert.equal(adaptive.gathering, false);
  assert.deepEqual(events, ['probe:gather', 'gather', 'alone']);
});

void test('it switches when the cost model changes, both ways', async () => {
  const { adaptive, burst, time, throughProbe, setCost } = setup();
  setCost(falling);
  await throughProbe(8);
  assert.equal(adaptive.gathering, true);
  // The model becomes compute-bound: the same 110 µs a row at any size. The next probe sees it.
  setCost((rows) => 110 * rows);
  await burst(8);
  assert.equal(adaptive.gathering, true); // no probe before the interval
  time.advanceTo(time.micros + options.probeIntervalMicros);
  await throughProbe(8);
  assert.equal(adaptive.gathering, false);
  // Back to a falling cost: the next probe turns it on again.
  setCost(falling);
  time.advanceTo(time.micros + options.probeIntervalMicros);
  await throughProbe(8);
  assert.equal(adaptive.gathering, true);
  assert.deepEqual(await burst(8), [1, 7]);
});

void test('a delay that brings no companions is dropped: a lone client stops waiting', async () => {
  const { adaptive, enqueue, runAll, time, setCost } = setup({ maxDelayMicros: 2000 });
  setCost(falling);
  for (let i = 0, seen = false; i < 20 && !(seen && !adaptive.probing); i++) {
    enqueue();
    seen ||= adaptive.probing;
    if (adaptive.gathering) {
      assert.deepEqual(await runAll(), []); // held for companions while gathering…
      time.advanceTo(time.micros + 2000); // …that never come
    }
    assert.deepEqual(await runAll(), [1]);
  }
  assert.equal(adaptive.probing, false);
  // Gathering cost the same model time a row plus 2 ms held: far dearer.
  assert.equal(adaptive.costs().gather?.waitMicrosPerRow, 2000);
  assert.equal(adaptive.gathering, false);
  enqueue();
  assert.deepEqual(await runAll(), [1]); // at once, no delay
});

void test('gathering with a delay on a cheap model: the wait it adds outweighs the saving', async () => {
  const { adaptive, enqueue, runAll, time, setCost } = setup({ maxDelayMicros: 2000 });
  // 10 µs a call + 1 µs a row: joining four saves ~7 µs a row in the model, but the four
  // are held ~0.75 ms each for it. Requests arrive 500 µs apart.
  setCost((rows) => 10 + rows);
  for (let i = 0, seen = false; i < 200 && !(seen && !adaptive.probing); i++) {
    time.advanceTo(time.micros + 500);
    enqueue();
    seen ||= adaptive.probing;
    await runAll();
  }
  assert.equal(adaptive.probing, false);
  const { gather, alone } = adaptive.costs();
  assert.ok(gather !== null && alone !== null);
  assert.ok(gather.executeMicrosPerRow < alone.executeMicrosPerRow, 'joining did save model time');
  assert.ok(gather.waitMicrosPerRow > 100, `wait ${gather.waitMicrosPerRow}`);
  assert.equal(adaptive.gathering, false);
  enqueue();
  assert.deepEqual(await runAll(), [1]);
});

void test('a model where batching pays only at high concurrency: off at low load, on at high', async () => {
  const { adaptive, burst, time, throughProbe, setCost } = setup();
  // Flat up to 4 rows (each row its own kernel), then one call for the whole batch.
  setCost((rows) => (rows <= 4 ? 100 * rows : 400 + 10 * (rows - 4)));
  await throughProbe(3);
  assert.equal(adaptive.gathering, false); // batches of 2 cost what 2 alone do
  assert.deepEqual(await burst(16), Array<number>(16).fill(1));
  time.advanceTo(time.micros + options.probeIntervalMicros);
  // The load is high now: the probe's batches are full, and cheaper per row.
  await throughProbe(16);
  assert.equal(adaptive.gathering, true);
  assert.deepEqual(await burst(16), [1, 8, 7]);
});

void test('costs that fall with load, not with batch size, do not turn gathering on', async () => {
  // A request costs 300 µs at low load and 100 µs at high load (wake-ups shared, caches warm)
  // whatever batch it runs in. Batches of one are seen at low load and batches of seven at
  // high load, but each probe compares the two modes at the same load: no saving.
  const { adaptive, burst, time, throughProbe, setCost } = setup();
  setCost((rows) => 300 * rows);
  await throughProbe(1);
  assert.equal(adaptive.gathering, false);
  setCost((rows) => 100 * rows);
  time.advanceTo(time.micros + options.probeIntervalMicros);
  await throughProbe(8);
  assert.equal(adaptive.gathering, false);
  assert.equal(ratio(adaptive), 1);
  assert.deepEqual(await burst(8), [1, 1, 1, 1, 1, 1, 1, 1]);
});

void test('with a CPU clock, costs are read in CPU time, and the clock only at stretch ends', async () => {
  // Wall time falls per row with batch size (each execution first waits ~1 ms for a core on
  // a busy machine), but the model's own work is flat: batching saves nothing.
  const { adaptive, burst, cpuReads, throughProbe, setCost } = setup({}, flat);
  setCost((rows) => 1000 + 100 * rows);
  await throughProbe(8);
  assert.equal(adaptive.gathering, false);
  assert.equal(adaptive.costs().alone?.executeMicrosPerRow, 100);
  assert.equal(adaptive.costs().gather?.executeMicrosPerRow, 100);
  // A probe reads the CPU clock three times (start, the switch, end), not once a batch.
  assert.equal(cpuReads(), 3);
  for (let i = 0; i < 10; i++) await burst(8);
  assert.equal(cpuReads(), 3);
});

void test('one probe reading cheap by chance does not turn gathering on: ratios are smoothed', () => {
  const adaptive = new AdaptiveGathering({ ...options, weight: 0.5, probeIntervalMicros: 0 });
  // One probe: a completion starts it, then a stretch of each mode (the decided one first);
  // a row costs 100 µs alone and `gatherPerRow` in batches of 4.
  const probe = (gatherPerRow: number, at: number): void => {
    adaptive.tick(at);
    adaptive.completed({ rows: 1, executeMicros: 100, waitMicros: 0 }, at, null);
    for (let stretch = 0; stretch < 2; stretch++) {
      const [rows, perRow] = adaptive.gathering ? [4, gatherPerRow] : [1, 100];
      for (let i = 0; i < options.stretchBatches; i++)
        adaptive.completed({ rows, executeMicros: perRow * rows, waitMicros: 0 }, at, null);
    }
    assert.equal(adaptive.probing, false);
  };
  probe(100, 1); // the same: off (to stay on, gathering must save 5 %)
  assert.equal(ratio(adaptive), 1);
  assert.equal(adaptive.gathering, false);
  probe(85, 2); // 15 % cheaper once: smoothed, 0.925 — not the 10 % needed to turn it on
  assert.equal(ratio(adaptive), 0.925);
  assert.equal(adaptive.gathering, false);
  probe(70, 3); // again cheaper: 0.8125 — now it pays
  assert.equal(adaptive.gathering, true);
});

void test('the first probe waits firstProbeMicros from the first batch: a cold process measures nothing useful', () => {
  const adaptive = new AdaptiveGathering({ ...options, firstProbeMicros: 2_000_000 });
  adaptive.tick(10);
  assert.equal(adaptive.probing, false);
  adaptive.tick(2_000_009);
  assert.equal(adaptive.probing, false);
  adaptive.tick(2_000_010);
  assert.equal(adaptive.probing, true);
  assert.equal(adaptive.gathering, true); // the config's rule until then
});

void test('a failed batch abandons a probe; the next comes after the interval', () => {
  const adaptive = new AdaptiveGathering(options);
  adaptive.tick(0); // the first batch: a probe is due (firstProbeMicros 0)
  adaptive.completed({ rows: 1, executeMicros: 100, waitMicros: 0 }, 0, null); // reference starts
  adaptive.completed({ rows: 1, executeMicros: 100, waitMicros: 0 }, 1, null);
  adaptive.failed(2);
  assert.equal(adaptive.probing, false);
  assert.equal(adaptive.gathering, true); // the steady mode: the cold start's, as configured
  assert.deepEqual(adaptive.costs(), { gather: null, alone: null, ratio: null });
  adaptive.tick(2 + options.probeIntervalMicros - 1);
  assert.equal(adaptive.probing, false);
  adaptive.tick(2 + options.probeIntervalMicros);
  assert.equal(adaptive.probing, true);
});

void test('runNow: a request runs outside the queue only when it would be a batch of one anyway', async () => {
  const { adaptive, batcher, executor, enqueue, runAll, throughProbe, setCost } = setup();
  setCost(flat);
  // Gathering (the cold start): never; the request may have companions to join.
  assert.equal(adaptive.gathering, true);
  assert.equal(batcher.runNow(1), null);
  await throughProbe(8);
  assert.equal(adaptive.gathering, false);
  const ran = executor.batches.length;
  const release = batcher.runNow(1);
  assert.ok(release !== null);
  // While it runs the model is busy: a second caller must queue, and what queues waits.
  assert.equal(batcher.runNow(1), null);
  assert.equal(batcher.busy, true);
  enqueue();
  assert.equal(batcher.depth, 1);
  assert.equal(executor.batches.length, ran, 'nothing dispatched while the direct run holds it');
  release('ran');
  release('ran'); // a second release changes nothing
  assert.equal(batcher.depth, 0);
  assert.deepEqual(await runAll(), [1]);
  // Idle again, nothing queued: at once again; skipped leaves no trace.
  const again = batcher.runNow(1);
  assert.ok(again !== null);
  again('skipped');
  assert.equal(batcher.busy, false);
});

void test('runNow feeds the probe: direct runs are measured as batches of one', () => {
  const time = new FakeTime();
  const adaptive = new AdaptiveGathering(options);
  const batcher = new DynamicBatcher<number, number>({
    config: { maxBatchSize: 8, maxDelayMicros: 0, maxQueue: 100 },
    executor: () => Promise.resolve([]),
    clock: time,
    scheduler: time,
    adaptive,
  });
  // Cold start: a probe is due; decide "alone" by hand-fed stretches (gathering dearer).
  adaptive.tick(0);
  adaptive.completed({ rows: 1, executeMicros: 50, waitMicros: 0 }, 0, null);
  for (let i = 0; i < 2 * options.stretchBatches; i++)
    adaptive.completed(
      adaptive.gathering
        ? { rows: 2, executeMicros: 400, waitMicros: 0 }
        : { rows: 1, executeMicros: 100, waitMicros: 0 },
      0,
      null,
    );
  assert.equal(adaptive.gathering, false);
  assert.equal(adaptive.costs().alone?.executeMicrosPerRow, 100);
  // The next probe's reference stretch (alone) is made of direct runs of 300 µs each.
  time.advanceTo(options.probeIntervalMicros);
  for (let i = 0; i <= options.stretchBatches; i++) {
    const release = batcher.runNow(1);
    assert.ok(release !== null, `run ${i}`);
    time.advanceTo(time.micros + 300);
    release('ran');
  }
  assert.equal(adaptive.costs().alone?.executeMicrosPerRow, 300);
  assert.equal(adaptive.gathering, true); // the probe stretch: gathering
});

void test('a pause in the load restarts the probe: what the process spent idle is not a cost', async () => {
  const { adaptive, burst, idleCpu, time, setCost } = setup({}, flat);
  setCost(flat);
  // The reference stretch (gathering) starts, then the load pauses for a second in which the
  // process spends 50 ms of CPU on other things.
  await burst(3);
  assert.equal(adaptive.probing, true);
  time.advanceTo(time.micros + 1_000_000);
  idleCpu(50_000);
  for (let i = 0; i < 20 && adaptive.probing; i++) await burst(8);
  assert.equal(adaptive.probing, false);
  // Measured from the first completion after the pause: 100 µs a row in both modes.
  assert.equal(adaptive.costs().gather?.executeMicrosPerRow, 100);
  assert.equal(adaptive.costs().alone?.executeMicrosPerRow, 100);
  assert.equal(adaptive.gathering, false);
});
