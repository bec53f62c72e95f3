// Autoscaling and pools, the store contract (migration 6) on SQLite and PostgreSQL: endpoint
// counts written with their events in one transaction, demand merged per minute, worker pools.

import assert from 'node:assert/strict';
import { KilnError } from '../../src/core/errors.ts';
import { HistogramSketch } from '../../src/traffic/histogram-sketch.ts';
import type { DemandRow } from '../../src/store/scaling-records.ts';
import { forEachStore, type StoreUnderTest } from '../helpers/store-kinds.ts';
import { forEachStoreUpgrade } from '../helpers/store-upgrade.ts';
import { seedEndpoints } from '../helpers/seed-endpoints.ts';

/** Model iris v1 and endpoints `iris` and `other` serving it. */
async function seeded(subject: StoreUnderTest): Promise<StoreUnderTest> {
  await seedEndpoints(subject.store, { versions: 1, endpoints: ['iris', 'other'] });
  return subject;
}

function kilnCode(code: string) {
  return (error: unknown): boolean => {
    assert.ok(error instanceof KilnError, `expected KilnError, got ${String(error)}`);
    assert.equal(error.code, code, error.message);
    return true;
  };
}

function sketchOf(...values: number[]): HistogramSketch {
  const sketch = new HistogramSketch();
  for (const v of values) sketch.add(v);
  return sketch;
}

function demand(minuteStart: string, arrivals: number, latencies: number[]): DemandRow {
  return {
    endpoint: 'iris',
    minuteStart,
    arrivals,
    concurrencySeconds: arrivals * 0.5,
    seconds: 60,
    latencyMs: sketchOf(...latencies).snapshot(),
  };
}

forEachStore(
  'endpoint scale: written with its event in one step, conditional on the stored count',
  async (subject) => {
    const { store, clock } = await seeded(subject);
    assert.equal(await store.getEndpointScale('iris'), null);
    await assert.rejects(
      store.setEndpointScale({ endpoint: 'missing', replicas: 1, reason: 'deploy' }),
      kilnCode('KILN_ENDPOINT_NOT_FOUND'),
    );
    // A conditional write against no count at all is a conflict, not a create.
    await assert.rejects(
      store.setEndpointScale({ endpoint: 'iris', replicas: 1, reason: 'x', expectReplicas: 1 }),
      kilnCode('KILN_SCALE_CONFLICT'),
    );

    const created = await store.setEndpointScale({
      endpoint: 'iris',
      replicas: 2,
      reason: 'deployed with 2 replicas',
      event: { endpoint: 'iris', kind: 'manual', from: 0, to: 2, mode: 'manual', reason: 'deploy' },
    });
    assert.deepEqual(created, {
      endpoint: 'iris',
      replicas: 2,
      reason: 'deployed with 2 replicas',
      lastDemandAt: null,
      updatedAt: '2026-01-01T00:00:00.000Z',
    });

    clock.advance(1000);
    const up = await store.setEndpointScale({
      endpoint: 'iris',
      replicas: 5,
      reason: 'concurrency 9.2 over target 2',
      expectReplicas: 2,
      lastDemandAt: '2026-01-01T00:00:01Z',
      event: { endpoint: 'iris', kind: 'scale-up', from: 2, to: 5, mode: 'panic', reason: 'spike' },
    });
    assert.equal(up.replicas, 5);
    assert.equal(up.lastDemandAt, '2026-01-01T00:00:01.000Z');

    // A stale writer is refused and writes nothing: neither count nor event.
    await assert.rejects(
      store.setEndpointScale({
        endpoint: 'iris',
        replicas: 1,
        reason: 'stale',
        expectReplicas: 2,
        event: { endpoint: 'iris', kind: 'scale-down', from: 2, to: 1, mode: 'stable', reason: '' },
      }),
      (error: unknown) => {
        kilnCode('KILN_SCALE_CONFLICT')(error);
        assert.deepEqual((error as KilnError).details, { expectedReplicas: 2, replicas: 5 });
        return true;
      },
    );
    // Bad input writes nothing either.
    await assert.rejects(
      store.setEndpointScale({ endpoint: 'iris', replicas: -1, reason: 'x' }),
      kilnCode('KILN_VALIDATION_FAILED'),
    );
    await assert.rejects(
      store.setEndpointScale({
        endpoint: 'iris',
        replicas: 1,
        reason: 'x',
        event: {
          endpoint: 'other',
          kind: 'scale-down',
          from: 5,
          to: 1,
          mode: 'stable',
          reason: '',
        },
      }),
      kilnCode('KILN_VALIDATION_FAILED'),
    );

    // No event: same count, only the demand time moves; lastDemandAt is kept when not given.
    clock.advance(1000);
    const quiet = await store.setEndpointScale({ endpoint: 'iris', replicas: 5, reason: 'steady' });
    assert.equal(quiet.lastDemandAt, '2026-01-01T00:00:01.000Z');
    assert.equal(quiet.updatedAt, '2026-01-01T00:00:02.000Z');

    await store.setEndpointScale({
      endpoint: 'other',
      replicas: 0,
      reason: 'idle',
      event: {
        endpoint: 'other',
        kind: 'to-zero',
        from: 1,
        to: 0,
        mode: 'idle',
        reason: 'idle 5m',
      },
    });
    assert.deepEqual(
      (await store.listEndpointScales()).map((s) => [s.endpoint, s.replicas]),
      [
        ['iris', 5],
        ['other', 0],
      ],
    );

    const events = await store.listScaleEvents({ endpoint: 'iris' });
    assert.deepEqual(
      events.map((e) => [e.kind, e.from, e.to, e.mode]),
      [
        ['scale-up', 2, 5, 'panic'],
        ['manual', 0, 2, 'manual'],
      ],
    );
    assert.equal(events[0]?.at, '2026-01-01T00:00:01.000Z');
    assert.deepEqual(
      (await store.listScaleEvents({})).map((e) => e.endpoint),
      ['other', 'iris', 'iris'],
    );
    assert.deepEqual(
      (await store.listScaleEvents({ limit: 1 })).map((e) => e.kind),
      ['to-zero'],
    );
    assert.deepEqual(
      (await store.listScaleEvents({ endpoint: 'iris', since: '2026-01-01T00:00:01Z' })).map(
        (e) => e.kind,
      ),
      ['scale-up'],
    );
    await assert.rejects(store.listScaleEvents({ limit: 0 }), kilnCode('KILN_VALIDATION_FAILED'));
    await assert.rejects(
      store.listScaleEvents({ since: 'yesterday' }),
      kilnCode('KILN_VALIDATION_FAILED'),
    );

    // Deleting the endpoint deletes its count; its history stays.
    await store.deleteEndpoint('iris');
    assert.equal(await store.getEndpointScale('iris'), null);
    assert.equal((await store.listScaleEvents({ endpoint: 'iris' })).length, 2);
    await store.close();

    const again = await subject.openAnother({ clock });
    assert.equal((await again.getEndpointScale('other'))?.replicas, 0);
  },
);

