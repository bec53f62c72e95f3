// The reconciler against a backend the test drives: it decides when each replica listens,
// becomes ready and exits, so rollouts are checked step by step with no timing involved.
// What matters: the route never leaves a revision before every slot of its successor is
// ready; a redeploy of another model or worker config rolls out like a new version; a
// replica stopping and its successor in the same slot are never confused (no orphans).

import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import type { ReplicaLaunch, SurvivingReplica } from '../../src/control/backends/backend.ts';
import { EndpointService } from '../../src/control/endpoints.ts';
import { Reconciler } from '../../src/control/reconciler.ts';
import { workerRevision } from '../../src/control/serving-defaults.ts';
import { ArtifactStore } from '../../src/registry/artifact-store.ts';
import { Registry } from '../../src/registry/registry.ts';
import type { Clock } from '../../src/core/clock.ts';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import { FakeClock, tempDir } from '../helpers/temp-dir.ts';
import { until } from '../helpers/until.ts';
import { registerTwoModels } from '../helpers/two-models.ts';
import { DrivenBackend } from '../helpers/driven-backend.ts';

async function setup(
  t: TestContext,
  options: {
    startTimeoutMs?: number;
    clock?: Clock;
    /** Before start: deploy these, then adopt what `survivors` returns (a restart). */
    before?: (
      endpoints: EndpointService,
      backend: DrivenBackend,
      store: SqliteStore,
    ) => Promise<SurvivingReplica[]>;
  } = {},
) {
  const dir = await tempDir();
  const store = SqliteStore.open(`${dir}/kiln.db`);
  const artifacts = new ArtifactStore(`${dir}/artifacts`);
  await artifacts.init();
  const registry = new Registry(store, artifacts);
  await registerTwoModels(registry, artifacts);
  const backend = new DrivenBackend();
  const clock = options.clock ?? { now: () => Date.now() };
  const reconciler = new Reconciler({
    store,
    registry,
    backend,
    clock,
    auth: 'dev',
    unpublishDelayMs: 0,
    intervalMs: 20,
    ...(options.startTimeoutMs === undefined ? {} : { startTimeoutMs: options.startTimeoutMs }),
  });
  const endpoints = new EndpointService(registry, reconciler, () => '', clock);
  // A gateway polling from the start, holding a snapshot of the platform before (an older
  // version than the empty one this reconciler starts from).
  const firstPoll = reconciler.routing.waitForNewer(
    reconciler.routing.current().version - 1,
    10_000,
  );
  if (options.before !== undefined)
    await reconciler.adopt(await options.before(endpoints, backend, store));
  reconciler.start();
  t.after(async () => {
    for (const entry of backend.launched) if (!entry.exited) backend.exit(entry);
    await reconciler.close();
    await store.close();
  });
  const routed = (): string[] =>
    reconciler.routing.current().endpoints[0]?.replicas.map((r) => r.id) ?? [];
  const route = () => reconciler.routing.current().endpoints[0];
  return { backend, reconciler, endpoints, routed, route, firstPoll };
}

