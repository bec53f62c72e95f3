// The reconciler with traffic records (issue 13), against a backend the test drives and a
// store whose traffic records the test sets (kept in memory over the real SQLite store, so
// this runs before and after the store's own traffic tables): every version an endpoint
// has a use for runs, the snapshot routes each variant to its own replicas, a version that
// leaves stops only after a gateway holds a snapshot without it, a warm version stops at its
// time and is dropped from its record, and a restarted control plane adopts every revision.

import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import type { ReplicaLaunch, SurvivingReplica } from '../../src/control/backends/backend.ts';
import { EndpointService } from '../../src/control/endpoints.ts';
import { Reconciler } from '../../src/control/reconciler.ts';
import { revisionOf } from '../../src/control/endpoint-route.ts';
import { kilnError } from '../../src/core/errors.ts';
import type { Clock } from '../../src/core/clock.ts';
import { ArtifactStore } from '../../src/registry/artifact-store.ts';
import { Registry } from '../../src/registry/registry.ts';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import type { Store } from '../../src/store/store.ts';
import type {
  EndpointTrafficRecord,
  TrafficChange,
  TrafficPolicy,
} from '../../src/store/traffic-records.ts';
import { FakeClock, tempDir } from '../helpers/temp-dir.ts';
import { until } from '../helpers/until.ts';
import { registerTwoModels } from '../helpers/two-models.ts';
import { DrivenBackend } from '../helpers/driven-backend.ts';

/** Traffic records in memory over a real store; every other method is the store's own. */
class TrafficRecords {
  readonly records = new Map<string, EndpointTrafficRecord>();
  readonly changes: { endpoint: string; change: TrafficChange }[] = [];

  /** Sets an endpoint's record as a traffic change would (revision + 1). */
  set(endpoint: string, fields: Partial<Omit<EndpointTrafficRecord, 'endpoint'>>): void {
    const before = this.records.get(endpoint);
    this.records.set(endpoint, {
      endpoint,
      policy: null,
      previous: null,
      warm: [],
      staged: [],
      updatedAt: '',
      ...before,
      ...fields,
      revision: (before?.revision ?? 0) + 1,
    });
  }

  wrap(store: SqliteStore): Store {
    const own: Partial<Store> = {
      listEndpointTraffic: () => Promise.resolve([...this.records.values()]),
      getEndpointTraffic: (endpoint) => Promise.resolve(this.records.get(endpoint) ?? null),
      updateEndpointTraffic: (endpoint, change) => {
        const before = this.records.get(endpoint);
        if (change.expectRevision !== undefined && change.expectRevision !== before?.revision)
          return Promise.reject(kilnError('KILN_TRAFFIC_CONFLICT', { endpoint }));
        this.changes.push({ endpoint, change });
        const { policy, previous, warm, staged } = change;
        this.set(endpoint, {
          ...(policy === undefined ? {} : { policy }),
          ...(previous === undefined ? {} : { previous }),
          ...(warm === undefined ? {} : { warm }),
          ...(staged === undefined ? {} : { staged }),
        });
        return Promise.resolve(this.records.get(endpoint)!);
      },
    };
    return new Proxy(store, {
      get: (target, property, receiver) => {
        if (typeof property === 'string' && property in own) return own[property as keyof Store];
        const value: unknown = Reflect.get(target, property, receiver);
        return typeof value === 'function' ? (value as () => unknown).bind(target) : value;
      },
    });
  }
}

function policy(versions: TrafficPolicy['versions'], over: Partial<TrafficPolicy> = {}) {
  return {
    versions,
    shadows: [],
    salt: 'rollout-1',
    keyPath: null,
    sliceKey: null,
    slicePath: null,
    ...over,
  } satisfies TrafficPolicy;
}