forEachStore(
  'demand: rows of the same minute add up (counts and latency sketches), bad rows refuse the call',
  async (subject) => {
    const { store } = await seeded(subject);
    await store.mergeDemand([
      demand('2026-01-01T00:00:00Z', 10, [5, 6]),
      demand('2026-01-01T00:01:00.000Z', 4, [8]),
    ]);
    // A second gateway's report for minute 0.
    await store.mergeDemand([demand('2026-01-01T00:00:00.000Z', 3, [100])]);

    const rows = await store.listDemand({ endpoint: 'iris', since: '2026-01-01T00:00:00Z' });
    assert.deepEqual(
      rows.map((r) => [r.minuteStart, r.arrivals, r.concurrencySeconds, r.seconds]),
      [
        ['2026-01-01T00:00:00.000Z', 13, 6.5, 120],
        ['2026-01-01T00:01:00.000Z', 4, 2, 60],
      ],
    );
    const first = rows[0];
    assert.ok(first !== undefined);
    assert.deepEqual(first.latencyMs, sketchOf(5, 6, 100).snapshot());

    // [since, until): the until minute itself is left out.
    assert.deepEqual(
      (
        await store.listDemand({
          endpoint: 'iris',
          since: '2026-01-01T00:00:00Z',
          until: '2026-01-01T00:01:00Z',
        })
      ).map((r) => r.minuteStart),
      ['2026-01-01T00:00:00.000Z'],
    );
    assert.deepEqual(
      await store.listDemand({ endpoint: 'other', since: '2025-01-01T00:00:00Z' }),
      [],
    );

    // One bad row refuses the whole call: the good row before it is not merged either.
    for (const bad of [
      demand('2026-01-01T00:02:30Z', 1, [1]),
      demand('not a time', 1, [1]),
      demand('2026-01-01T00:02:00Z', -1, [1]),
      demand('2026-01-01T00:02:00Z', 1.5, [1]),
      { ...demand('2026-01-01T00:02:00Z', 1, [1]), seconds: Number.NaN },
      // Its accuracy differs from the stored row's: the sketches would not line up.
      {
        ...demand('2026-01-01T00:00:00Z', 1, [1]),
        latencyMs: new HistogramSketch(0.05).snapshot(),
      },
    ]) {
      await assert.rejects(
        store.mergeDemand([demand('2026-01-01T00:03:00Z', 1, [1]), bad]),
        kilnCode('KILN_VALIDATION_FAILED'),
        JSON.stringify(bad),
      );
    }
    assert.equal(
      (await store.listDemand({ endpoint: 'iris', since: '2026-01-01T00:02:00Z' })).length,
      0,
    );
    assert.equal(
      (await store.listDemand({ endpoint: 'iris', since: '2026-01-01T00:00:00Z' }))[0]?.arrivals,
      13,
    );

    assert.equal(await store.pruneDemand('2026-01-01T00:01:00Z'), 1);
    assert.deepEqual(
      (await store.listDemand({ endpoint: 'iris', since: '2026-01-01T00:00:00Z' })).map(
        (r) => r.minuteStart,
      ),
      ['2026-01-01T00:01:00.000Z'],
    );
  },
);

