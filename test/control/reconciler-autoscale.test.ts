// The reconciler and deploy with autoscaling (issue 14), against a backend the test drives:
// an autoscaled endpoint runs its stored count (0 allowed), its route carries `activation`
// when it may go to zero, a policy change restarts nothing, and deploy refuses bad policies.

import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { EndpointService } from '../../src/control/endpoints.ts';
import { Reconciler } from '../../src/control/reconciler.ts';
import { KilnError } from '../../src/core/errors.ts';
import { ArtifactStore } from '../../src/registry/artifact-store.ts';
import { Registry } from '../../src/registry/registry.ts';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import { tempDir } from '../helpers/temp-dir.ts';
import { until } from '../helpers/until.ts';
import { registerTwoModels } from '../helpers/two-models.ts';
import { DrivenBackend } from '../helpers/driven-backend.ts';

async function setup(t: TestContext) {
  const dir = await tempDir();
  const clock = { now: () => Date.now() };
  const store = SqliteStore.open(`${dir}/kiln.db`, { clock });
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
  const started: [string, number][] = [];
  reconciler.onReplicaReady((endpoint, startMs) => started.push([endpoint, startMs]));
  const endpoints = new EndpointService(registry, reconciler, () => '', clock);
  reconciler.start();
  t.after(async () => {
    for (const entry of backend.launched) if (!entry.exited) backend.exit(entry);
    await reconciler.close();
    await store.close();
  });
  const route = () => reconciler.routing.current().endpoints.find((e) => e.name === 'e');
  const ack = () => reconciler.routing.acknowledge(reconciler.routing.current().version);
  const live = () => backend.launched.filter((l) => !l.stopRequested);
  return { store, backend, reconciler, endpoints, route, ack, live, started };
}

const toZero = {
  minReplicas: 0,
  maxReplicas: 3,
  target: 1,
  scaleToZero: { idleMs: 60_000, queueLimit: 7, timeoutMs: 9_000, coldStartBudgetMs: 800 },
};

test('an autoscaled endpoint runs its stored count, down to zero and back, with activation on its route', async (t) => {
  const { store, backend, reconciler, endpoints, route, ack, live, started } = await setup(t);
  await endpoints.deploy('e', {
    model: 'a',
    version: 1,
    replicas: 2,
    config: { autoscale: toZero },
  });
  const scale = await store.getEndpointScale('e');
  assert.deepEqual(
    [scale?.replicas, scale?.reason],
    [2, 'deployed with 2 replicas (autoscaling 0..3)'],
  );
  await until(() => backend.launched.length === 2, 'two launches');
  for (const entry of backend.launched) backend.ready(entry);
  await until(() => route()?.replicas.length === 2, 'two routed');
  assert.deepEqual(route()?.activation, {
    queueLimit: 7,
    timeoutMs: 9_000,
    coldStartBudgetMs: 800,
  });
  assert.equal(started.length, 2);
  assert.ok(started.every(([endpoint, ms]) => endpoint === 'e' && ms >= 0));
  assert.deepEqual(reconciler.replicaCounts((await store.getEndpoint('e'))!), {
    ready: 2,
    starting: 0,
  });
  // The worker revision leaves the policy out: workers get no autoscale config.
  assert.ok(!backend.launched[0]!.launch.revision.includes('autoscale'));
  assert.equal('autoscale' in backend.launched[0]!.launch.config, false);

  // The autoscaler writes 0: both replicas leave the routing, then stop once a gateway acks.
  await store.setEndpointScale({ endpoint: 'e', replicas: 0, reason: 'idle', expectReplicas: 2 });
  await reconciler.trigger();
  await until(() => route()?.replicas.length === 0, 'no replica routed');
  assert.ok(route()?.activation !== undefined, 'requests are held, not refused');
  ack();
  await until(() => live().length === 0, 'both stopped');
  for (const entry of backend.launched) backend.exit(entry);
  await until(() => reconciler.replicaStatus('e').length === 0, 'both gone');
  const atZero = await endpoints.get('e');
  assert.equal(atZero.replicas, 0, 'the view shows the count it runs, not the deployed 2');
  assert.equal(atZero.status.reason, 'scaled to zero (woken by its next request)');

  // A wake writes 1: one replica starts, and is routed once ready.
  await store.setEndpointScale({ endpoint: 'e', replicas: 1, reason: 'wake', expectReplicas: 0 });
  await reconciler.trigger();
  await until(() => live().length === 1, 'one launch from zero');
  backend.ready(live()[0]!);
  await until(() => route()?.replicas.length === 1, 'one routed');
  assert.equal(started.length, 3);

  // A new policy (minimum 1) restarts nothing, and the route no longer holds requests.
  await endpoints.deploy('e', {
    model: 'a',
    version: 1,
    config: { autoscale: { ...toZero, minReplicas: 1, scaleToZero: undefined } },
  });
  await reconciler.trigger();
  assert.equal(live().length, 1, 'the running replica is kept');
  assert.equal(route()?.activation, undefined);
  assert.equal((await store.getEndpointScale('e'))?.replicas, 1, 'redeploy keeps the count');
});

