// The read-write lock: readers share, a writer is alone, and the queue is first come first
// served (a waiting writer is not starved by readers that arrive after it).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ReadWriteLock } from '../../src/core/rw-lock.ts';

/** A piece of work the test finishes by hand; `log` records when it starts and ends. */
function held(log: string[], name: string) {
  let finish!: () => void;
  const gate = new Promise<void>((resolve) => (finish = resolve));
  return {
    finish,
    work: async (): Promise<string> => {
      log.push(`${name}+`);
      await gate;
      log.push(`${name}-`);
      return name;
    },
  };
}

const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

test('readers share; a writer waits for them, and readers after it wait for the writer', async () => {
  const lock = new ReadWriteLock();
  const log: string[] = [];
  const r1 = held(log, 'r1');
  const r2 = held(log, 'r2');
  const w = held(log, 'w');
  const r3 = held(log, 'r3');
  const done = [lock.read(r1.work), lock.read(r2.work), lock.write(w.work), lock.read(r3.work)];
  await settle();
  assert.deepEqual(log, ['r1+', 'r2+']);
  r1.finish();
  await settle();
  assert.deepEqual(log, ['r1+', 'r2+', 'r1-']);
  r2.finish();
  await settle();
  assert.deepEqual(log, ['r1+', 'r2+', 'r1-', 'r2-', 'w+']);
  w.finish();
  await settle();
  assert.deepEqual(log, ['r1+', 'r2+', 'r1-', 'r2-', 'w+', 'w-', 'r3+']);
  r3.finish();
  assert.deepEqual(await Promise.all(done), ['r1', 'r2', 'w', 'r3']);
});

test('work that throws releases the lock', async () => {
  const lock = new ReadWriteLock();
  await assert.rejects(
    lock.write(() => Promise.reject(new Error('boom'))),
    /boom/,
  );
  await assert.rejects(
    lock.read(() => Promise.reject(new Error('again'))),
    /again/,
  );
  assert.equal(await lock.write(() => Promise.resolve('free')), 'free');
});
