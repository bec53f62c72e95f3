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