test('a restarted control plane adopts the replicas left running before it publishes', async (t) => {
  let revision = '';
  const survivor = (
    backend: DrivenBackend,
    id: string,
    slot: number,
    at = revision,
    endpoint = 'e',
  ) =>
    backend.survivor({
      replicaId: id,
      endpoint,
      model: 'a',
      version: 1,
      revision: at,
      slot,
    } as ReplicaLaunch);
  const { backend, reconciler, endpoints, routed, firstPoll } = await setup(t, {
    before: async (endpoints, backend, store) => {
      await endpoints.deploy('e', { model: 'a', version: 1, replicas: 2 });
      revision = workerRevision((await store.getEndpoint('e'))!);
      return [
        survivor(backend, 'e-v1-r0-7', 0),
        survivor(backend, 'e-v1-r1-9', 1),
        // Of a revision the endpoint no longer wants, and of an endpoint that is gone.
        survivor(backend, 'e-v1-r0-3', 0, 'a@1#{"old":true}'),
        survivor(backend, 'gone-v1-r0-2', 0, revision, 'gone'),
      ];
    },
  });
  // The first snapshot any gateway gets already routes to the adopted replicas: never one
  // without them (the empty snapshot a new control plane starts from is not served).
  const first = await firstPoll;
  assert.deepEqual(first?.endpoints[0]?.replicas.map((r) => r.id).sort(), [
    'e-v1-r0-7',
    'e-v1-r1-9',
  ]);
  assert.deepEqual(routed().sort(), ['e-v1-r0-7', 'e-v1-r1-9']);
  // Nothing new started for the slots they hold; the unwanted two are stopped.
  await until(
    () => backend.launched.filter((l) => l.stopRequested).length === 2,
    'the unwanted survivors stopped',
  );
  assert.deepEqual(
    backend.launched
      .filter((l) => l.stopRequested)
      .map((l) => l.launch.replicaId)
      .sort(),
    ['e-v1-r0-3', 'gone-v1-r0-2'],
  );
  assert.equal(backend.launched.length, 4);
  // A replica started now gets an id no adopted one has.
  await endpoints.deploy('e', { model: 'a', version: 1, replicas: 3 });
  await until(() => backend.launched.length === 5, 'a third replica');
  assert.equal(backend.launched[4]!.launch.replicaId, 'e-v1-r2-10');
  assert.equal(reconciler.replicaStatus('e').filter((r) => r.state === 'ready').length, 2);
});

test('traffic stays on the old version until every slot of the new one is ready', async (t) => {
  const { backend, reconciler, endpoints, routed, route } = await setup(t);
  await endpoints.deploy('e', { model: 'a', version: 1, replicas: 3 });
  await until(() => backend.launched.length === 3, 'three v1 launches');
  for (const entry of backend.launched) backend.ready(entry);
  await until(() => routed().length === 3, 'v1 routed');
  const v1 = routed();

  // No warm grace: the swap is under test, not keeping the old version for a rollback.
  await endpoints.deploy('e', { model: 'a', version: 2, replicas: 2, warmGraceMs: 0 });
  await until(() => backend.launched.length === 5, 'two v2 launches');
  const [first, second] = backend.launched.slice(3);
  backend.ready(first!);
  await reconciler.trigger(); // resolves after a whole pass that saw the ready replica
  assert.deepEqual(routed(), v1, 'one of two new replicas ready: the old version serves');
  assert.equal(route()?.version, 1);
  assert.ok(backend.launched.slice(0, 3).every((l) => !l.stopRequested));

  backend.ready(second!);
  await until(() => route()?.version === 2, 'the route on v2');
  assert.equal(routed().length, 2);
  await until(() => backend.launched.slice(0, 3).every((l) => l.stopRequested), 'v1 stopped');
});

test('another model, or another worker config, on the same endpoint is rolled out', async (t) => {
  const { backend, endpoints, route } = await setup(t);
  await endpoints.deploy('e', { model: 'a', version: 1, replicas: 1 });
  await until(() => backend.launched.length === 1, 'the first launch');
  backend.ready(backend.launched[0]!);
  await until(() => route()?.replicas.length === 1, 'routed');

  // Model b, same version number: its own worker, and the route names b once it is ready.
  // No warm grace: the swap is under test, not keeping the old version for a rollback.
  await endpoints.deploy('e', { model: 'b', version: 1, replicas: 1, warmGraceMs: 0 });
  await until(() => backend.launched.length === 2, 'a launch for model b');
  assert.equal(backend.launched[1]!.launch.model, 'b');
  assert.equal(route()?.model, 'a');
  backend.ready(backend.launched[1]!);
  await until(() => route()?.model === 'b', 'the route on model b');
  await until(() => backend.launched[0]!.stopRequested, 'model a stopped');

  // Only the batching settings change: workers read them, so new workers are started.
  await endpoints.deploy('e', {
    model: 'b',
    version: 1,
    replicas: 1,
    config: { batching: { maxBatchSize: 4 } },
  });
  await until(() => backend.launched.length === 3, 'a launch with the new config');
  assert.equal(backend.launched[2]!.launch.batching?.maxBatchSize, 4);
  // The old config still serves, but the status counts what was deployed (what --wait waits
  // for): not ready until the new config's replica is.
  assert.equal((await endpoints.get('e')).status.readyReplicas, 0);
  backend.ready(backend.launched[2]!);
  assert.equal((await endpoints.get('e')).status.readyReplicas, 1);
  await until(() => backend.launched[1]!.stopRequested, 'the old config stopped');

  // Only the gateway's concurrency limit changes: no worker reads it, nothing restarts.
  await endpoints.deploy('e', {
    model: 'b',
    version: 1,
    replicas: 1,
    config: { batching: { maxBatchSize: 4 }, maxConcurrency: 7 },
  });
  await until(() => route()?.maxConcurrency === 7, 'the new limit published');
  assert.equal(backend.launched.length, 3);
});

