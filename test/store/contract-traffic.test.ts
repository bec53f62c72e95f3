// Traffic management, the store contract (migration 5) on SQLite and PostgreSQL: traffic
// records written with their history in one transaction, rollouts and experiments, outcomes,
// observations, golden sets; several control planes on one database.

import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import pg from 'pg';
import { KilnError } from '../../src/core/errors.ts';
import type {
  NewRollout,
  NewTrafficEvent,
  TrafficPolicy,
} from '../../src/store/traffic-records.ts';
import { forEachStore, type StoreUnderTest } from '../helpers/store-kinds.ts';
import { forEachStoreUpgrade } from '../helpers/store-upgrade.ts';
import { seedEndpoints } from '../helpers/seed-endpoints.ts';

/** Model iris v1..v3 and endpoint `iris` serving v1. */
async function seeded(subject: StoreUnderTest): Promise<StoreUnderTest> {
  await seedEndpoints(subject.store, { versions: 3, endpoints: ['iris'] });
  return subject;
}

function kilnCode(code: string) {
  return (error: unknown): boolean => {
    assert.ok(error instanceof KilnError, `expected KilnError, got ${String(error)}`);
    assert.equal(error.code, code, error.message);
    return true;
  };
}

function event(action: NewTrafficEvent['action'], endpoint = 'iris'): NewTrafficEvent {
  return { endpoint, actor: 'token "ci"', action, reason: `test ${action}`, detail: { action } };
}

const split90: TrafficPolicy = {
  versions: [
    { model: 'iris', version: 1, weight: 90 },
    { model: 'iris', version: 2, weight: 10 },
  ],
  shadows: [{ model: 'iris', version: 3, sampleRate: 0.5 }],
  salt: 'salt-1',
  keyPath: '$.parameters.user',
  sliceKey: 'country',
  slicePath: '$.parameters.country',
};

function canary(id: string, endpoint = 'iris'): NewRollout {
  return {
    id,
    endpoint,
    strategy: 'canary',
    baseline: { model: 'iris', version: 1 },
    canary: { model: 'iris', version: 2 },
    steps: [1, 5, 25, 50, 100],
    stepIndex: -1,
    intervalMs: 120_000,
    thresholds: { maxErrorRate: 0.01, maxP99Ms: 50, minRequests: 100 },
    sliceKey: 'country',
    slicePath: '$.parameters.country',
    state: 'starting',
    stepStartedAt: null,
    createdBy: 'token "ci"',
  };
}

/**
 * Runs SQL on the database under test directly, as another writer that skips the store
 * (`?` placeholders, made `$n` for PostgreSQL); returns the rows.
 */
async function rawSql(
  subject: StoreUnderTest,
  sql: string,
  values: readonly unknown[] = [],
): Promise<Record<string, unknown>[]> {
  if (subject.kind === 'sqlite') {
    const db = new Database(subject.location);
    try {
      const statement = db.prepare(sql);
      if (statement.reader) return statement.all(...values) as Record<string, unknown>[];
      statement.run(...values);
      return [];
    } finally {
      db.close();
    }
  }
  let n = 0;
  const client = new pg.Client({ connectionString: subject.location });
  await client.connect();
  try {
    return (
      await client.query(
        sql.replace(/\?/g, () => `$${++n}`),
        [...values],
      )
    ).rows as Record<string, unknown>[];
  } finally {
    await client.end();
  }
}

/** A unique index refused the row (SQLite's and PostgreSQL's codes). */
function uniqueViolation(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  assert.ok(code === 'SQLITE_CONSTRAINT_UNIQUE' || code === '23505', String(error));
  return true;
}

/** Every row of the traffic tables, to show a refused change wrote nothing. */
async function snapshotTables(subject: StoreUnderTest): Promise<Record<string, string[]>> {
  const tables = [
    'endpoints',
    'endpoint_traffic',
    'traffic_events',
    'rollouts',
    'experiments',
    'experiment_outcomes',
    'traffic_observations',
    'golden_sets',
  ];
  const snapshot: Record<string, string[]> = {};
  for (const table of tables) {
    const rows = await rawSql(subject, `SELECT * FROM ${table}`);
    snapshot[table] = rows.map((r) => JSON.stringify(r)).sort();
  }
  return snapshot;
}