async function setup(
  t: TestContext,
  options: {
    clock?: Clock;
    /** The SQLite store's own traffic tables, not the records the test sets. */
    realStore?: boolean;
    /** Before start: deploy, set records, then adopt what it returns (a restart). */
    before?: (
      endpoints: EndpointService,
      backend: DrivenBackend,
      traffic: TrafficRecords,
    ) => Promise<SurvivingReplica[]>;
  } = {},
) {
  const dir = await tempDir();
  const clock = options.clock ?? { now: () => Date.now() };
  const sqlite = SqliteStore.open(`${dir}/kiln.db`, { clock });
  const traffic = new TrafficRecords();
  const store = options.realStore === true ? sqlite : traffic.wrap(sqlite);
  const artifacts = new ArtifactStore(`${dir}/artifacts`);
  await artifacts.init();
  const registry = new Registry(store, artifacts);
  await registerTwoModels(registry, artifacts);
  const backend = new DrivenBackend();
  const reconciler = new Reconciler({
    store,
    registry,
    backend,
    clock,
    auth: 'dev',
    gatewayAcks: true,
    unpublishDelayMs: 60_000,
    intervalMs: 20,
  });
  const endpoints = new EndpointService(registry, reconciler, () => '', clock);
  const firstPoll = reconciler.routing.waitForNewer(
    reconciler.routing.current().version - 1,
    10_000,
  );
  if (options.before !== undefined)
    await reconciler.adopt(await options.before(endpoints, backend, traffic));
  reconciler.start();
  t.after(async () => {
    for (const entry of backend.launched) if (!entry.exited) backend.exit(entry);
    await reconciler.close();
    await sqlite.close();
  });
  const route = () => reconciler.routing.current().endpoints[0];
  /** A gateway confirms it holds the current snapshot. */
  const ack = () => reconciler.routing.acknowledge(reconciler.routing.current().version);
  const launchesOf = (model: string, version: number) =>
    backend.launched.filter((l) => l.launch.model === model && l.launch.version === version);
  return { backend, reconciler, endpoints, traffic, store, route, ack, firstPoll, launchesOf };
}

test('a canary runs beside the stable version and each variant routes to its own replicas', async (t) => {
  const { backend, reconciler, endpoints, traffic, route, launchesOf } = await setup(t);
  await endpoints.deploy('e', { model: 'a', version: 1, replicas: 2 });
  await until(() => backend.launched.length === 2, 'two launches of a:1');
  for (const entry of backend.launched) backend.ready(entry);
  await until(() => route()?.replicas.length === 2, 'a:1 routed');

  traffic.set('e', {
    policy: policy(
      [
        { model: 'a', version: 1, weight: 90 },
        { model: 'b', version: 2, weight: 10 },
      ],
      { sliceKey: 'country', slicePath: '$.parameters.country' },
    ),
    staged: [],
  });
  await reconciler.trigger();
  await until(() => launchesOf('b', 2).length === 2, 'two launches of b:2');
  // Started as what they serve: model b, version 2, slots of their own revision.
  const canary = launchesOf('b', 2);
  assert.deepEqual(canary.map((l) => l.launch.slot).sort(), [0, 1]);
  const ids = backend.launched.map((l) => l.launch.replicaId);
  assert.equal(new Set(ids).size, ids.length, 'replica ids stay unique');
  // The variant with no ready replica is listed with none; the stable one keeps serving.
  assert.deepEqual(
    route()?.traffic?.variants.map((v) => [v.model, v.version, v.weight, v.replicas.length]),
    [
      ['a', 1, 90, 2],
      ['b', 2, 10, 0],
    ],
  );
  for (const entry of canary) backend.ready(entry);
  await until(() => route()?.traffic?.variants[1]?.replicas.length === 2, 'b:2 routed');
  const r = route()!;
  assert.deepEqual([r.model, r.version, r.replicas.length], ['a', 1, 2]);
  assert.deepEqual(
    r.traffic?.variants[1]?.replicas.map((x) => [x.model, x.version]),
    [
      ['b', 2],
      ['b', 2],
    ],
  );
  assert.deepEqual(
    [r.traffic?.salt, r.traffic?.sliceKey, r.traffic?.slicePath],
    ['rollout-1', 'country', '$.parameters.country'],
  );
  assert.equal(r.maxConcurrency, 4 * 64, 'the bound counts every variant');
  // Nothing stopped: the stable version is not replaced by a canary.
  assert.ok(backend.launched.every((l) => !l.stopRequested));

  const view = await endpoints.get('e');
  assert.equal(view.status.readyReplicas, 2, 'the stable version, as deploy --wait reads it');
  assert.deepEqual(
    view.status.versions?.map((v) => [
      `${v.model}:${v.version}`,
      v.roles,
      v.weight,
      v.readyReplicas,
    ]),
    [
      ['a:1', ['stable', 'variant'], 90, 2],
      ['b:2', ['variant'], 10, 2],
    ],
  );
});