test('without a configured limit, the bound follows the ready replicas and what each holds', async (t) => {
  const { backend, endpoints, route } = await setup(t);
  const bound = () => [route()?.maxConcurrency, route()?.maxConcurrencySource];
  // xgboost: batching off by default, 64 a replica; with none ready, one replica's worth.
  await endpoints.deploy('e', { model: 'a', version: 1, replicas: 3 });
  await until(() => backend.launched.length === 3, 'three launches');
  assert.deepEqual(bound(), [64, 'derived']);
  backend.ready(backend.launched[0]!);
  backend.ready(backend.launched[1]!);
  await until(() => route()?.replicas.length === 2, 'two routed');
  assert.deepEqual(bound(), [128, 'derived']);
  backend.exit(backend.launched[1]!); // crashed: out of the routing, and out of the bound
  await until(() => route()?.replicas.length === 1, 'one routed');
  assert.deepEqual(bound(), [64, 'derived']);
  const view = await endpoints.get('e');
  assert.deepEqual([view.status.maxConcurrency, view.status.maxConcurrencySource], bound());

  // With batching, a replica holds its queue.
  await endpoints.deploy('e', {
    model: 'a',
    version: 1,
    replicas: 1,
    config: { batching: { maxBatchSize: 4, maxQueue: 20 } },
  });
  await until(() => backend.running().some((l) => l.launch.batching?.maxQueue === 20), 'relaunch');
  for (const entry of backend.running()) if (entry.launch.batching !== null) backend.ready(entry);
  await until(() => route()?.maxConcurrency === 20, 'the batched bound');
  assert.equal(route()?.maxConcurrencySource, 'derived');

  await endpoints.deploy('e', {
    model: 'a',
    version: 1,
    replicas: 1,
    config: { batching: { maxBatchSize: 4, maxQueue: 20 }, maxConcurrency: 3 },
  });
  await until(() => route()?.maxConcurrencySource === 'configured', 'the configured bound');
  assert.equal(route()?.maxConcurrency, 3);
});

test('a slot refilled while its old replica still drains gets a replica of its own', async (t) => {
  const { backend, reconciler, endpoints } = await setup(t);
  await endpoints.deploy('e', { model: 'a', version: 1, replicas: 2 });
  await until(() => backend.launched.length === 2, 'two launches');
  for (const entry of backend.launched) backend.ready(entry);
  await endpoints.deploy('e', { model: 'a', version: 1, replicas: 1 });
  await until(() => backend.launched[1]!.stopRequested, 'slot 1 stopping');
  // Back to two while slot 1's old replica is still draining.
  await endpoints.deploy('e', { model: 'a', version: 1, replicas: 2 });
  await until(() => backend.launched.length === 3, 'slot 1 refilled');
  const [, draining, refill] = backend.launched;
  assert.notEqual(refill!.launch.replicaId, draining!.launch.replicaId);
  backend.ready(refill!);
  backend.exit(draining!); // the old one finally exits
  await reconciler.trigger(); // a whole pass after both events
  // Exactly the two running workers are tracked; nothing was started behind them.
  assert.equal(backend.launched.length, 3);
  const tracked = reconciler.replicaStatus('e').map((r) => r.id);
  assert.deepEqual(
    tracked.sort(),
    backend
      .running()
      .map((l) => l.launch.replicaId)
      .sort(),
  );
  await endpoints.deploy('e', { model: 'a', version: 1, replicas: 0 });
  await until(() => backend.running().length === 0, 'every worker asked to stop');
});