forEachStore(
  'traffic record: absent until the first change; each change bumps the revision and logs its event',
  async (subject) => {
    const { store, clock } = await seeded(subject);
    assert.equal(await store.getEndpointTraffic('iris'), null);
    assert.deepEqual(await store.listEndpointTraffic(), []);

    const first = await store.updateEndpointTraffic('iris', {
      expectRevision: 0,
      policy: split90,
      event: event('policy'),
    });
    assert.deepEqual(first, {
      endpoint: 'iris',
      policy: split90,
      previous: null,
      warm: [],
      staged: [],
      revision: 1,
      updatedAt: '2026-01-01T00:00:00.000Z',
    });

    clock.advance(1000);
    const warmUntil = '2026-01-01T00:10:01.000Z';
    const second = await store.updateEndpointTraffic('iris', {
      expectRevision: 1,
      previous: { model: 'iris', version: 1 },
      warm: [{ model: 'iris', version: 1, until: warmUntil }],
      staged: [{ model: 'iris', version: 3 }],
      event: event('rollback'),
    });
    // Fields left undefined are kept.
    assert.deepEqual(second.policy, split90);
    assert.deepEqual(second.previous, { model: 'iris', version: 1 });
    assert.deepEqual(second.warm, [{ model: 'iris', version: 1, until: warmUntil }]);
    assert.deepEqual(second.staged, [{ model: 'iris', version: 3 }]);
    assert.equal(second.revision, 2);
    assert.equal(second.updatedAt, '2026-01-01T00:00:01.000Z');

    const cleared = await store.updateEndpointTraffic('iris', {
      policy: null,
      previous: null,
      event: event('policy'),
    });
    assert.equal(cleared.policy, null);
    assert.equal(cleared.previous, null);
    assert.equal(cleared.revision, 3);
    assert.deepEqual(await store.listEndpointTraffic(), [cleared]);

    const history = await store.listTrafficEvents('iris', { limit: 10 });
    assert.deepEqual(
      history.items.map((e) => [e.action, e.at, e.actor, e.reason, e.detail]),
      [
        ['policy', '2026-01-01T00:00:01.000Z', 'token "ci"', 'test policy', { action: 'policy' }],
        [
          'rollback',
          '2026-01-01T00:00:01.000Z',
          'token "ci"',
          'test rollback',
          { action: 'rollback' },
        ],
        ['policy', '2026-01-01T00:00:00.000Z', 'token "ci"', 'test policy', { action: 'policy' }],
      ],
    );
    await store.close();

    // Survives a reopen.
    const again = await subject.openAnother({ clock });
    assert.deepEqual(await again.getEndpointTraffic('iris'), cleared);
  },
);

forEachStore(
  'traffic change: a stale expectRevision is a conflict and writes nothing',
  async (subject) => {
    const { store } = await seeded(subject);
    await store.updateEndpointTraffic('iris', { policy: split90, event: event('policy') });
    const before = await snapshotTables(subject);
    await assert.rejects(
      store.updateEndpointTraffic('iris', {
        expectRevision: 0,
        policy: null,
        stable: { model: 'iris', version: 2, ref: '2' },
        rollout: { create: canary('r-1') },
        event: event('rollback'),
      }),
      (error: unknown) => {
        kilnCode('KILN_TRAFFIC_CONFLICT')(error);
        assert.match((error as KilnError).message, /expected revision 0, it is at revision 1/);
        return true;
      },
    );
    assert.deepEqual(await snapshotTables(subject), before);
  },
);

forEachStore(
  'traffic change: unknown endpoint, unknown or deleted versions are refused',
  async (subject) => {
    const { store } = await seeded(subject);
    await assert.rejects(
      store.updateEndpointTraffic('nope', { policy: null, event: event('policy', 'nope') }),
      kilnCode('KILN_ENDPOINT_NOT_FOUND'),
    );
    const before = await snapshotTables(subject);
    await assert.rejects(
      store.updateEndpointTraffic('iris', {
        policy: { ...split90, versions: [{ model: 'iris', version: 9, weight: 100 }] },
        event: event('policy'),
      }),
      kilnCode('KILN_VERSION_NOT_FOUND'),
    );
    await assert.rejects(
      store.updateEndpointTraffic('iris', {
        policy: { ...split90, shadows: [{ model: 'ghost', version: 1, sampleRate: 1 }] },
        event: event('policy'),
      }),
      kilnCode('KILN_VERSION_NOT_FOUND'),
    );
    await assert.rejects(
      store.updateEndpointTraffic('iris', {
        stable: { model: 'iris', version: 7, ref: '7' },
        event: event('rollback'),
      }),
      kilnCode('KILN_VERSION_NOT_FOUND'),
    );
    await store.deleteVersion('iris', 3);
    await assert.rejects(
      store.updateEndpointTraffic('iris', {
        staged: [{ model: 'iris', version: 3 }],
        event: event('blue-green-stage'),
      }),
      kilnCode('KILN_VERSION_NOT_FOUND'),
    );
    assert.deepEqual(await snapshotTables(subject), before);
  },
);

forEachStore(
  'traffic change: moving the stable version updates the endpoint in the same write',
  async (subject) => {
    const { store, clock } = await seeded(subject);
    clock.advance(5000);
    const record = await store.updateEndpointTraffic('iris', {
      stable: { model: 'iris', version: 2, ref: '2' },
      previous: { model: 'iris', version: 1 },
      warm: [{ model: 'iris', version: 1, until: '2026-01-01T00:10:05.000Z' }],
      event: event('rollout-complete'),
    });
    assert.deepEqual(record.previous, { model: 'iris', version: 1 });
    const endpoint = await store.getEndpoint('iris');
    assert.equal(endpoint?.version, 2);
    assert.equal(endpoint?.ref, '2');
    assert.equal(endpoint?.updatedAt, '2026-01-01T00:00:05.000Z');
  },
);

