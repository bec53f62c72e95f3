// The reconciler with placement, against a backend the test drives: each replica is started
// with the node (and devices) placement gave it; a replica that fits the inventory but not
// the cluster as it is now waits, not started, with the reason where `kiln endpoints show`
// sees it, and starts once a replica stopping makes room; an adopted replica keeps what it
// held; a reclaimed node's replicas are replaced elsewhere before they stop.

import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import type { ReplicaLaunch } from '../../src/control/backends/backend.ts';
import { EndpointService } from '../../src/control/endpoints.ts';
import { Placer } from '../../src/control/placement/placer.ts';
import { placementEnv } from '../../src/control/placement/placement-env.ts';
import { Reconciler } from '../../src/control/reconciler.ts';
import { workerRevision } from '../../src/control/serving-defaults.ts';
import type { Inventory } from '../../src/placement/inventory.ts';
import { ArtifactStore } from '../../src/registry/artifact-store.ts';
import { Registry } from '../../src/registry/registry.ts';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import { tempDir } from '../helpers/temp-dir.ts';
import { until } from '../helpers/until.ts';
import { registerTwoModels } from '../helpers/two-models.ts';
import { DrivenBackend } from '../helpers/driven-backend.ts';

async function setup(
  t: TestContext,
  inventory: Inventory,
  /** Before start: deploy, then adopt the launches returned (a restarted platform). */
  before: (endpoints: EndpointService) => Promise<ReplicaLaunch[]> = () => Promise.resolve([]),
  startTimeoutMs?: number,
) {
  const dir = await tempDir();
  const store = SqliteStore.open(`${dir}/kiln.db`);
  const artifacts = new ArtifactStore(`${dir}/artifacts`);
  await artifacts.init();
  const registry = new Registry(store, artifacts);
  await registerTwoModels(registry, artifacts);
  const backend = new DrivenBackend();
  const clock = { now: () => Date.now() };
  const placer = new Placer({ inventory, source: 'test' });
  const reconciler = new Reconciler({
    store,
    registry,
    backend,
    clock,
    auth: 'dev',
    unpublishDelayMs: 0,
    intervalMs: 20,
    placer,
    ...(startTimeoutMs === undefined ? {} : { startTimeoutMs }),
  });
  const endpoints = new EndpointService(registry, reconciler, () => '', clock);
  const survivors = await before(endpoints);
  await reconciler.adopt(survivors.map((l) => backend.survivor(l)));
  reconciler.start();
  t.after(async () => {
    // Exiting a replica may make room for a waiting one, which the closing pass then starts:
    // each is exited too until the reconciler is closed.
    const exitAll = (): void => {
      for (const entry of backend.launched) if (!entry.exited) backend.exit(entry);
    };
    const exiting = setInterval(exitAll, 5);
    exitAll();
    await reconciler.close();
    clearInterval(exiting);
    await store.close();
  });
  return { backend, reconciler, endpoints, placer, store };
}

const twoCpus: Inventory = {
  nodes: [
    {
      name: 'n1',
      cpus: 2,
      memoryGiB: 8,
      capacity: 'on-demand',
      accelerators: [{ index: 0, type: 'L4', memoryGiB: 24, sharing: 'mps' }],
    },
  ],
  headroom: 0,
};

test('a replica waits for room with its reason, and starts once a replica stopping frees it', async (t) => {
  const { backend, endpoints, placer } = await setup(t, twoCpus);
  await endpoints.deploy('a', {
    model: 'a',
    config: { resources: { cpu: 2, accelerator: { memoryGiB: 10 } } },
  });
  await until(() => backend.launched.length === 1, 'a started');
  const first = backend.launched[0]!;
  assert.deepEqual(first.launch.placement, {
    node: 'n1',
    cpu: 2,
    memoryGiB: first.launch.placement!.memoryGiB,
    devices: [{ index: 0, memoryGiB: 10, whole: false }],
  });
  assert.deepEqual(placementEnv(first.launch.placement), {
    KILN_NODE: 'n1',
    CUDA_VISIBLE_DEVICES: '0',
  });
  backend.ready(first);

  // Fits the empty node, so the deploy is accepted; the node is full now, so it waits.
  await endpoints.deploy('b', { model: 'b', config: { resources: { cpu: 1 } } });
  await until(
    async () => /pending: unschedulable/.test((await endpoints.get('b')).status.reason ?? ''),
    'b pending',
  );
  const waiting = await endpoints.get('b');
  assert.match(
    waiting.status.reason!,
    /^replica b-v\d+-r0-\d+ pending: unschedulable: needs 1 CPU, largest free 0 CPUs$/,
  );
  assert.equal(waiting.status.replicas[0]!.node, null);
  assert.equal(backend.launched.length, 1, 'nothing started for b');

  // A deploy no empty node could hold is refused outright.
  await assert.rejects(
    endpoints.deploy('c', { model: 'b', config: { resources: { accelerator: { count: 2 } } } }),
    /endpoint c is unschedulable: needs 2 whole devices on one node, largest free 1/,
  );

  await endpoints.delete('a');
  await until(() => first.stopRequested, 'a asked to stop');
  assert.equal(backend.launched.length, 1, 'b waits until a is gone, not just stopping');
  backend.exit(first);
  await until(() => backend.launched.length === 2, 'b started once a is gone');
  assert.equal(backend.launched[1]!.launch.endpoint, 'b');
  assert.equal(backend.launched[1]!.launch.placement?.node, 'n1');
  backend.ready(backend.launched[1]!);
  await until(async () => (await endpoints.get('b')).status.ready, 'b ready');
  assert.equal((await endpoints.get('b')).status.replicas[0]!.node, 'n1');
  assert.deepEqual(
    placer.view().nodes[0]!.replicas.map((r) => r.endpoint),
    ['b'],
  );
});

