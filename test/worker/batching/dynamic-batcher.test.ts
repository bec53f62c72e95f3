// The dynamic batcher with a fake clock: exactly which batches form, and when, for scripted
// arrivals; queue bounds, deadlines, cancellation, failures. No real timers, no sleeps.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  DynamicBatcher,
  type EnqueueResult,
  type Priority,
  type Settled,
} from '../../../src/worker/batching/dynamic-batcher.ts';
import type { BatchingConfig } from '../../../src/store/serving-records.ts';
import { FakeTime, HeldExecutor, settle } from './fake-time.ts';

interface Arrival {
  readonly key?: string;
  readonly rows?: number;
  readonly priority?: Priority;
  readonly deadline?: number;
  readonly signal?: AbortSignal;
  readonly alone?: boolean;
}

function setup(config: Partial<BatchingConfig> = {}) {
  const time = new FakeTime();
  const executor = new HeldExecutor<string>(time);
  const batcher = new DynamicBatcher<string, string>({
    config: { maxBatchSize: 4, maxDelayMicros: 1000, maxQueue: 100, ...config },
    executor: executor.run,
    clock: time,
    scheduler: time,
  });
  const outcomes = new Map<string, Settled<string>>();
  const add = (id: string, arrival: Arrival = {}): EnqueueResult<string> => {
    const result = batcher.enqueue({
      key: arrival.key ?? 'a',
      rows: arrival.rows ?? 1,
      priority: arrival.priority ?? 'normal',
      deadlineMicros: arrival.deadline ?? null,
      payload: id,
      ...(arrival.signal === undefined ? {} : { signal: arrival.signal }),
      ...(arrival.alone === undefined ? {} : { alone: arrival.alone }),
    });
    if (result.ok) void result.done.then((outcome) => outcomes.set(id, outcome));
    return result;
  };
  /** Completes the running batch and lets the batcher form the next. */
  const finish = async (): Promise<void> => {
    executor.last().finish();
    await settle();
  };
  return { time, executor, batcher, outcomes, add, finish };
}

const ids = (prefix: string, n: number): string[] =>
  Array.from({ length: n }, (_, i) => `${prefix}${i}`);

void test('a batch leaves as soon as it holds maxBatchSize rows', async () => {
  const { executor, add, finish, time } = setup({ maxBatchSize: 4 });
  for (const id of ids('r', 10)) add(id);
  // The first four filled a batch at once; the rest queue while it runs (one at a time).
  assert.deepEqual(executor.formed, [['r0', 'r1', 'r2', 'r3']]);
  await finish();
  assert.deepEqual(executor.formed.at(-1), ['r4', 'r5', 'r6', 'r7']);
  await finish();
  // Two rows left: not full, so they wait for the oldest's delay (it arrived at t=0).
  assert.equal(executor.batches.length, 2);
  time.advanceTo(999);
  assert.equal(executor.batches.length, 2);
  time.advanceTo(1000);
  assert.deepEqual(executor.formed.at(-1), ['r8', 'r9']);
  assert.equal(executor.last().atMicros, 1000);
  assert.equal(executor.maxRunning, 1);
});

void test('a partial batch leaves when its oldest request has waited maxDelayMicros', () => {
  const { executor, add, time } = setup({ maxBatchSize: 8, maxDelayMicros: 1000 });
  add('a');
  time.advanceTo(300);
  add('b');
  time.advanceTo(900);
  add('c');
  time.advanceTo(999);
  assert.deepEqual(executor.formed, []);
  time.advanceTo(1000);
  assert.deepEqual(executor.formed, [['a', 'b', 'c']]);
  assert.equal(executor.last().rows, 3);
  assert.equal(time.pending, 0);
});

void test('a new request after a batch left starts its own delay', async () => {
  const { executor, add, time, finish } = setup({ maxBatchSize: 8, maxDelayMicros: 1000 });
  add('a');
  time.advanceTo(1000);
  await finish();
  time.advanceTo(1100);
  add('d');
  time.advanceTo(2099);
  assert.equal(executor.batches.length, 1);
  time.advanceTo(2100);
  assert.deepEqual(executor.formed, [['a'], ['d']]);
});

void test('rows count, not requests: multi-row requests are taken whole and never split', async () => {
  const { executor, add, finish, time } = setup({ maxBatchSize: 8 });
  add('a', { rows: 3 });
  add('b', { rows: 3 });
  add('c', { rows: 3 }); // 9 rows ≥ 8: ready; c would pass 8, so it waits
  assert.deepEqual(executor.formed, [['a', 'b']]);
  assert.equal(executor.last().rows, 6);
  await finish();
  time.advanceTo(1000);
  assert.deepEqual(executor.formed.at(-1), ['c']);
});