test('deploy refuses a bad policy and a replica count outside min..max, naming them', async (t) => {
  const { endpoints, store } = await setup(t);
  const refused = async (request: Parameters<EndpointService['deploy']>[1], pattern: RegExp) => {
    await assert.rejects(endpoints.deploy('e', request), (error: unknown) => {
      assert.ok(error instanceof KilnError, String(error));
      assert.equal(error.code, 'KILN_AUTOSCALE_INVALID');
      assert.equal(error.status, 400);
      assert.match(error.message, pattern);
      return true;
    });
  };
  await refused(
    { model: 'a', config: { autoscale: { minReplicas: 3, maxReplicas: 1 } } },
    /endpoint e: minReplicas \(3\) > maxReplicas \(1\)/,
  );
  await refused(
    { model: 'a', config: { autoscale: { minReplicas: 1, maxReplicas: 2, signal: 'vibes' } } },
    /unknown signal/,
  );
  await refused(
    { model: 'a', config: { autoscale: { minReplicas: 1, maxReplicas: 2, target: 0 } } },
    /target must be > 0/,
  );
  await refused(
    { model: 'a', replicas: 5, config: { autoscale: { minReplicas: 1, maxReplicas: 3 } } },
    /replicas 5 is outside minReplicas\.\.maxReplicas \(1\.\.3\)/,
  );
  // A fixed deploy runs at most 64 replicas; a policy must not get around it (the plan would
  // lay out a billion slots under a burst). Fails without resolveEndpointPolicy's bound.
  await refused(
    { model: 'a', config: { autoscale: { minReplicas: 1, maxReplicas: 1_000_000_000 } } },
    /maxReplicas must be at most 64 \(an endpoint's replica limit\), got 1000000000/,
  );
  assert.equal(await store.getEndpoint('e'), null, 'nothing stored');
  // Without replicas: max(1, min), within max.
  await endpoints.deploy('e', {
    model: 'a',
    config: { autoscale: { minReplicas: 0, maxReplicas: 4 } },
  });
  assert.equal((await store.getEndpointScale('e'))?.replicas, 1);
  const stored = (await store.getEndpoint('e'))?.config.autoscale;
  assert.equal(stored?.stableWindowMs, 60_000, 'stored with its defaults');
});

test('autoscaling added by a redeploy starts from the count the endpoint runs, within min..max', async (t) => {
  const { endpoints, store } = await setup(t);
  await endpoints.deploy('e', { model: 'a', version: 1, replicas: 3 });
  await endpoints.deploy('e', {
    model: 'a',
    version: 1,
    config: { autoscale: { minReplicas: 1, maxReplicas: 5 } },
  });
  assert.equal((await store.getEndpointScale('e'))?.replicas, 3);
  await store.setEndpointScale({ endpoint: 'e', replicas: 4, reason: 'load' });
  // A narrower policy: the autoscaler's 4, brought within 1..2.
  await endpoints.deploy('e', {
    model: 'a',
    version: 1,
    config: { autoscale: { minReplicas: 1, maxReplicas: 2 } },
  });
  assert.equal((await store.getEndpointScale('e'))?.replicas, 2);
  // Asked for: taken as it is.
  await endpoints.deploy('e', {
    model: 'a',
    version: 1,
    replicas: 1,
    config: { autoscale: { minReplicas: 1, maxReplicas: 2 } },
  });
  assert.equal((await store.getEndpointScale('e'))?.replicas, 1);
});

test('a redeploy without autoscaling leaves a stored count equal to the fixed one', async (t) => {
  // Without it the count stayed at what the autoscaler last ran (0 here): a policy set later is
  // stored before its count, and a pass in between ran that stale 0 — every replica stopped
  // and started again. Fails without EndpointService.droppedScale.
  const { endpoints, store } = await setup(t);
  await endpoints.deploy('e', { model: 'a', version: 1, config: { autoscale: toZero } });
  await store.setEndpointScale({ endpoint: 'e', replicas: 0, reason: 'idle' });
  await endpoints.deploy('e', { model: 'a', version: 1, replicas: 2 });
  assert.equal((await store.getEndpointScale('e'))?.replicas, 2);
  const [event] = await store.listScaleEvents({ endpoint: 'e', limit: 1 });
  assert.equal(event?.reason, 'deploy without autoscaling: fixed count');
  assert.deepEqual([event?.from, event?.to], [0, 2]);
  // A redeploy of a fixed endpoint writes nothing more.
  await endpoints.deploy('e', { model: 'a', version: 1, replicas: 2 });
  assert.equal((await store.listScaleEvents({ endpoint: 'e' })).length, 2, 'deploy, drop');
});

test('an endpoint deployed with 0 replicas and no scale-to-zero policy is not said to wake', async (t) => {
  const { endpoints, route } = await setup(t);
  await endpoints.deploy('e', { model: 'a', version: 1, replicas: 0 });
  const parked = await endpoints.get('e');
  assert.equal(parked.status.ready, false);
  assert.equal(
    parked.status.reason,
    'deployed with 0 replicas (deploy with --replicas N to serve)',
  );
  assert.equal(route()?.activation, undefined, 'its requests are refused at once, not held');
});