test('an autoscaler asking beyond the inventory: the replicas that fit run, the rest wait with the reason', async (t) => {
  const { backend, reconciler, endpoints, store } = await setup(t, twoCpus);
  await endpoints.deploy('a', {
    model: 'a',
    config: {
      resources: { cpu: 1 },
      autoscale: { minReplicas: 1, maxReplicas: 4, target: 1 },
    },
  });
  await until(() => backend.launched.length === 1, 'a started');
  backend.ready(backend.launched[0]!);
  // The controller's write (autoscale-controller.ts), as after a burst of demand.
  await store.setEndpointScale({ endpoint: 'a', replicas: 4, reason: 'test', expectReplicas: 1 });
  await reconciler.trigger();
  await until(() => backend.launched.length === 2, 'the second that fits started');
  backend.ready(backend.launched[1]!);
  await until(async () => {
    const status = (await endpoints.get('a')).status.replicas;
    return status.filter((r) => /unschedulable/.test(r.reason ?? '')).length === 2;
  }, 'two waiting with their reason');
  const status = (await endpoints.get('a')).status.replicas;
  for (const waiting of status.filter((r) => r.node === null)) {
    assert.equal(waiting.state, 'starting');
    assert.match(waiting.reason!, /^unschedulable: needs 1 CPU, largest free 0 CPUs$/);
  }
  const endpoint = (await store.getEndpoint('a'))!;
  assert.deepEqual(reconciler.replicaCounts(endpoint), { ready: 2, starting: 2 });
  assert.equal(backend.launched.length, 2, 'nothing launched beyond the inventory');

  // Scaled back to what fits: the waiting ones go, the running ones stay.
  await store.setEndpointScale({ endpoint: 'a', replicas: 2, reason: 'test', expectReplicas: 4 });
  await reconciler.trigger();
  await until(
    async () => (await endpoints.get('a')).status.replicas.every((r) => r.node === 'n1'),
    'no replica waiting',
  );
  assert.deepEqual(reconciler.replicaCounts(endpoint), { ready: 2, starting: 0 });
  assert.ok(
    backend.launched.every((l) => !l.stopRequested),
    'no running replica stopped',
  );
});

test('an adopted replica keeps the node and devices it held', async (t) => {
  const { backend, endpoints, placer } = await setup(t, twoCpus, async (endpoints) => {
    const { endpoint } = await endpoints.deploy('a', {
      model: 'a',
      config: { resources: { cpu: 2 } },
    });
    return [
      {
        replicaId: 'a-v2-r0-1',
        revision: workerRevision(endpoint),
        slot: 0,
        endpoint: 'a',
        model: 'a',
        version: endpoint.version,
        format: 'xgboost',
        files: [],
        schema: null,
        artifacts: { kind: 'local', root: '' },
        maxBodyBytes: 1,
        config: {},
        batching: null,
        defaultTimeoutMs: null,
        placement: { node: 'n1', cpu: 2, memoryGiB: 1, devices: [] },
      },
    ];
  });
  await until(async () => (await endpoints.get('a')).status.ready, 'adopted replica ready');
  const held = placer.view().nodes[0]!;
  assert.deepEqual([held.cpuFree, held.replicas.map((r) => r.id)], [0, ['a-v2-r0-1']]);
  assert.equal((await endpoints.get('a')).status.replicas[0]!.node, 'n1');
  // So the node is full: another endpoint's replica waits.
  await endpoints.deploy('b', { model: 'b', config: { resources: { cpu: 1 } } });
  await until(
    async () =>
      /needs 1 CPU, largest free 0 CPUs/.test((await endpoints.get('b')).status.reason ?? ''),
    'b waits',
  );
  assert.equal(backend.launched.length, 1, 'only the adopted one');
});