test('a replica not ready within the start timeout is stopped and started again', async (t) => {
  const clock = new FakeClock();
  const { backend, reconciler, endpoints } = await setup(t, { startTimeoutMs: 100, clock });
  await endpoints.deploy('e', { model: 'a', version: 1, replicas: 1 });
  await until(() => backend.launched.length === 1, 'the first launch');
  const hung = backend.launched[0]!; // never listens, never gets ready
  clock.advance(100);
  await until(() => hung.stopRequested, 'the hung worker asked to stop');
  assert.match(reconciler.replicaStatus('e')[0]?.reason ?? '', /the worker was not ready within/);
  // No new launch while the hung worker is still there (it would reuse its folder), however
  // long it takes to go.
  clock.advance(3_600_000);
  await reconciler.trigger();
  assert.equal(backend.launched.length, 1);
  backend.exit(hung);
  await until(() => reconciler.replicaStatus('e')[0]?.restartAt !== null, 'a restart time');
  clock.advance(500); // a crash's first backoff
  await until(() => backend.launched.length === 2, 'a second launch once it is gone');
  // What the first launch reports now is stale: its late 'ready' changes nothing.
  backend.ready(hung);
  assert.equal(reconciler.replicaStatus('e')[0]?.state, 'starting');
  backend.ready(backend.launched[1]!);
  await until(() => reconciler.replicaStatus('e')[0]?.state === 'ready', 'the second ready');
});

test('a replica the backend cannot start is failed with the reason and retried', async (t) => {
  const { backend, reconciler, endpoints } = await setup(t);
  backend.failStarts = 1;
  await endpoints.deploy('e', { model: 'a', version: 1, replicas: 1 });
  await until(
    () => /could not be started: ENOSPC/.test(reconciler.replicaStatus('e')[0]?.reason ?? ''),
    'the failure recorded',
  );
  assert.equal(reconciler.replicaStatus('e')[0]?.state, 'failed');
  await until(() => backend.launched.length === 1, 'the retry after its backoff');
  backend.ready(backend.launched[0]!);
  await until(() => reconciler.replicaStatus('e')[0]?.state === 'ready', 'ready');
});

/** The status of endpoint e's only replica, and the endpoint's reason. */
function seen(reconciler: Reconciler, endpoints: EndpointService) {
  const replica = reconciler.replicaStatus('e')[0];
  assert.ok(replica !== undefined);
  return { replica, reason: endpoints.view({ ...endpointRecord, name: 'e' }).status.reason ?? '' };
}

const endpointRecord = {
  name: 'e',
  team: 'default',
  model: 'a',
  version: 1,
  ref: '1',
  replicas: 1,
  config: {},
  createdAt: '',
  updatedAt: '',
};

const corrupt = 'artifact file model.json is corrupt on disk: expected sha256 aa…, found bb…';