void test('preferred sizes: a delay cut takes the largest preferred size that fits', async () => {
  const { executor, add, finish, time } = setup({
    maxBatchSize: 16,
    preferredBatchSizes: [4, 8],
  });
  for (const id of ids('r', 11)) add(id);
  time.advanceTo(1000);
  assert.deepEqual(executor.formed, [ids('r', 8)]);
  await finish();
  // Three left, already past their delay, smaller than every preferred size: all of them.
  assert.deepEqual(executor.formed.at(-1), ['r8', 'r9', 'r10']);
});

void test('preferred sizes cut whole requests: at most the preferred size, in order', () => {
  const { executor, add, time } = setup({ maxBatchSize: 16, preferredBatchSizes: [4] });
  add('a', { rows: 3 });
  add('b', { rows: 3 });
  time.advanceTo(1000);
  assert.deepEqual(executor.formed, [['a']]);
});

void test('a full batch still cuts at maxBatchSize when preferred sizes are set', () => {
  const { executor, add } = setup({ maxBatchSize: 8, preferredBatchSizes: [2, 4] });
  for (const id of ids('r', 8)) add(id);
  assert.deepEqual(executor.formed, [ids('r', 8)]);
});

void test('high priority is served before normal, FIFO within each level', async () => {
  const { executor, add, finish, time } = setup({ maxBatchSize: 3 });
  add('busy', { alone: true }); // runs alone at once and keeps the executor busy
  add('n1');
  add('n2');
  add('h1', { priority: 'high' });
  add('n3');
  add('h2', { priority: 'high' });
  assert.deepEqual(executor.formed, [['busy']]);
  await finish();
  assert.deepEqual(executor.formed.at(-1), ['h1', 'h2', 'n1']);
  await finish();
  time.advanceTo(1000);
  assert.deepEqual(executor.formed.at(-1), ['n2', 'n3']);
});

void test('among ready queues, one with a high-priority request goes first', async () => {
  const { executor, add, finish, time } = setup({ maxBatchSize: 8 });
  add('busy', { alone: true });
  add('a1', { key: 'A' });
  time.advanceTo(10);
  add('b1', { key: 'B', priority: 'high' });
  time.advanceTo(2000); // both past their delay while the executor is busy
  await finish();
  assert.deepEqual(executor.formed.at(-1), ['b1']);
  await finish();
  assert.deepEqual(executor.formed.at(-1), ['a1']);
});

void test('requests are batched only with requests of the same shape key', async () => {
  const { executor, add, finish, time } = setup({ maxBatchSize: 8 });
  add('a1', { key: 'A' });
  add('b1', { key: 'B' });
  add('a2', { key: 'A' });
  add('b2', { key: 'B' });
  time.advanceTo(1000);
  assert.deepEqual(executor.formed, [['a1', 'a2']]); // A's oldest arrived first
  await finish();
  assert.deepEqual(executor.formed, [
    ['a1', 'a2'],
    ['b1', 'b2'],
  ]);
});

void test('a request that cannot share a batch runs alone, at once', () => {
  const { executor, add } = setup({ maxBatchSize: 8 });
  add('x', { alone: true });
  assert.deepEqual(executor.formed, [['x']]);
});

void test('a request bigger than maxBatchSize runs alone instead of waiting forever', () => {
  const { executor, add } = setup({ maxBatchSize: 4 });
  add('huge', { rows: 10 });
  assert.deepEqual(executor.formed, [['huge']]);
});

void test('a full queue sheds new requests with queue_full; the running batch does not count', async () => {
  const { add, finish, outcomes, batcher } = setup({ maxBatchSize: 1, maxQueue: 2 });
  assert.ok(add('running').ok);
  assert.ok(add('q1').ok);
  assert.ok(add('q2').ok);
  assert.equal(batcher.depth, 2);
  assert.deepEqual(add('shed'), { ok: false, reason: 'queue_full' });
  await finish();
  assert.ok(add('fits-again').ok);
  await finish();
  await finish();
  await finish();
  assert.deepEqual([...outcomes.keys()].sort(), ['fits-again', 'q1', 'q2', 'running']);
});