forEachStore(
  'rollouts: created with the change, one active per endpoint, patched, listed newest first',
  async (subject) => {
    const { store, clock } = await seeded(subject);
    await store.updateEndpointTraffic('iris', {
      staged: [{ model: 'iris', version: 2 }],
      rollout: { create: canary('r-1') },
      event: event('rollout-start'),
    });
    const created = await store.getRollout('r-1');
    assert.equal(created?.state, 'starting');
    assert.equal(created?.stepIndex, -1);
    assert.deepEqual(created?.steps, [1, 5, 25, 50, 100]);
    assert.deepEqual(created?.thresholds, { maxErrorRate: 0.01, maxP99Ms: 50, minRequests: 100 });
    assert.equal(created?.lastAnalysis, null);
    assert.equal(created?.pausedAt, null);
    assert.equal(created?.reason, null);
    assert.equal(created?.finishedAt, null);
    assert.equal(created?.createdAt, '2026-01-01T00:00:00.000Z');
    assert.equal((await store.getActiveRollout('iris'))?.id, 'r-1');

    const before = await snapshotTables(subject);
    await assert.rejects(
      store.updateEndpointTraffic('iris', {
        policy: split90,
        rollout: { create: canary('r-2') },
        event: event('rollout-start'),
      }),
      (error: unknown) => {
        kilnCode('KILN_ROLLOUT_IN_PROGRESS')(error);
        assert.match((error as KilnError).message, /rollout r-1 in progress \(starting\)/);
        return true;
      },
    );
    assert.deepEqual(await snapshotTables(subject), before);

    clock.advance(1000);
    await store.updateEndpointTraffic('iris', {
      policy: { ...split90, shadows: [], salt: 'r-1' },
      rollout: {
        id: 'r-1',
        patch: {
          state: 'running',
          stepIndex: 0,
          stepStartedAt: '2026-01-01T00:00:01.000Z',
          lastAnalysis: { verdict: 'wait', reasons: ['too few requests'] },
        },
      },
      event: event('rollout-step'),
    });
    const running = await store.getRollout('r-1');
    assert.equal(running?.state, 'running');
    assert.equal(running?.stepIndex, 0);
    assert.equal(running?.stepStartedAt, '2026-01-01T00:00:01.000Z');
    assert.deepEqual(running?.lastAnalysis, { verdict: 'wait', reasons: ['too few requests'] });
    assert.equal(running?.updatedAt, '2026-01-01T00:00:01.000Z');
    assert.equal(running?.createdAt, '2026-01-01T00:00:00.000Z');

    await store.updateEndpointTraffic('iris', {
      policy: null,
      staged: [],
      rollout: {
        id: 'r-1',
        patch: {
          state: 'rolled-back',
          reason: 'slice country=de: error rate 0.3 > 0.01',
          finishedAt: '2026-01-01T00:00:01.000Z',
        },
      },
      event: event('rollout-rollback'),
    });
    assert.equal(await store.getActiveRollout('iris'), null);
    const done = await store.getRollout('r-1');
    assert.equal(done?.reason, 'slice country=de: error rate 0.3 > 0.01');
    // A patch leaves what it does not name.
    assert.deepEqual(done?.lastAnalysis, { verdict: 'wait', reasons: ['too few requests'] });

    // A new one may start now; lists are newest first, `active` filters.
    clock.advance(1000);
    await store.updateEndpointTraffic('iris', {
      rollout: { create: canary('r-2') },
      event: event('rollout-start'),
    });
    assert.deepEqual(
      (await store.listRollouts({ endpoint: 'iris' })).map((r) => r.id),
      ['r-2', 'r-1'],
    );
    assert.deepEqual(
      (await store.listRollouts({ active: true })).map((r) => r.id),
      ['r-2'],
    );
    assert.deepEqual(await store.listRollouts({ endpoint: 'other' }), []);

    // Making r-1 active again while r-2 is: refused.
    await assert.rejects(
      store.updateEndpointTraffic('iris', {
        rollout: { id: 'r-1', patch: { state: 'running' } },
        event: event('rollout-resume'),
      }),
      kilnCode('KILN_ROLLOUT_IN_PROGRESS'),
    );
    await assert.rejects(
      store.updateEndpointTraffic('iris', {
        rollout: { id: 'r-404', patch: { state: 'paused' } },
        event: event('rollout-pause'),
      }),
      kilnCode('KILN_ROLLOUT_NOT_FOUND'),
    );
    assert.equal(await store.getRollout('r-404'), null);
  },
);