forEachStore(
  'pools: put creates or updates, bad sizes refused, delete refused while an endpoint uses it',
  async (subject) => {
    const { store, clock } = await seeded(subject);
    assert.deepEqual(await store.listPools(), []);
    const created = await store.putPool({
      name: 'small',
      team: 'risk',
      workers: 2,
      memoryBudgetBytes: 1 << 20,
    });
    assert.deepEqual(created, {
      name: 'small',
      team: 'risk',
      workers: 2,
      memoryBudgetBytes: 1 << 20,
      createdAt: '2026-01-01T00:00:00.000Z',
      updatedAt: '2026-01-01T00:00:00.000Z',
    });
    clock.advance(5000);
    const updated = await store.putPool({
      name: 'small',
      team: 'risk',
      workers: 3,
      memoryBudgetBytes: 2 << 20,
    });
    assert.equal(updated.workers, 3);
    assert.equal(updated.createdAt, '2026-01-01T00:00:00.000Z');
    assert.equal(updated.updatedAt, '2026-01-01T00:00:05.000Z');
    for (const bad of [
      { workers: 0, memoryBudgetBytes: 1 },
      { workers: 1.5, memoryBudgetBytes: 1 },
      { workers: 1, memoryBudgetBytes: 0 },
      { workers: 1, memoryBudgetBytes: -5 },
    ]) {
      await assert.rejects(
        store.putPool({ name: 'bad', team: 'risk', ...bad }),
        kilnCode('KILN_VALIDATION_FAILED'),
      );
    }
    await store.putPool({ name: 'big', team: 'risk', workers: 1, memoryBudgetBytes: 1 });
    assert.deepEqual(
      (await store.listPools()).map((p) => p.name),
      ['big', 'small'],
    );
    assert.equal((await store.getPool('small'))?.memoryBudgetBytes, 2 << 20);
    assert.equal(await store.getPool('none'), null);

    await store.putEndpoint({
      name: 'pooled',
      team: 'risk',
      model: 'iris',
      version: 1,
      ref: '1',
      replicas: 1,
      config: { pool: 'small' },
    });
    await assert.rejects(store.deletePool('small'), (error: unknown) => {
      kilnCode('KILN_POOL_IN_USE')(error);
      assert.deepEqual((error as KilnError).details, { endpoints: ['pooled'] });
      return true;
    });
    assert.equal((await store.deletePool('big'))?.name, 'big');
    assert.equal(await store.deletePool('big'), null);
    await store.deleteEndpoint('pooled');
    assert.equal((await store.deletePool('small'))?.name, 'small');
  },
);

forEachStore(
  'two control planes scaling one endpoint: the second conditional write on the same count is a conflict',
  async (subject) => {
    const { store: a } = await seeded(subject);
    const b = await subject.openAnother();
    await a.setEndpointScale({ endpoint: 'iris', replicas: 1, reason: 'deploy' });
    const results = await Promise.allSettled(
      [a, b].map((plane, i) =>
        plane.setEndpointScale({
          endpoint: 'iris',
          replicas: 2 + i,
          reason: `plane ${i}`,
          expectReplicas: 1,
          event: {
            endpoint: 'iris',
            kind: 'scale-up',
            from: 1,
            to: 2 + i,
            mode: 'stable',
            reason: `plane ${i}`,
          },
        }),
      ),
    );
    const won = results.filter((r) => r.status === 'fulfilled');
    assert.equal(won.length, 1, JSON.stringify(results));
    for (const r of results) {
      if (r.status === 'rejected') kilnCode('KILN_SCALE_CONFLICT')(r.reason);
    }
    const stored = await b.getEndpointScale('iris');
    const winner = won[0];
    assert.ok(winner !== undefined && winner.status === 'fulfilled');
    assert.equal(stored?.replicas, winner.value.replicas);
    // One event: the refused write wrote none.
    assert.deepEqual(
      (await a.listScaleEvents({ endpoint: 'iris' })).map((e) => e.to),
      [winner.value.replicas],
    );
  },
);

forEachStoreUpgrade(
  'migration 6 upgrades a database made at version 5 and keeps its endpoints',
  5,
  async (old, upgrade) => {
    await seedEndpoints(old, { versions: 1, endpoints: ['iris'], replicas: 2 });
    const store = await upgrade();
    assert.equal((await store.getEndpoint('iris'))?.replicas, 2);
    assert.equal(
      (await store.setEndpointScale({ endpoint: 'iris', replicas: 0, reason: 'x' })).replicas,
      0,
    );
  },
);