void test('a request whose deadline passes while queued expires (504) and never runs', async () => {
  const { executor, add, finish, time, outcomes } = setup({ maxBatchSize: 1 });
  add('busy');
  add('late', { deadline: 500 });
  add('fine', { deadline: 5000 });
  time.advanceTo(499);
  await settle();
  assert.equal(outcomes.has('late'), false);
  time.advanceTo(500);
  await settle();
  assert.deepEqual(outcomes.get('late'), { kind: 'expired', queuedMicros: 500 });
  await finish();
  await finish();
  assert.deepEqual(executor.formed, [['busy'], ['fine']]);
  assert.equal(outcomes.get('fine')?.kind, 'done');
});

void test('a request already past its deadline expires without being queued', async () => {
  const { executor, add, outcomes, time, batcher } = setup();
  time.advanceTo(100);
  assert.ok(add('dead', { deadline: 100 }).ok);
  await settle();
  assert.deepEqual(outcomes.get('dead'), { kind: 'expired', queuedMicros: 0 });
  assert.equal(batcher.depth, 0);
  time.advanceTo(5000);
  assert.deepEqual(executor.formed, []);
});

void test('cancelling a queued request removes it; a running one finishes', async () => {
  const { executor, add, finish, time, outcomes } = setup({ maxBatchSize: 8 });
  const first = new AbortController();
  const second = new AbortController();
  add('a', { signal: first.signal });
  add('b', { signal: second.signal });
  add('c');
  second.abort();
  await settle();
  assert.deepEqual(outcomes.get('b'), { kind: 'cancelled' });
  time.advanceTo(1000);
  assert.deepEqual(executor.formed, [['a', 'c']]);
  first.abort(); // too late: it is running
  await finish();
  assert.equal(outcomes.get('a')?.kind, 'done');
});

void test('a failed batch fails each of its requests; the next batch still runs', async () => {
  const { executor, add, time, outcomes } = setup({ maxBatchSize: 2 });
  add('a');
  add('b');
  add('c');
  executor.last().fail(new Error('boom'));
  await settle();
  assert.equal(outcomes.get('a')?.kind, 'failed');
  assert.equal(outcomes.get('b')?.kind, 'failed');
  time.advanceTo(1000);
  assert.deepEqual(executor.formed.at(-1), ['c']);
});

void test('draining runs queued requests without waiting for their delay', () => {
  const { executor, add, batcher } = setup({ maxBatchSize: 8, maxDelayMicros: 1_000_000 });
  add('a');
  add('b');
  assert.deepEqual(executor.formed, []);
  batcher.drain();
  assert.deepEqual(executor.formed, [['a', 'b']]);
});

void test('results reach their own requests with the time they queued', async () => {
  const { add, finish, time, outcomes } = setup({ maxBatchSize: 8 });
  add('a');
  time.advanceTo(400);
  add('b');
  time.advanceTo(1000);
  time.advanceTo(1500);
  await finish();
  // Both ran in one batch, handed over at 1000 and back at 1500 (what their traces show).
  const batch = {
    requests: 2,
    rows: 2,
    startedMicros: 1000,
    endedMicros: 1500,
    workStartedMicros: -1,
    workEndedMicros: -1,
  };
  assert.deepEqual(outcomes.get('a'), { kind: 'done', value: 'a', queuedMicros: 1000, batch });
  assert.deepEqual(outcomes.get('b'), { kind: 'done', value: 'b', queuedMicros: 600, batch });
});

void test('with a deferring scheduler, requests enqueued in one turn form one batch', async () => {
  const time = new FakeTime();
  const executor = new HeldExecutor<string>(time);
  const deferred: (() => void)[] = [];
  const batcher = new DynamicBatcher<string, string>({
    config: { maxBatchSize: 8, maxDelayMicros: 0, maxQueue: 100 },
    executor: executor.run,
    clock: time,
    scheduler: { schedule: time.schedule.bind(time), soon: (run) => deferred.push(run) },
  });
  const enqueue = (id: string): void => {
    const queued = batcher.enqueue({
      key: 'a',
      rows: 1,
      priority: 'normal',
      deadlineMicros: null,
      payload: id,
    });
    assert.ok(queued.ok);
  };
  for (const id of ids('r', 3)) enqueue(id);
  // Nothing has run yet, and one deferred pump serves all three.
  assert.equal(executor.batches.length, 0);
  assert.equal(deferred.length, 1);
  deferred.shift()!();
  assert.deepEqual(executor.batches[0]?.payloads, ['r0', 'r1', 'r2']);
  // While a batch runs, arrivals queue without scheduling anything; its end dispatches them.
  for (const id of ids('s', 2)) enqueue(id);
  assert.equal(deferred.length, 0);
  executor.last().finish();
  await settle();
  assert.deepEqual(executor.batches[1]?.payloads, ['s0', 's1']);
});