forEachStore(
  'experiments: created and stopped with the change; one running per endpoint; not beside a rollout',
  async (subject) => {
    const { store, clock } = await seeded(subject);
    const variants = [
      { model: 'iris', version: 1, weight: 50 },
      { model: 'iris', version: 2, weight: 50 },
    ];
    const create = {
      id: 'x-1',
      endpoint: 'iris',
      name: 'ctr test',
      variants,
      salt: 'x-1',
      keyPath: '$.parameters.user',
      createdBy: 'token "ci"',
    };
    await store.updateEndpointTraffic('iris', {
      policy: {
        versions: variants,
        shadows: [],
        salt: 'x-1',
        keyPath: '$.parameters.user',
        sliceKey: null,
        slicePath: null,
      },
      experiment: { create },
      event: event('experiment-start'),
    });
    assert.deepEqual(await store.getExperiment('x-1'), {
      ...create,
      state: 'running',
      createdAt: '2026-01-01T00:00:00.000Z',
      stoppedAt: null,
    });
    await assert.rejects(
      store.updateEndpointTraffic('iris', {
        experiment: { create: { ...create, id: 'x-2' } },
        event: event('experiment-start'),
      }),
      kilnCode('KILN_EXPERIMENT_IN_PROGRESS'),
    );
    await assert.rejects(
      store.updateEndpointTraffic('iris', {
        rollout: { create: canary('r-1') },
        event: event('rollout-start'),
      }),
      kilnCode('KILN_EXPERIMENT_IN_PROGRESS'),
    );
    clock.advance(60_000);
    await store.updateEndpointTraffic('iris', {
      policy: null,
      experiment: { stop: 'x-1', at: '2026-01-01T00:01:00.000Z' },
      event: event('experiment-stop'),
    });
    const stopped = await store.getExperiment('x-1');
    assert.equal(stopped?.state, 'stopped');
    assert.equal(stopped?.stoppedAt, '2026-01-01T00:01:00.000Z');
    await assert.rejects(
      store.updateEndpointTraffic('iris', {
        experiment: { stop: 'x-1', at: '2026-01-01T00:01:00.000Z' },
        event: event('experiment-stop'),
      }),
      kilnCode('KILN_EXPERIMENT_STOPPED'),
    );
    await assert.rejects(
      store.updateEndpointTraffic('iris', {
        experiment: { stop: 'x-404', at: '2026-01-01T00:01:00.000Z' },
        event: event('experiment-stop'),
      }),
      kilnCode('KILN_EXPERIMENT_NOT_FOUND'),
    );
    // With a rollout active, no experiment may start.
    await store.updateEndpointTraffic('iris', {
      rollout: { create: canary('r-1') },
      event: event('rollout-start'),
    });
    await assert.rejects(
      store.updateEndpointTraffic('iris', {
        experiment: { create: { ...create, id: 'x-2' } },
        event: event('experiment-start'),
      }),
      kilnCode('KILN_ROLLOUT_IN_PROGRESS'),
    );
    assert.deepEqual(
      (await store.listExperiments({ endpoint: 'iris' })).map((x) => [x.id, x.state]),
      [['x-1', 'stopped']],
    );
    assert.deepEqual(await store.listExperiments({ state: 'running' }), []);
  },
);

forEachStore(
  'outcomes: merged per variant and metric; a metric keeps its kind; refused calls merge nothing',
  async (subject) => {
    const { store, clock } = await seeded(subject);
    const variants = [
      { model: 'iris', version: 1, weight: 50 },
      { model: 'iris', version: 2, weight: 50 },
    ];
    await store.updateEndpointTraffic('iris', {
      experiment: {
        create: {
          id: 'x-1',
          endpoint: 'iris',
          name: 'n',
          variants,
          salt: 'x-1',
          keyPath: null,
          createdBy: 'me',
        },
      },
      event: event('experiment-start'),
    });
    await assert.rejects(
      store.addOutcomes('x-404', [{ variant: 'iris:1', metric: 'buy', kind: 'rate', value: 1 }]),
      kilnCode('KILN_EXPERIMENT_NOT_FOUND'),
    );
    await store.addOutcomes('x-1', [
      { variant: 'iris:1', metric: 'buy', kind: 'rate', value: 1 },
      { variant: 'iris:1', metric: 'buy', kind: 'rate', value: 0 },
      { variant: 'iris:2', metric: 'buy', kind: 'rate', value: 1 },
      { variant: 'iris:1', metric: 'basket', kind: 'mean', value: 10 },
    ]);
    clock.advance(1000);
    await store.addOutcomes('x-1', [
      { variant: 'iris:1', metric: 'basket', kind: 'mean', value: 20 },
      { variant: 'iris:1', metric: 'buy', kind: 'rate', value: 1 },
    ]);
    const outcomes = await store.listOutcomes('x-1');
    assert.deepEqual(
      outcomes.map((o) => [o.variant, o.metric, o.kind, o.moments.count, o.moments.mean]),
      [
        ['iris:1', 'basket', 'mean', 2, 15],
        ['iris:1', 'buy', 'rate', 3, 2 / 3],
        ['iris:2', 'buy', 'rate', 1, 1],
      ],
    );
    const basket = outcomes[0];
    assert.equal(basket?.moments.m2, 50);
    assert.equal(basket?.moments.min, 10);
    assert.equal(basket?.moments.max, 20);
    assert.equal(basket?.updatedAt, '2026-01-01T00:00:01.000Z');

    const before = await snapshotTables(subject);
    // `buy` is a rate metric: a mean value for it refuses the whole call, the valid entry too.
    await assert.rejects(
      store.addOutcomes('x-1', [
        { variant: 'iris:2', metric: 'basket', kind: 'mean', value: 5 },
        { variant: 'iris:2', metric: 'buy', kind: 'mean', value: 3 },
      ]),
      (error: unknown) => {
        kilnCode('KILN_VALIDATION_FAILED')(error);
        assert.match((error as KilnError).message, /metric buy is a rate metric/);
        return true;
      },
    );
    // Two kinds for a new metric within one call.
    await assert.rejects(
      store.addOutcomes('x-1', [
        { variant: 'iris:1', metric: 'clicks', kind: 'mean', value: 5 },
        { variant: 'iris:2', metric: 'clicks', kind: 'rate', value: 1 },
      ]),
      kilnCode('KILN_VALIDATION_FAILED'),
    );
    await assert.rejects(
      store.addOutcomes('x-1', [{ variant: 'iris:3', metric: 'buy', kind: 'rate', value: 1 }]),
      /iris:3 is not a variant of experiment x-1/,
    );
    await assert.rejects(
      store.addOutcomes('x-1', [{ variant: 'iris:1', metric: 'buy', kind: 'rate', value: 0.5 }]),
      /must be 0 or 1/,
    );
    await assert.rejects(
      store.addOutcomes('x-1', [{ variant: 'iris:1', metric: 'basket', kind: 'mean', value: NaN }]),
      /finite/,
    );
    assert.deepEqual(await snapshotTables(subject), before);
    assert.deepEqual(await store.listOutcomes('x-404'), []);
  },
);