test('a corrupt artifact waits minutes, not a crash backoff, and its reason shows at every moment', async (t) => {
  const clock = new FakeClock();
  const { backend, reconciler, endpoints } = await setup(t, { clock });
  await endpoints.deploy('e', { model: 'a', version: 1, replicas: 1 });
  await until(() => backend.launched.length === 1, 'the first launch');
  const first = backend.launched[0]!;
  assert.equal(seen(reconciler, endpoints).reason, 'starting');

  // The worker reports the failure, then exits (exit code 3): named before and after the exit.
  first.emit({ kind: 'failed', reason: corrupt, code: 'KILN_ARTIFACT_CORRUPT' });
  assert.equal(
    seen(reconciler, endpoints).reason,
    `replica ${first.launch.replicaId} failed: ${corrupt}`,
  );
  first.emit({ kind: 'exited', code: 3, signal: null });
  const failed = seen(reconciler, endpoints);
  assert.equal(failed.replica.state, 'failed');
  assert.equal(failed.replica.reason, corrupt);
  assert.deepEqual(failed.replica.lastFailure, {
    reason: corrupt,
    code: 'KILN_ARTIFACT_CORRUPT',
    kind: 'repeats',
    at: new Date(clock.now()).toISOString(),
  });
  assert.equal(failed.replica.restartAt, new Date(clock.now() + 60_000).toISOString());
  assert.equal(
    failed.reason,
    `replica ${first.launch.replicaId} failed: ${corrupt} (next start in 60 s)`,
  );

  // Past any crash backoff (30 s at most): still waiting, still saying why.
  clock.advance(59_999);
  await reconciler.trigger();
  assert.equal(backend.launched.length, 1);
  assert.match(seen(reconciler, endpoints).reason, /corrupt on disk.*\(next start in 1 s\)$/);

  // Its minute is up: started again, and while it starts the last failure is shown.
  clock.advance(1);
  await reconciler.trigger();
  assert.equal(backend.launched.length, 2);
  const restarting = seen(reconciler, endpoints);
  assert.equal(restarting.replica.state, 'starting');
  assert.equal(restarting.replica.restarts, 1);
  assert.equal(restarting.replica.reason, `last failure: ${corrupt}`);
  assert.equal(
    restarting.reason,
    `starting (last failure: replica ${first.launch.replicaId}: ${corrupt})`,
  );

  // Failing the same way again doubles the wait.
  backend.launched[1]!.emit({ kind: 'failed', reason: corrupt, code: 'KILN_ARTIFACT_QUARANTINED' });
  backend.exit(backend.launched[1]!);
  assert.equal(
    seen(reconciler, endpoints).replica.restartAt,
    new Date(clock.now() + 120_000).toISOString(),
  );

  // Ready at last (repaired): no reason, no last failure.
  clock.advance(120_000);
  await reconciler.trigger();
  assert.equal(backend.launched.length, 3);
  backend.ready(backend.launched[2]!);
  const ready = seen(reconciler, endpoints);
  assert.equal(ready.replica.state, 'ready');
  assert.equal(ready.replica.reason, null);
  assert.equal(ready.replica.lastFailure, null);
  assert.equal(endpoints.view(endpointRecord).status.reason, null);
});

test('a crash restarts after the crash backoff and is shown as the last failure meanwhile', async (t) => {
  const clock = new FakeClock();
  const { backend, reconciler, endpoints } = await setup(t, { clock });
  await endpoints.deploy('e', { model: 'a', version: 1, replicas: 1 });
  await until(() => backend.launched.length === 1, 'the first launch');
  const first = backend.launched[0]!;
  backend.ready(first);
  first.emit({ kind: 'exited', code: null, signal: 'SIGKILL' });
  const crashed = seen(reconciler, endpoints).replica;
  assert.equal(crashed.reason, 'the worker exited (signal SIGKILL)');
  assert.equal(crashed.lastFailure?.kind, 'crash');
  assert.equal(crashed.restartAt, new Date(clock.now() + 500).toISOString());
  clock.advance(500);
  await reconciler.trigger();
  assert.equal(backend.launched.length, 2);
  assert.equal(
    seen(reconciler, endpoints).reason,
    `starting (last failure: replica ${first.launch.replicaId}: the worker exited (signal SIGKILL))`,
  );
});

test('uploading a blob that a replica failed on retries it at once; other blobs do not', async (t) => {
  const clock = new FakeClock();
  const { backend, reconciler, endpoints } = await setup(t, { clock });
  await endpoints.deploy('e', { model: 'a', version: 1, replicas: 1 });
  await until(() => backend.launched.length === 1, 'the first launch');
  const first = backend.launched[0]!;
  first.emit({ kind: 'failed', reason: corrupt, code: 'KILN_ARTIFACT_CORRUPT' });
  backend.exit(first);
  reconciler.blobStored('0'.repeat(64));
  await reconciler.trigger();
  assert.equal(backend.launched.length, 1);
  reconciler.blobStored(first.launch.files[0]!.sha256);
  await reconciler.trigger();
  assert.equal(backend.launched.length, 2, 'retried without waiting out its minute');
  // A crash is not something an upload repairs: it keeps its own (short) backoff.
  backend.launched[1]!.emit({ kind: 'exited', code: 1, signal: null });
  const restartAt = seen(reconciler, endpoints).replica.restartAt;
  reconciler.blobStored(first.launch.files[0]!.sha256);
  assert.equal(seen(reconciler, endpoints).replica.restartAt, restartAt);
});