test('a version that leaves the policy stops only after a gateway holds a snapshot without it', async (t) => {
  const { backend, reconciler, endpoints, traffic, route, ack, launchesOf } = await setup(t);
  await endpoints.deploy('e', { model: 'a', version: 1, replicas: 1 });
  traffic.set('e', {
    policy: policy([
      { model: 'a', version: 1, weight: 50 },
      { model: 'a', version: 2, weight: 50 },
    ]),
    // A shadow runs too, and gets copies only.
    warm: [],
  });
  traffic.set('e', {
    policy: {
      ...traffic.records.get('e')!.policy!,
      shadows: [{ model: 'b', version: 1, sampleRate: 0.5 }],
    },
  });
  await reconciler.trigger();
  await until(() => backend.launched.length === 3, 'stable, canary and shadow launched');
  for (const entry of backend.launched) backend.ready(entry);
  await until(
    () =>
      route()?.traffic?.variants.every((v) => v.replicas.length === 1) === true &&
      route()?.traffic?.shadows[0]?.replicas.length === 1,
    'variants and shadow routed',
  );
  assert.equal(route()?.traffic?.shadows[0]?.sampleRate, 0.5);
  assert.equal(route()?.maxConcurrency, 2 * 64, 'a shadow is not admitted traffic');

  // Rolled back: no policy, the canary and the shadow dropped (not warm).
  traffic.set('e', { policy: null });
  await reconciler.trigger();
  await until(() => route()?.traffic === undefined, 'the snapshot without a policy');
  const leaving = [...launchesOf('a', 2), ...launchesOf('b', 1)];
  assert.equal(leaving.length, 2);
  await reconciler.trigger();
  assert.ok(
    leaving.every((l) => !l.stopRequested),
    'not stopped before a gateway holds the snapshot without them',
  );
  assert.deepEqual(
    (await endpoints.get('e')).status.versions?.map((v) => [`${v.model}:${v.version}`, v.roles]),
    [['a:1', ['stable']]],
    'stopping replicas are not listed as running',
  );
  ack();
  await until(() => leaving.every((l) => l.stopRequested), 'canary and shadow stopped');
  assert.ok(!launchesOf('a', 1)[0]!.stopRequested);
});

test('a warm version runs until its time, then stops and is dropped from the record by the reconciler', async (t) => {
  const clock = new FakeClock();
  const { backend, reconciler, endpoints, traffic, route, ack, launchesOf } = await setup(t, {
    clock,
  });
  await endpoints.deploy('e', { model: 'a', version: 1, replicas: 1 });
  await until(() => backend.launched.length === 1, 'a:1 launched');
  backend.ready(backend.launched[0]!);
  // Replaced by a:2: the deploy keeps a:1 warm ten minutes (the default grace).
  const until10 = new Date(clock.now() + 600_000).toISOString();
  await endpoints.deploy('e', { model: 'a', version: 2, replicas: 1 });
  assert.deepEqual(traffic.records.get('e')?.warm, [{ model: 'a', version: 1, until: until10 }]);
  await until(() => launchesOf('a', 2).length === 1, 'a:2 launched');
  // Until a:2 is ready, the warm a:1 serves in its place.
  assert.equal(route()?.version, 1);
  backend.ready(launchesOf('a', 2)[0]!);
  await until(() => route()?.version === 2, 'a:2 serves');
  ack();
  await reconciler.trigger();
  assert.ok(!launchesOf('a', 1)[0]!.stopRequested, 'warm: still running, no traffic');
  assert.deepEqual(
    (await endpoints.get('e')).status.versions?.map((v) => [v.version, v.roles, v.warmUntil]),
    [
      [2, ['stable'], null],
      [1, ['warm'], until10],
    ],
  );
  // Once a:2 has been fully ready, a crash of it never sends the traffic back to a:1.
  backend.exit(launchesOf('a', 2)[0]!);
  await reconciler.trigger();
  assert.deepEqual([route()?.version, route()?.replicas.length], [2, 0]);
  clock.advance(500);
  await until(() => launchesOf('a', 2).length === 2, 'a:2 restarted');
  backend.ready(launchesOf('a', 2)[1]!);
  await until(() => route()?.replicas.length === 1, 'a:2 serves again');
  assert.equal(route()?.version, 2);
  // A crash of the warm one is restarted like any other.
  backend.exit(launchesOf('a', 1)[0]!);
  clock.advance(500);
  await until(() => launchesOf('a', 1).length === 2, 'the warm version restarted');
  backend.ready(launchesOf('a', 1)[1]!);

  clock.advance(600_000);
  await reconciler.trigger();
  ack();
  await until(() => launchesOf('a', 1)[1]!.stopRequested, 'the expired warm version stopped');
  assert.deepEqual(traffic.records.get('e')?.warm, []);
  const change = traffic.changes.at(-1)?.change;
  assert.equal(change?.event.action, 'warm-expired');
  assert.equal(change?.event.actor, 'reconciler');
  assert.match(change?.event.reason ?? '', /a:1/);
  assert.equal(change?.expectRevision, 1);
  assert.ok(!launchesOf('a', 2)[1]!.stopRequested);
});