forEachStore(
  'observations: deltas merge into their 10 s rows; listed by range and kind; pruned by age',
  async (subject) => {
    const { store } = await seeded(subject);
    const sum = (existing: unknown, delta: unknown): unknown => {
      const a = (existing ?? { requests: 0 }) as { requests: number };
      const b = delta as { requests: number };
      return { requests: a.requests + b.requests };
    };
    const row = (bucketStart: string, requests: number, slice = '', version = 1) => ({
      endpoint: 'iris',
      bucketStart,
      kind: 'primary' as const,
      model: 'iris',
      version,
      slice,
      data: { requests },
    });
    await store.mergeObservations(
      [
        row('2026-01-01T00:00:00.000Z', 3),
        row('2026-01-01T00:00:00.000Z', 4),
        row('2026-01-01T00:00:00Z', 1, 'de'),
        row('2026-01-01T00:00:10.000Z', 2, '', 2),
        { ...row('2026-01-01T00:00:20.000Z', 5), kind: 'shadow' },
      ],
      sum,
    );
    await store.mergeObservations([row('2026-01-01T00:00:00.000Z', 10)], sum);
    const all = await store.listObservations({ endpoint: 'iris', since: '2026-01-01T00:00:00Z' });
    assert.deepEqual(
      all.map((o) => [o.bucketStart, o.kind, o.version, o.slice, o.data]),
      [
        ['2026-01-01T00:00:00.000Z', 'primary', 1, '', { requests: 17 }],
        ['2026-01-01T00:00:00.000Z', 'primary', 1, 'de', { requests: 1 }],
        ['2026-01-01T00:00:10.000Z', 'primary', 2, '', { requests: 2 }],
        ['2026-01-01T00:00:20.000Z', 'shadow', 1, '', { requests: 5 }],
      ],
    );
    assert.deepEqual(
      (
        await store.listObservations({
          endpoint: 'iris',
          since: '2026-01-01T00:00:05Z',
          until: '2026-01-01T00:00:20Z',
        })
      ).map((o) => o.bucketStart),
      ['2026-01-01T00:00:10.000Z'],
    );
    assert.deepEqual(
      (
        await store.listObservations({
          endpoint: 'iris',
          since: '2026-01-01T00:00:00Z',
          kind: 'shadow',
        })
      ).map((o) => o.data),
      [{ requests: 5 }],
    );
    assert.deepEqual(
      await store.listObservations({ endpoint: 'other', since: '2026-01-01T00:00:00Z' }),
      [],
    );

    // Off a bucket boundary: refused, and nothing of that call is merged.
    await assert.rejects(
      store.mergeObservations(
        [row('2026-01-01T00:00:00.000Z', 100), row('2026-01-01T00:00:03.000Z', 1)],
        sum,
      ),
      /observations\[1\]\.bucketStart .* is not on a 10000 ms boundary/,
    );
    // A merge that throws rolls the whole call back too.
    await assert.rejects(
      store.mergeObservations(
        [row('2026-01-01T00:00:00.000Z', 100), row('2026-01-01T00:00:10.000Z', 1)],
        (e, d) => {
          if ((d as { requests: number }).requests === 1) throw new Error('bad delta');
          return sum(e, d);
        },
      ),
      /bad delta/,
    );
    assert.deepEqual(
      (await store.listObservations({ endpoint: 'iris', since: '2026-01-01T00:00:00Z' }))[0]?.data,
      { requests: 17 },
    );

    assert.equal(await store.pruneObservations('2026-01-01T00:00:10.000Z'), 2);
    assert.deepEqual(
      (await store.listObservations({ endpoint: 'iris', since: '1970-01-01T00:00:00Z' })).map(
        (o) => o.bucketStart,
      ),
      ['2026-01-01T00:00:10.000Z', '2026-01-01T00:00:20.000Z'],
    );
    assert.equal(await store.pruneObservations('2026-01-01T00:00:10.000Z'), 0);
  },
);

forEachStore(
  'golden sets: replaced per version; a missing or deleted version has none',
  async (subject) => {
    const { store, clock } = await seeded(subject);
    const golden = {
      model: 'iris',
      version: 2,
      tolerance: { absolute: 1e-6, relative: 1e-4 },
      cases: [
        {
          request: { inputs: [{ name: 'x', shape: [1, 2], datatype: 'FP32', data: [1, 2] }] },
          outputs: [{ name: 'y', data: [1] }],
        },
      ],
    };
    assert.equal(await store.getGoldenSet('iris', 2), null);
    const stored = await store.setGoldenSet(golden);
    assert.deepEqual(stored, { ...golden, createdAt: '2026-01-01T00:00:00.000Z' });
    assert.deepEqual(await store.getGoldenSet('iris', 2), stored);
    clock.advance(1000);
    const replaced = await store.setGoldenSet({ ...golden, cases: [] });
    assert.deepEqual(replaced.cases, []);
    assert.equal(replaced.createdAt, '2026-01-01T00:00:01.000Z');
    assert.equal(await store.getGoldenSet('iris', 1), null);

    await assert.rejects(
      store.setGoldenSet({ ...golden, version: 9 }),
      kilnCode('KILN_VERSION_NOT_FOUND'),
    );
    await assert.rejects(
      store.setGoldenSet({ ...golden, model: 'nope' }),
      kilnCode('KILN_VERSION_NOT_FOUND'),
    );
    await store.deleteVersion('iris', 2);
    assert.equal(await store.getGoldenSet('iris', 2), null);
    await assert.rejects(store.setGoldenSet(golden), kilnCode('KILN_VERSION_NOT_FOUND'));
  },
);

