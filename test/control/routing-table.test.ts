// The routing table's acknowledgements: a replica is stopped once a gateway holds the
// snapshot without it, so only snapshots that exist can be acknowledged.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RoutingTable } from '../../src/control/routing-table.ts';

const empty = { auth: 'dev' as const, endpoints: [], apiKeys: [], teamLimits: [] };

test('a poll claiming a snapshot never published acknowledges only what exists', async () => {
  const table = new RoutingTable(empty, { now: () => 0 });
  table.publish({ ...empty, teamLimits: [{ team: 't', requestsPerSecond: 1, burst: 1 }] });
  const published = table.current().version;
  // A stray or forged poll far in the future: the current snapshot at most.
  table.acknowledge(published + 1_000_000);
  assert.equal(await table.waitForAck(published, 0), true);
  // The next snapshot has not been seen by anyone: waiting for it times out.
  table.publish(empty);
  assert.equal(await table.waitForAck(published + 1, 20), false);
  table.acknowledge(published + 1);
  assert.equal(await table.waitForAck(published + 1, 0), true);
  table.close();
});

test('held, a long-poll gets nothing until the hold ends, then the snapshot of that moment', async () => {
  const table = new RoutingTable(empty, { now: () => 1_000 });
  let release!: () => void;
  table.holdUntil(new Promise<void>((resolve) => (release = resolve)));
  // A gateway holding an older snapshot (of the control plane before this one): the empty
  // initial snapshot is newer, but must not reach it.
  const older = table.current().version - 1;
  assert.equal(await table.waitForNewer(older, 20), null);
  const poll = table.waitForNewer(older, 10_000);
  const withReplicas = { ...empty, teamLimits: [{ team: 't', requestsPerSecond: 1, burst: 1 }] };
  table.publish(withReplicas);
  release();
  assert.deepEqual((await poll)?.teamLimits, withReplicas.teamLimits);
  table.close();
});

test('a replica leaves only once every gateway process acked the snapshot without it', async () => {
  const table = new RoutingTable(empty, { now: () => 0 });
  const before = table.current().version;
  // Two gateway processes hold the current snapshot (their polls say so).
  table.acknowledge(before, '100/0');
  table.acknowledge(before, '100/1');
  table.publish({ ...empty, teamLimits: [{ team: 't', requestsPerSecond: 1, burst: 1 }] });
  const without = table.current().version;
  const released = table.waitForAck(without, 60_000);
  let settled = false;
  void released.then(() => (settled = true));
  table.acknowledge(without, '100/0');
  // One gateway holds it; the other may still route to the replica.
  assert.equal(table.allAcked(without), false);
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(settled, false);
  table.acknowledge(without, '100/1');
  assert.equal(await released, true);
  assert.deepEqual(
    [...table.ackCounts()],
    [
      ['100/0', 2],
      ['100/1', 2],
    ],
  );
  table.close();
});

test('a gateway that stopped polling drops out of the set; one polling now never does', async () => {
  let nowMs = 0;
  const table = new RoutingTable(empty, { now: () => nowMs }, { gatewayLivenessMs: 1_000 });
  const before = table.current().version;
  table.acknowledge(before, 'dead');
  // This one holds a poll open (after = current: it waits for the next snapshot).
  const abort = new AbortController();
  const open = table.waitForNewer(before, 60_000, abort.signal, 'alive');
  table.publish({ ...empty, teamLimits: [{ team: 't', requestsPerSecond: 1, burst: 1 }] });
  assert.equal((await open)?.version, before + 1);
  const without = table.current().version;
  const next = table.waitForNewer(without, 60_000, abort.signal, 'alive');
  const released = table.waitForAck(without, 60_000);
  // 'dead' is still within its window: it holds the drain.
  assert.equal(table.allAcked(without), false);
  nowMs = 5_000;
  // Past its window it is forgotten; 'alive', whose poll is open, is kept though its last
  // poll began as long ago.
  assert.equal(await released, true);
  assert.deepEqual([...table.ackCounts().keys()], ['alive']);
  abort.abort();
  assert.equal(await next, null);
  table.close();
});

test('a restarted gateway under the same id counts with what it holds now', () => {
  const table = new RoutingTable(empty, { now: () => 0 });
  table.publish({ ...empty, teamLimits: [{ team: 't', requestsPerSecond: 1, burst: 1 }] });
  const newest = table.current().version;
  table.acknowledge(newest, '7/0');
  assert.equal(table.allAcked(newest), true);
  // Replaced by a process holding the older persisted snapshot: it holds the drain again.
  table.acknowledge(newest - 1, '7/0');
  assert.equal(table.allAcked(newest), false);
  table.close();
});
