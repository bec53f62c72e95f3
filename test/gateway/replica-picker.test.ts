import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pickReplica, type ReplicaLoad } from '../../src/gateway/replica-picker.ts';

function replicas(...loads: Array<number | [number, number]>): Array<ReplicaLoad & { id: number }> {
  return loads.map((load, id) =>
    typeof load === 'number'
      ? { id, outstanding: load, ejectedUntilMs: 0 }
      : { id, outstanding: load[0], ejectedUntilMs: load[1] },
  );
}

test('the least loaded replica wins', () => {
  const list = replicas(3, 1, 2);
  for (let start = 0; start < 3; start++) assert.equal(pickReplica(list, start, 0, null)?.id, 1);
});

test('equal loads go to the first replica in rotation order', () => {
  const list = replicas(0, 0, 0);
  assert.deepEqual(
    [0, 1, 2, 3, 4].map((start) => pickReplica(list, start, 0, null)?.id),
    [0, 1, 2, 0, 1],
  );
});

test('ejected replicas are skipped while others exist, and used when none does', () => {
  const list = replicas([0, 100], 5, [1, 100]);
  assert.equal(pickReplica(list, 0, 50, null)?.id, 1);
  // Ejection over at t=100.
  assert.equal(pickReplica(list, 0, 100, null)?.id, 0);
  // Only ejected ones left after excluding 1: the least loaded of them.
  assert.equal(pickReplica(list, 0, 50, list[1]!)?.id, 0);
});

test('the excluded replica is never picked; nothing left gives null', () => {
  const list = replicas(0);
  assert.equal(pickReplica(list, 0, 0, list[0]!), null);
  assert.equal(pickReplica([], 0, 0, null), null);
});