forEachStore(
  'endpoint delete: its traffic record goes, its active rollout is aborted, history stays',
  async (subject) => {
    const { store, clock } = await seeded(subject);
    await store.updateEndpointTraffic('iris', {
      policy: split90,
      rollout: { create: canary('r-1') },
      event: event('rollout-start'),
    });
    clock.advance(1000);
    assert.equal((await store.deleteEndpoint('iris'))?.name, 'iris');
    assert.equal(await store.getEndpointTraffic('iris'), null);
    assert.deepEqual(await store.listEndpointTraffic(), []);
    const rollout = await store.getRollout('r-1');
    assert.equal(rollout?.state, 'aborted');
    assert.equal(rollout?.reason, 'the endpoint was deleted');
    assert.equal(rollout?.finishedAt, '2026-01-01T00:00:01.000Z');
    assert.equal((await store.listTrafficEvents('iris', { limit: 10 })).items.length, 1);

    // A new endpoint of the same name starts clean and may roll out again.
    await store.putEndpoint({
      name: 'iris',
      team: 'default',
      model: 'iris',
      version: 1,
      ref: '1',
      replicas: 1,
      config: {},
    });
    assert.equal(await store.getEndpointTraffic('iris'), null);
    const record = await store.updateEndpointTraffic('iris', {
      expectRevision: 0,
      rollout: { create: canary('r-2') },
      event: event('rollout-start'),
    });
    assert.equal(record.revision, 1);
  },
);

forEachStore(
  'a version the traffic runs cannot be deleted; one only kept as previous or expired warm can',
  async (subject) => {
    const { store, clock } = await seeded(subject);
    await store.updateEndpointTraffic('iris', {
      policy: split90,
      event: event('policy'),
    });
    for (const version of [2, 3]) {
      await assert.rejects(store.deleteVersion('iris', version), (error: unknown) => {
        kilnCode('KILN_VERSION_IN_USE')(error);
        assert.match((error as KilnError).message, /traffic of endpoint iris/);
        return true;
      });
    }
    await store.updateEndpointTraffic('iris', {
      policy: null,
      previous: { model: 'iris', version: 3 },
      warm: [{ model: 'iris', version: 2, until: '2026-01-01T00:10:00.000Z' }],
      event: event('policy'),
    });
    await assert.rejects(store.deleteVersion('iris', 2), kilnCode('KILN_VERSION_IN_USE'));
    assert.equal((await store.deleteVersion('iris', 3)).deletedAt !== null, true);
    clock.advance(10 * 60_000);
    assert.equal((await store.deleteVersion('iris', 2)).deletedAt !== null, true);
    // The expired entry may still be written back (the reconciler drops it on its next pass):
    // it names a deleted version, but runs nothing, so it is no reason to refuse a change.
    const record = await store.updateEndpointTraffic('iris', {
      warm: [{ model: 'iris', version: 2, until: '2026-01-01T00:10:00.000Z' }],
      event: event('policy'),
    });
    assert.equal(record.warm.length, 1);
    await assert.rejects(
      store.updateEndpointTraffic('iris', {
        warm: [{ model: 'iris', version: 2, until: '2026-01-01T00:30:00.000Z' }],
        event: event('policy'),
      }),
      kilnCode('KILN_VERSION_NOT_FOUND'),
    );
  },
);

forEachStore(
  'appendTrafficEvent: history without a change; pages newest first and filters by time',
  async (subject) => {
    const { store, clock } = await seeded(subject);
    for (let i = 0; i < 5; i++) {
      await store.appendTrafficEvent({ ...event('rollout-step'), detail: { i } });
      clock.advance(1000);
    }
    await store.appendTrafficEvent(event('policy', 'other'));
    const first = await store.listTrafficEvents('iris', { limit: 2 });
    assert.deepEqual(
      first.items.map((e) => e.detail),
      [{ i: 4 }, { i: 3 }],
    );
    assert.ok(first.nextPageToken !== null);
    const second = await store.listTrafficEvents('iris', {
      limit: 10,
      pageToken: first.nextPageToken,
    });
    assert.deepEqual(
      second.items.map((e) => e.detail),
      [{ i: 2 }, { i: 1 }, { i: 0 }],
    );
    assert.equal(second.nextPageToken, null);
    const recent = await store.listTrafficEvents('iris', {
      limit: 10,
      since: '2026-01-01T00:00:03.000Z',
    });
    assert.deepEqual(
      recent.items.map((e) => e.detail),
      [{ i: 4 }, { i: 3 }],
    );
    // The same instant written without milliseconds finds the same events.
    const short = await store.listTrafficEvents('iris', {
      limit: 10,
      since: '2026-01-01T00:00:03Z',
    });
    assert.deepEqual(
      short.items.map((e) => e.detail),
      [{ i: 4 }, { i: 3 }],
    );
    await assert.rejects(
      store.listTrafficEvents('iris', { limit: 10, since: 'last week' }),
      kilnCode('KILN_VALIDATION_FAILED'),
    );
    const noDetail = await store.appendTrafficEvent({
      endpoint: 'iris',
      actor: 'reconciler',
      action: 'warm-expired',
      reason: 'grace over',
      detail: undefined,
    });
    assert.equal(noDetail.detail, null);
  },
);