test('a replica that served a while starts its backoff over: restarts long ago do not slow the next one', async (t) => {
  const clock = new FakeClock();
  const { backend, reconciler, endpoints } = await setup(t, { clock });
  await endpoints.deploy('e', { model: 'a', version: 1, replicas: 1 });
  await until(() => backend.launched.length === 1, 'the first launch');
  // Eight crashes, each after a day of serving: every one is a first failure.
  for (let crash = 0; crash < 8; crash++) {
    const entry = backend.launched.at(-1)!;
    backend.ready(entry);
    clock.advance(24 * 3600_000);
    entry.emit({ kind: 'exited', code: null, signal: 'SIGKILL' });
    const failed = seen(reconciler, endpoints).replica;
    assert.equal(failed.restarts, crash, 'the count still counts every restart');
    assert.equal(failed.restartAt, new Date(clock.now() + 500).toISOString(), `crash ${crash}`);
    clock.advance(500);
    await reconciler.trigger();
    assert.equal(backend.launched.length, crash + 2);
  }
  // A failure that repeats, after a day of serving: its first wait (a minute), not ten.
  const entry = backend.launched.at(-1)!;
  backend.ready(entry);
  clock.advance(24 * 3600_000);
  entry.emit({ kind: 'failed', reason: corrupt, code: 'KILN_ARTIFACT_CORRUPT' });
  backend.exit(entry);
  assert.equal(
    seen(reconciler, endpoints).replica.restartAt,
    new Date(clock.now() + 60_000).toISOString(),
  );
  // Ready, and crashing again at once (a crash loop through ready): the backoff keeps growing.
  clock.advance(60_000);
  await reconciler.trigger();
  for (const wait of [1_000, 2_000]) {
    const looping = backend.launched.at(-1)!;
    backend.ready(looping);
    looping.emit({ kind: 'exited', code: null, signal: 'SIGKILL' });
    assert.equal(
      seen(reconciler, endpoints).replica.restartAt,
      new Date(clock.now() + wait).toISOString(),
    );
    clock.advance(wait);
    await reconciler.trigger();
  }
});

test('an adopted replica of a version the endpoint left while the platform was down is routed as that version', async (t) => {
  const { backend, firstPoll } = await setup(t, {
    before: async (endpoints, backend, store) => {
      await endpoints.deploy('e', { model: 'a', version: 1, replicas: 1 });
      const revision = workerRevision((await store.getEndpoint('e'))!);
      // Redeployed while no platform ran: the survivor serves the version before.
      await endpoints.deploy('e', { model: 'a', version: 2, replicas: 1 });
      const launch = { replicaId: 'e-v1-r0-4', endpoint: 'e', model: 'a', version: 1 };
      return [backend.survivor({ ...launch, revision, slot: 0 } as ReplicaLaunch)];
    },
  });
  // It keeps the traffic until version 2 is ready, described as what it is: an xgboost
  // model (the gateway checks inputs by format), not the default.
  const first = await firstPoll;
  const route = first?.endpoints[0];
  assert.deepEqual(
    route?.replicas.map((r) => r.id),
    ['e-v1-r0-4'],
  );
  assert.equal(route?.version, 1);
  assert.equal(route?.format, 'xgboost');
  await until(() => backend.launched.length === 2, 'version 2 started');
});

test('of two survivors in one slot, the one started last is adopted and the other stopped', async (t) => {
  // Killed while a slot's old replica drained beside its successor: both still run. The
  // draining one is on its way out (and out of the gateway's routing); the successor stays.
  const stopped: string[] = [];
  const { routed } = await setup(t, {
    before: async (endpoints, backend, store) => {
      await endpoints.deploy('e', { model: 'a', version: 1, replicas: 1 });
      const revision = workerRevision((await store.getEndpoint('e'))!);
      const launch = { endpoint: 'e', model: 'a', version: 1, revision, slot: 0 };
      return ['e-v1-r0-3', 'e-v1-r0-5'].map((replicaId) => ({
        ...backend.survivor({ ...launch, replicaId } as ReplicaLaunch),
        stop: () => {
          stopped.push(replicaId);
          return Promise.resolve();
        },
      }));
    },
  });
  await until(() => routed().length > 0, 'the first snapshot');
  assert.deepEqual(routed(), ['e-v1-r0-5']);
  assert.deepEqual(stopped, ['e-v1-r0-3']);
});