test('a reclaimed node: each replica is replaced on another node, on-demand first, before it stops', async (t) => {
  const { backend, endpoints, reconciler } = await setup(t, {
    nodes: [
      { name: 'spot', cpus: 4, memoryGiB: 8, capacity: 'spot', accelerators: [] },
      { name: 'spot-2', cpus: 4, memoryGiB: 8, capacity: 'spot', accelerators: [] },
      { name: 'od', cpus: 4, memoryGiB: 8, capacity: 'on-demand', accelerators: [] },
    ],
  });
  await endpoints.deploy('a', { model: 'a', replicas: 1, config: { resources: { cpu: 1 } } });
  await until(() => backend.launched.length === 1, 'a started');
  const old = backend.launched[0]!;
  assert.equal(old.launch.placement?.node, 'spot');
  backend.ready(old);
  await until(async () => (await endpoints.get('a')).status.ready, 'a ready');

  assert.deepEqual(reconciler.reclaimNode('spot'), [old.launch.replicaId]);
  await until(() => backend.launched.length === 2, 'a replacement started');
  const replacement = backend.launched[1]!;
  // Failover to on-demand, though another spot node has room.
  assert.equal(replacement.launch.placement?.node, 'od');
  assert.equal(replacement.launch.slot, old.launch.slot);
  const during = await endpoints.get('a');
  assert.deepEqual(
    during.status.replicas.map((r) => [r.state, r.node, r.evicted]),
    [
      ['ready', 'spot', true],
      ['starting', 'od', false],
    ],
  );
  assert.equal(
    old.stopRequested,
    false,
    'the evicted replica serves until its replacement is ready',
  );
  assert.deepEqual(
    reconciler.routing.current().endpoints[0]!.replicas.map((r) => r.id),
    [old.launch.replicaId],
  );
  backend.ready(replacement);
  await until(() => old.stopRequested, 'the evicted replica stops once the replacement is ready');
  backend.exit(old);
  await until(
    async () => (await endpoints.get('a')).status.replicas.length === 1,
    'only the replacement left',
  );
  // A new replica never goes to the reclaimed node.
  await endpoints.deploy('a', { model: 'a', replicas: 3, config: { resources: { cpu: 1 } } });
  await until(() => backend.launched.length === 4, 'two more started');
  assert.ok(backend.launched.slice(2).every((l) => l.launch.placement?.node !== 'spot'));
});

test('a worker hung while starting holds its node until it is gone', async (t) => {
  const { backend, endpoints } = await setup(t, twoCpus, undefined, 100);
  await endpoints.deploy('a', { model: 'a', config: { resources: { cpu: 2 } } });
  await until(() => backend.launched.length === 1, 'a started');
  const hung = backend.launched[0]!;
  await until(() => hung.stopRequested, 'the hung start stopped after the start timeout');
  await endpoints.deploy('b', { model: 'b', config: { resources: { cpu: 1 } } });
  await until(
    async () => /pending: unschedulable/.test((await endpoints.get('b')).status.reason ?? ''),
    'b waits while the hung worker is still there',
  );
  assert.equal(backend.launched.length, 1);
  backend.exit(hung);
  await until(
    () => backend.launched.some((l) => l.launch.endpoint === 'b'),
    'b started once the hung worker is gone',
  );
});

test('the worker environment names the node, its devices and MIG instances', () => {
  assert.deepEqual(placementEnv(undefined), {});
  assert.deepEqual(placementEnv({ node: 'cpu-1', cpu: 1, memoryGiB: 1, devices: [] }), {
    KILN_NODE: 'cpu-1',
  });
  assert.deepEqual(
    placementEnv({
      node: 'gpu-1',
      cpu: 1,
      memoryGiB: 1,
      devices: [
        { index: 2, memoryGiB: 80, whole: true },
        { index: 3, memoryGiB: 10, whole: false, mig: { profile: '1g.10gb', instance: 4 } },
      ],
    }),
    { KILN_NODE: 'gpu-1', CUDA_VISIBLE_DEVICES: '2,3', KILN_MIG_INSTANCES: '3:1g.10gb:4' },
  );
});