forEachStore(
  'a refused change undoes what it had already written (stable move, then a rollout refused)',
  async (subject) => {
    const { store } = await seeded(subject);
    await store.updateEndpointTraffic('iris', {
      rollout: { create: canary('r-1') },
      event: event('rollout-start'),
    });
    const before = await snapshotTables(subject);
    // The stable move is written before the rollout is checked: the refusal must undo it.
    await assert.rejects(
      store.updateEndpointTraffic('iris', {
        stable: { model: 'iris', version: 2, ref: '2' },
        policy: split90,
        rollout: { create: canary('r-2') },
        event: event('rollout-start'),
      }),
      kilnCode('KILN_ROLLOUT_IN_PROGRESS'),
    );
    assert.deepEqual(await snapshotTables(subject), before);
    assert.equal((await store.getEndpoint('iris'))?.version, 1);
    // An event naming another endpoint is a programming error, refused the same way.
    await assert.rejects(
      store.updateEndpointTraffic('iris', {
        stable: { model: 'iris', version: 2, ref: '2' },
        event: event('rollback', 'other'),
      }),
      /carries an event of endpoint other/,
    );
    assert.deepEqual(await snapshotTables(subject), before);
  },
);

forEachStore(
  'versions named by an active rollout or a running experiment cannot be deleted',
  async (subject) => {
    const { store } = await seeded(subject);
    await store.updateEndpointTraffic('iris', {
      rollout: { create: canary('r-1') },
      event: event('rollout-start'),
    });
    await assert.rejects(store.deleteVersion('iris', 2), /rollout r-1/);
    await store.updateEndpointTraffic('iris', {
      rollout: { id: 'r-1', patch: { state: 'aborted' } },
      event: event('rollout-abort'),
    });
    await store.updateEndpointTraffic('iris', {
      experiment: {
        create: {
          id: 'x-1',
          endpoint: 'iris',
          name: 'n',
          variants: [
            { model: 'iris', version: 1, weight: 50 },
            { model: 'iris', version: 3, weight: 50 },
          ],
          salt: 'x-1',
          keyPath: null,
          createdBy: 'me',
        },
      },
      event: event('experiment-start'),
    });
    await assert.rejects(store.deleteVersion('iris', 3), /experiment x-1/);
    assert.ok((await store.deleteVersion('iris', 2)).deletedAt !== null);
  },
);

forEachStore(
  'traffic of several endpoints is listed by name; bad query times are a 400',
  async (subject) => {
    const { store } = await seeded(subject);
    for (const name of ['zeta', 'alpha']) {
      await store.putEndpoint({
        name,
        team: 'default',
        model: 'iris',
        version: 2,
        ref: '2',
        replicas: 1,
        config: {},
      });
      await store.updateEndpointTraffic(name, {
        staged: [{ model: 'iris', version: 3 }],
        event: event('blue-green-stage', name),
      });
    }
    assert.deepEqual(
      (await store.listEndpointTraffic()).map((r) => r.endpoint),
      ['alpha', 'zeta'],
    );
    await assert.rejects(
      store.listObservations({ endpoint: 'iris', since: 'yesterday' }),
      kilnCode('KILN_VALIDATION_FAILED'),
    );
    await assert.rejects(store.pruneObservations('soon'), kilnCode('KILN_VALIDATION_FAILED'));
  },
);

forEachStore(
  'an endpoint a rollout or an experiment owns cannot move to another version by a put (checked in its transaction); the same version can',
  async (subject) => {
    const { store } = await seeded(subject);
    const put = (version: number, replicas = 1) =>
      store.putEndpoint({
        name: 'iris',
        team: 'default',
        model: 'iris',
        version,
        ref: String(version),
        replicas,
        config: {},
      });
    await store.updateEndpointTraffic('iris', {
      staged: [{ model: 'iris', version: 2 }],
      rollout: { create: canary('r-1') },
      event: event('rollout-start'),
    });
    await assert.rejects(put(3), kilnCode('KILN_ROLLOUT_IN_PROGRESS'));
    assert.equal((await store.getEndpoint('iris'))?.version, 1, 'nothing written');
    const same = await put(1, 2); // scaling the stable version is no move
    assert.equal(same.endpoint.replicas, 2);
    await store.updateEndpointTraffic('iris', {
      rollout: { id: 'r-1', patch: { state: 'aborted', finishedAt: new Date(0).toISOString() } },
      event: event('rollout-abort'),
    });
    const variants = [
      { model: 'iris', version: 1, weight: 50 },
      { model: 'iris', version: 2, weight: 50 },
    ];
    await store.updateEndpointTraffic('iris', {
      policy: {
        versions: variants,
        shadows: [],
        salt: 'x-9',
        keyPath: null,
        sliceKey: null,
        slicePath: null,
      },
      experiment: {
        create: {
          id: 'x-9',
          endpoint: 'iris',
          name: 'ab',
          variants,
          salt: 'x-9',
          keyPath: null,
          createdBy: 'ci',
        },
      },
      event: event('experiment-start'),
    });
    await assert.rejects(put(3), kilnCode('KILN_EXPERIMENT_IN_PROGRESS'));
    await store.updateEndpointTraffic('iris', {
      experiment: { stop: 'x-9', at: new Date(0).toISOString() },
      event: event('experiment-stop'),
    });
    assert.equal((await put(3)).endpoint.version, 3);
  },
);

