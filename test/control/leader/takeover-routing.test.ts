// At a takeover the last leader's routing stays until the new leader's serves every endpoint
// it served (or dropped it): a pure check over two snapshots, and the bounded wait.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { RoutingSnapshot } from '../../../src/gateway/routing-snapshot.ts';
import { servesWhatWasServed, untilServing } from '../../../src/control/leader/takeover-routing.ts';
import { RoutingTable } from '../../../src/control/routing-table.ts';
import { systemClock } from '../../../src/core/clock.ts';

/** A snapshot with these endpoints, each with that many replicas (only the count matters). */
function snapshot(endpoints: Record<string, number>): RoutingSnapshot {
  return {
    version: 1,
    generatedAt: '2026-01-01T00:00:00.000Z',
    auth: 'dev',
    apiKeys: [],
    teamLimits: [],
    endpoints: Object.entries(endpoints).map(([name, count]) => ({
      name,
      replicas: Array.from({ length: count }, (_, i) => ({ id: `${name}-${i}` })),
    })),
  } as unknown as RoutingSnapshot;
}

test('the new routing serves what the old served: every routed endpoint has a replica, or is gone', () => {
  const before = snapshot({ a: 2, b: 1, idle: 0 });
  assert.equal(servesWhatWasServed(before, snapshot({ a: 1, b: 1, idle: 0 })), true);
  assert.equal(servesWhatWasServed(before, snapshot({ a: 1, idle: 0 })), true, 'b deleted');
  assert.equal(servesWhatWasServed(before, snapshot({ a: 1, b: 0 })), false, 'b not ready');
  assert.equal(servesWhatWasServed(before, snapshot({ a: 0, b: 3 })), false, 'a not ready');
  assert.equal(servesWhatWasServed(snapshot({}), snapshot({})), true);
});

test('the wait ends when the table serves it, when abandoned, or at its bound', async () => {
  const table = new RoutingTable(
    { auth: 'dev', endpoints: [], apiKeys: [], teamLimits: [] },
    systemClock,
  );
  const before = snapshot({ a: 1 });
  const { version: _v, generatedAt: _g, ...content } = snapshot({ a: 1 });
  const waiting = untilServing(before, table, 60_000, () => false);
  table.publish({ ...content, endpoints: snapshot({ a: 0 }).endpoints });
  table.publish(content);
  assert.equal(await waiting, true);
  const { version: _v2, generatedAt: _g2, ...none } = snapshot({ a: 0 });
  table.publish(none);
  assert.equal(await untilServing(before, table, 60_000, () => true), false);
  assert.equal(await untilServing(before, table, 0, () => false), false);
});