test('a restarted control plane adopts the replicas of every version the endpoint runs', async (t) => {
  const { backend, reconciler, firstPoll } = await setup(t, {
    before: async (endpoints, backend, traffic) => {
      const { endpoint } = await endpoints.deploy('e', { model: 'a', version: 1, replicas: 1 });
      traffic.set('e', {
        policy: policy([
          { model: 'a', version: 1, weight: 80 },
          { model: 'b', version: 2, weight: 20 },
        ]),
      });
      const survivor = (id: string, model: string, version: number) =>
        backend.survivor({
          replicaId: id,
          endpoint: 'e',
          model,
          version,
          revision: revisionOf(endpoint, { model, version }),
          slot: 0,
        } as ReplicaLaunch);
      return [survivor('e-v1-r0-3', 'a', 1), survivor('e-v2-r0-4', 'b', 2)];
    },
  });
  const first = await firstPoll;
  assert.deepEqual(
    first?.endpoints[0]?.traffic?.variants.map((v) => v.replicas.map((r) => r.id)),
    [['e-v1-r0-3'], ['e-v2-r0-4']],
  );
  // Both slots are held: nothing new started, nothing stopped.
  await reconciler.trigger(); // a whole pass after the first
  assert.equal(backend.launched.length, 2);
  assert.ok(backend.launched.every((l) => !l.stopRequested));
});

test('with the SQLite store: a policy change runs and routes its versions, an expired warm one is dropped in history', async (t) => {
  const clock = new FakeClock();
  const { backend, reconciler, endpoints, store, route, ack, launchesOf } = await setup(t, {
    clock,
    realStore: true,
  });
  await endpoints.deploy('e', { model: 'a', version: 1, replicas: 1 });
  await until(() => backend.launched.length === 1, 'a:1 launched');
  backend.ready(backend.launched[0]!);
  const event = { endpoint: 'e', actor: 'test', reason: 'canary' };
  await store.updateEndpointTraffic('e', {
    policy: policy([
      { model: 'a', version: 1, weight: 75 },
      { model: 'a', version: 2, weight: 25 },
    ]),
    event: { ...event, action: 'policy', detail: null },
  });
  await reconciler.trigger();
  await until(() => launchesOf('a', 2).length === 1, 'a:2 launched');
  backend.ready(launchesOf('a', 2)[0]!);
  await until(() => route()?.traffic?.variants[1]?.replicas.length === 1, 'a:2 routed');
  assert.deepEqual(
    route()?.traffic?.variants.map((v) => [v.version, v.weight, v.replicas[0]?.version]),
    [
      [1, 75, 1],
      [2, 25, 2],
    ],
  );

  // The policy cleared, a:2 kept warm for a minute.
  const until1 = new Date(clock.now() + 60_000).toISOString();
  await store.updateEndpointTraffic('e', {
    policy: null,
    warm: [{ model: 'a', version: 2, until: until1 }],
    event: { ...event, action: 'policy', detail: null },
  });
  await reconciler.trigger();
  assert.equal(route()?.traffic, undefined);
  ack();
  await reconciler.trigger();
  assert.ok(!launchesOf('a', 2)[0]!.stopRequested, 'warm: kept running');
  clock.advance(60_000);
  await reconciler.trigger();
  ack();
  await until(() => launchesOf('a', 2)[0]!.stopRequested, 'the expired warm version stopped');
  assert.deepEqual((await store.getEndpointTraffic('e'))?.warm, []);
  const history = await store.listTrafficEvents('e', { limit: 10 });
  const last = history.items.find((e) => e.action === 'warm-expired');
  assert.equal(last?.actor, 'reconciler');
  assert.match(last?.reason ?? '', /a:2/);
});