forEachStore(
  'the partial unique indexes refuse a second active rollout or running experiment whoever writes',
  async (subject) => {
    const { store } = await seeded(subject);
    await store.updateEndpointTraffic('iris', {
      rollout: { create: canary('r-1') },
      event: event('rollout-start'),
    });
    const insertRollout = (id: string, state: string) =>
      rawSql(
        subject,
        `INSERT INTO rollouts (id, endpoint, strategy, baseline_model, baseline_version,
           canary_model, canary_version, steps_json, step_index, interval_ms, thresholds_json,
           state, last_analysis_json, created_by, created_at, updated_at)
         VALUES (?, 'iris', 'canary', 'iris', 1, 'iris', 2, '[100]', -1, 1, '{}', ?, 'null',
           'x', 't', 't')`,
        [id, state],
      );
    for (const state of ['starting', 'running', 'paused']) {
      await assert.rejects(insertRollout(`raw-${state}`, state), uniqueViolation);
    }
    // Finished ones are not limited.
    for (const state of ['succeeded', 'rolled-back', 'aborted']) {
      await insertRollout(`raw-${state}`, state);
    }
    const insertExperiment = (id: string, state: string) =>
      rawSql(
        subject,
        `INSERT INTO experiments (id, endpoint, name, variants_json, salt, state, created_by,
           created_at) VALUES (?, 'iris', 'n', '[]', 's', ?, 'x', 't')`,
        [id, state],
      );
    await insertExperiment('x-1', 'running');
    await assert.rejects(insertExperiment('x-2', 'running'), uniqueViolation);
    await insertExperiment('x-3', 'stopped');
    assert.deepEqual(
      (await store.listRollouts({ endpoint: 'iris', active: true })).map((r) => r.id),
      ['r-1'],
    );
  },
);

forEachStore(
  'rollouts started at once from several control planes: exactly one is created, the others are told which',
  async (subject) => {
    await seeded(subject);
    const planes = [subject.store];
    for (let i = 0; i < 3; i++) planes.push(await subject.openAnother());
    const results = await Promise.all(
      planes.map(async (plane, i) => {
        const id = `p-${i + 1}`;
        try {
          await plane.updateEndpointTraffic('iris', {
            rollout: { create: { ...canary(id), createdBy: `plane ${id}` } },
            event: { ...event('rollout-start'), actor: `plane ${id}` },
          });
          return { id, ok: true };
        } catch (error) {
          return { id, ok: false, code: error instanceof KilnError ? error.code : String(error) };
        }
      }),
    );
    const winners = results.filter((r) => r.ok);
    assert.equal(winners.length, 1, JSON.stringify(results));
    for (const r of results.filter((x) => !x.ok)) assert.equal(r.code, 'KILN_ROLLOUT_IN_PROGRESS');
    const reader = await subject.openAnother();
    assert.equal((await reader.getActiveRollout('iris'))?.id, winners[0]?.id);
    assert.equal((await reader.listRollouts({ endpoint: 'iris' })).length, 1);
    assert.equal((await reader.getEndpointTraffic('iris'))?.revision, 1);
    assert.equal((await reader.listTrafficEvents('iris', { limit: 10 })).items.length, 1);
  },
);

forEachStore(
  'two control planes on one database: a write based on a stale read is a conflict',
  async (subject) => {
    const { store: a } = await seeded(subject);
    const b = await subject.openAnother();
    await a.updateEndpointTraffic('iris', { policy: split90, event: event('policy') });
    const readByA = await a.getEndpointTraffic('iris');
    const readByB = await b.getEndpointTraffic('iris');
    assert.equal(readByA?.revision, 1);
    await b.updateEndpointTraffic('iris', {
      expectRevision: readByB?.revision ?? 0,
      policy: null,
      event: event('rollback'),
    });
    await assert.rejects(
      a.updateEndpointTraffic('iris', {
        expectRevision: readByA?.revision ?? 0,
        policy: { ...split90, salt: 'salt-2' },
        event: event('policy'),
      }),
      kilnCode('KILN_TRAFFIC_CONFLICT'),
    );
    assert.equal((await a.getEndpointTraffic('iris'))?.policy, null);
  },
);

forEachStoreUpgrade(
  'a database from before traffic management is migrated in place and keeps its endpoints',
  4,
  async (old, upgrade) => {
    await seedEndpoints(old, { versions: 1, endpoints: ['iris'] });
    const store = await upgrade();
    assert.equal(await store.getEndpointTraffic('iris'), null);
    const record = await store.updateEndpointTraffic('iris', {
      policy: {
        ...split90,
        versions: [{ model: 'iris', version: 1, weight: 100 }],
        shadows: [],
      },
      event: event('policy'),
    });
    assert.equal(record.revision, 1);
    assert.equal((await store.getEndpoint('iris'))?.version, 1);
  },
);
