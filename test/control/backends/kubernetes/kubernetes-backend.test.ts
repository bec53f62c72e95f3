// The Kubernetes backend against a local stand-in for the API server (test/helpers/
// fake-kube-api.ts): what it applies (server-side apply, field manager kiln, the replica count
// of each revision), what it reads back by watching (ready pods → listening/ready, pods that
// will not run → failed with Kubernetes' reason), and how it rides out the API: a dropped
// watch resumes from its resourceVersion, a 410 relists, 403 and a missing namespace are
// named. The objects come from a minimal stand-in renderer (render.ts is another helper's).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { ModelSchema } from '../../../../src/core/tensor.ts';
import type { KubeObject } from '../../../../src/control/backends/kubernetes/kube-object.ts';
import type { ReplicaEvent, ReplicaLaunch } from '../../../../src/control/backends/backend.ts';
import { KubeApi } from '../../../../src/control/backends/kubernetes/kube-api.ts';
import { KubernetesBackend } from '../../../../src/control/backends/kubernetes/kubernetes-backend.ts';
import { FakeKubeApi, podOf, type PodBehaviour } from '../../../helpers/fake-kube-api.ts';
import { until } from '../../../helpers/until.ts';

const namespace = 'serving';
const schema: ModelSchema = {
  inputs: [{ name: 'x', datatype: 'FP32', shape: [-1, 2] }],
  outputs: [{ name: 'y', datatype: 'FP32', shape: [-1] }],
};

/** Stand-in for render.ts: Deployment, Service and PDB named and labelled as the contract says. */
export function standInRender(launch: ReplicaLaunch): KubeObject[] {
  const revision8 = Buffer.from(launch.revision).toString('hex').slice(0, 8);
  const name = `kiln-${launch.endpoint}-${revision8}`;
  const selector = { 'kiln.dev/endpoint': launch.endpoint, 'kiln.dev/revision': revision8 };
  const labels = {
    'app.kubernetes.io/name': 'kiln-worker',
    'app.kubernetes.io/managed-by': 'kiln',
    ...selector,
  };
  return [
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name, labels },
      spec: {
        replicas: 1,
        selector: { matchLabels: selector },
        template: {
          metadata: { labels },
          spec: {
            containers: [{ name: 'worker', image: 'kiln:test', ports: [{ containerPort: 8080 }] }],
          },
        },
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name, labels },
      spec: { selector, ports: [{ name: 'http', port: 80, targetPort: 8080 }] },
    },
    {
      apiVersion: 'policy/v1',
      kind: 'PodDisruptionBudget',
      metadata: { name, labels },
      spec: { maxUnavailable: 1, selector: { matchLabels: selector } },
    },
  ];
}

function launchOf(slot: number, overrides: Partial<ReplicaLaunch> = {}): ReplicaLaunch {
  return {
    replicaId: `fraud-v1-r${slot}-${slot + 1}`,
    revision: 'fraud@1#{}',
    slot,
    endpoint: 'fraud',
    model: 'fraud',
    version: 1,
    format: 'onnx',
    files: [],
    schema,
    artifacts: { kind: 'local', root: '/artifacts' },
    maxBodyBytes: 1_000_000,
    config: {},
    batching: null,
    defaultTimeoutMs: null,
    ...overrides,
  };
}

/** A worker stand-in answering its metadata route (what the backend probes before `ready`). */
async function stubWorker(endpoint: string): Promise<{ server: Server; port: number }> {
  const server = createServer((request, response) => {
    if (request.url === `/v2/models/${endpoint}`) {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ name: endpoint, ...schema }));
      return;
    }
    response.writeHead(404);
    response.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (typeof address !== 'object' || address === null) throw new Error('no address');
  return { server, port: address.port };
}

interface Harness {
  fake: FakeKubeApi;
  backend: KubernetesBackend;
  api: KubeApi;
}

async function harness(
  t: { after: (fn: () => Promise<void> | void) => void },
  pods: ((deployment: string, index: number) => PodBehaviour) | null,
  options: { removeAfterMs?: number; init?: boolean } = {},
): Promise<Harness> {
  const fake = new FakeKubeApi();
  fake.namespaces.add(namespace);
  fake.pods = pods;
  await fake.start();
  const api = new KubeApi(fake.kubeConfig(namespace), namespace);
  const backend = new KubernetesBackend({
    api,
    render: standInRender,
    applyDelayMs: 5,
    retryMs: 20,
    probeIntervalMs: 20,
    removeAfterMs: options.removeAfterMs ?? 60_000,
  });
  t.after(async () => {
    await backend.close();
    await fake.close();
  });
  if (options.init !== false) await backend.init();
  return { fake, backend, api };
}

function recorder(): { events: ReplicaEvent[]; onEvent: (event: ReplicaEvent) => void } {
  const events: ReplicaEvent[] = [];
  return { events, onEvent: (event) => events.push(event) };
}

const kinds = (events: readonly ReplicaEvent[]): string[] => events.map((e) => e.kind);

test('a revision is applied server-side under the field manager kiln, and its pods become ready replicas', async (t) => {
  const worker = await stubWorker('fraud');
  t.after(() => worker.server.close());
  const { fake, backend } = await harness(t, () => ({
    ready: true,
    ip: '127.0.0.1',
    port: worker.port,
  }));
  const first = recorder();
  // No schema in the launch: the backend asks the worker's metadata route.
  backend.start(launchOf(0, { schema: null }), first.onEvent);
  await until(() => first.events.some((e) => e.kind === 'ready'), 'the replica to be ready');
  assert.deepEqual(kinds(first.events), ['listening', 'ready']);
  const listening = first.events[0];
  assert.equal(listening?.kind === 'listening' && listening.url, `http://127.0.0.1:${worker.port}`);
  const ready = first.events[1];
  assert.deepEqual(ready?.kind === 'ready' && ready.schema, schema);

  const name = standInRender(launchOf(0))[0]?.metadata.name ?? '';
  for (const plural of ['deployments', 'services', 'poddisruptionbudgets']) {
    const object = fake.get(plural, namespace, name);
    assert.ok(object !== undefined, `${plural} ${name} applied`);
    assert.deepEqual(
      object.metadata.managedFields?.map((f) => [f.manager, f.operation]),
      [['kiln', 'Apply']],
    );
  }
  const patches = fake.requests.filter((r) => r.method === 'PATCH');
  assert.ok(patches.length >= 3);
  for (const patch of patches) {
    assert.equal(patch.contentType, 'application/apply-patch+yaml');
    assert.equal(patch.query.get('fieldManager'), 'kiln');
    assert.equal(patch.query.get('force'), 'true');
    assert.equal(patch.status < 300, true);
  }
  const replicas = (): unknown =>
    (fake.get('deployments', namespace, name)?.spec as { replicas?: number }).replicas;
  assert.equal(replicas(), 1);

  // Scale up: two more slots of the revision, one Deployment with three replicas.
  const more = [recorder(), recorder()];
  backend.start(launchOf(1), more[0]!.onEvent);
  backend.start(launchOf(2), more[1]!.onEvent);
  await until(() => replicas() === 3, 'three replicas');
  await until(() => more.every((r) => r.events.some((e) => e.kind === 'ready')), 'both ready');
  assert.equal(fake.list('pods', namespace).length, 3);

  // Scale down: the stopped slot's own pod goes (marked cheapest), the others keep serving.
  const handles = fake.list('pods', namespace).map((p) => p.metadata.name);
  assert.equal(handles.length, 3);
  const stopping = recorder();
  const handle = backend.start(launchOf(3), stopping.onEvent);
  await until(() => stopping.events.some((e) => e.kind === 'ready'), 'a fourth ready');
  const podsBefore = new Set(fake.list('pods', namespace).map((p) => p.metadata.name));
  await handle.stop(1_000);
  assert.equal(replicas(), 3);
  assert.deepEqual(kinds(stopping.events), ['listening', 'ready', 'exited']);
  const podsAfter = new Set(fake.list('pods', namespace).map((p) => p.metadata.name));
  assert.equal(podsAfter.size, 3);
  assert.ok([...podsAfter].every((p) => podsBefore.has(p)));
  // Nobody else lost their pod.
  for (const r of [first, ...more]) assert.ok(!r.events.some((e) => e.kind === 'exited'));
});

test('an image that cannot be pulled keeps the replica starting with Kubernetes reason; fixed, it becomes ready', async (t) => {
  const worker = await stubWorker('fraud');
  t.after(() => worker.server.close());
  const { fake, backend } = await harness(t, () => ({
    ready: false,
    waiting: {
      reason: 'ImagePullBackOff',
      message: 'Back-off pulling image "registry.example/kiln:nope"',
    },
  }));
  const slot = recorder();
  backend.start(launchOf(0), slot.onEvent);
  await until(() => slot.events.length > 0, 'a failure reported');
  const failed = slot.events[0];
  assert.equal(failed?.kind, 'failed');
  assert.match(
    failed?.kind === 'failed' ? failed.reason : '',
    /^ImagePullBackOff: Back-off pulling image "registry\.example\/kiln:nope"/,
  );
  // Not exited: Kubernetes retries the pull itself; the slot stays, with its reason.
  assert.ok(!slot.events.some((e) => e.kind === 'exited'));

  // The image is fixed (the kubelet's next pull works): the same pod becomes ready.
  const [pod] = fake.list('pods', namespace);
  assert.ok(pod !== undefined);
  fake.put(
    'pods',
    namespace,
    podOf(pod.metadata.name, pod.metadata.labels ?? {}, {
      ready: true,
      ip: '127.0.0.1',
      port: worker.port,
    }),
  );
  await until(() => slot.events.some((e) => e.kind === 'ready'), 'ready after the fix');
});

test('a GPU request no node satisfies names the scheduler message', async (t) => {
  const { backend } = await harness(t, () => ({
    ready: false,
    unschedulable: '0/3 nodes are available: 3 Insufficient nvidia.com/gpu.',
  }));
  const slot = recorder();
  backend.start(launchOf(0), slot.onEvent);
  await until(() => slot.events.length > 0, 'a failure reported');
  assert.deepEqual(slot.events, [
    {
      kind: 'failed',
      reason: 'Unschedulable: 0/3 nodes are available: 3 Insufficient nvidia.com/gpu.',
    },
  ]);
});

test('a serving pod killed for memory makes its replica fail (OOMKilled) and exit, for the reconciler to restart', async (t) => {
  const worker = await stubWorker('fraud');
  t.after(() => worker.server.close());
  const { fake, backend } = await harness(t, () => ({
    ready: true,
    ip: '127.0.0.1',
    port: worker.port,
  }));
  const slot = recorder();
  backend.start(launchOf(0), slot.onEvent);
  await until(() => slot.events.some((e) => e.kind === 'ready'), 'ready');
  const [pod] = fake.list('pods', namespace);
  assert.ok(pod !== undefined);
  fake.put(
    'pods',
    namespace,
    podOf(pod.metadata.name, pod.metadata.labels ?? {}, {
      ready: false,
      oomKilled: true,
      ip: '127.0.0.1',
      port: worker.port,
    }),
  );
  await until(() => slot.events.some((e) => e.kind === 'exited'), 'exited');
  const failed = slot.events.find((e) => e.kind === 'failed');
  assert.match(
    failed?.kind === 'failed' ? failed.reason : '',
    /^OOMKilled: container worker ran out of memory/,
  );
  assert.deepEqual(kinds(slot.events), ['listening', 'ready', 'failed', 'exited']);
});

test('a dropped watch resumes from its resourceVersion, and a 410 Gone relists', async (t) => {
  const worker = await stubWorker('fraud');
  t.after(() => worker.server.close());
  const { fake, backend } = await harness(t, () => ({
    ready: true,
    ip: '127.0.0.1',
    port: worker.port,
  }));
  const first = recorder();
  backend.start(launchOf(0), first.onEvent);
  await until(() => first.events.some((e) => e.kind === 'ready'), 'ready');
  const before = backend.watchCounts();

  // The connection drops; a change made meanwhile is delivered by the resumed watch.
  fake.dropWatches();
  const second = recorder();
  backend.start(launchOf(1), second.onEvent);
  await until(() => second.events.some((e) => e.kind === 'ready'), 'ready after the drop');
  const resumed = backend.watchCounts();
  assert.equal(resumed.pods.lists, before.pods.lists, 'no relist for a dropped connection');
  assert.ok(resumed.pods.resumes > before.pods.resumes);
  const resumeWatches = fake.requests.filter(
    (r) => r.path.endsWith('/pods') && r.query.get('watch') === 'true',
  );
  assert.ok(resumeWatches.length >= 2);
  assert.ok(resumeWatches.every((r) => r.query.get('resourceVersion') !== null));

  // The server ends the streams at their timeout: resumed the same way.
  const beforeEnd = backend.watchCounts();
  fake.endWatches();
  const fourth = recorder();
  backend.start(launchOf(3), fourth.onEvent);
  await until(() => fourth.events.some((e) => e.kind === 'ready'), 'ready after the timeout');
  assert.equal(backend.watchCounts().pods.lists, before.pods.lists, 'no relist at a timeout');
  assert.ok(backend.watchCounts().pods.resumes > beforeEnd.pods.resumes);

  // The history is compacted while disconnected: 410 Gone, then a fresh list.
  fake.compact();
  fake.dropWatches();
  const third = recorder();
  backend.start(launchOf(2), third.onEvent);
  await until(() => third.events.some((e) => e.kind === 'ready'), 'ready after the relist');
  await until(() => backend.watchCounts().pods.lists > before.pods.lists, 'a relist');
  for (const r of [first, second, fourth]) assert.ok(!r.events.some((e) => e.kind === 'exited'));
});

test('an apply the kubeconfig may not make is a reason naming verb and resource, retried until allowed', async (t) => {
  const worker = await stubWorker('fraud');
  t.after(() => worker.server.close());
  const { fake, backend } = await harness(t, () => ({
    ready: true,
    ip: '127.0.0.1',
    port: worker.port,
  }));
  fake.forbid('patch', 'deployments');
  const slot = recorder();
  backend.start(launchOf(0), slot.onEvent);
  await until(() => slot.events.length > 0, 'a failure reported');
  const failed = slot.events[0];
  assert.equal(failed?.kind, 'failed');
  assert.match(
    failed?.kind === 'failed' ? failed.reason : '',
    /forbidden: the kubeconfig's user may not patch deployments\/kiln-fraud-\w+ in namespace serving \(403\): .*cannot patch resource "deployments" in API group "apps"/,
  );
  fake.allow('patch', 'deployments');
  await until(() => slot.events.some((e) => e.kind === 'ready'), 'ready once allowed');
});

test('a missing namespace or a kubeconfig that may not watch pods refuses the start with a clear error', async (t) => {
  const missing = await harness(t, null, { init: false });
  const elsewhere = new KubernetesBackend({
    api: new KubeApi(missing.fake.kubeConfig('nope'), 'nope'),
    render: standInRender,
  });
  await assert.rejects(elsewhere.init(), /namespace nope does not exist/);
  await elsewhere.close();

  missing.fake.forbid('list', 'pods');
  await assert.rejects(
    missing.backend.init(),
    /forbidden: the kubeconfig's user may not list pods in namespace serving \(403\)/,
  );
});

test('a revision left without replicas has its objects deleted', async (t) => {
  const worker = await stubWorker('fraud');
  t.after(() => worker.server.close());
  const { fake, backend } = await harness(
    t,
    () => ({ ready: true, ip: '127.0.0.1', port: worker.port }),
    { removeAfterMs: 50 },
  );
  const slot = recorder();
  const handle = backend.start(launchOf(0), slot.onEvent);
  await until(() => slot.events.some((e) => e.kind === 'ready'), 'ready');
  const name = standInRender(launchOf(0))[0]?.metadata.name ?? '';
  await handle.stop(1_000);
  await until(
    () =>
      fake.get('deployments', namespace, name) === undefined &&
      fake.get('services', namespace, name) === undefined &&
      fake.get('poddisruptionbudgets', namespace, name) === undefined,
    'the objects deleted',
  );
  assert.equal(fake.list('pods', namespace).length, 0);
});

test('the fake answers as the API server does: apply needs its content type and a field manager', async (t) => {
  const { fake } = await harness(t, null, { init: false });
  const url = `${fake.url}/apis/apps/v1/namespaces/${namespace}/deployments/x`;
  const body = JSON.stringify({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'x' },
  });
  const merge = await fetch(`${url}?fieldManager=kiln`, {
    method: 'PATCH',
    headers: { 'content-type': 'application/merge-patch+json' },
    body,
  });
  assert.equal(merge.status, 415);
  const noManager = await fetch(url, {
    method: 'PATCH',
    headers: { 'content-type': 'application/apply-patch+yaml' },
    body,
  });
  assert.equal(noManager.status, 400);
  assert.match(
    ((await noManager.json()) as { message: string }).message,
    /fieldManager: Required value/,
  );
  const created = await fetch(`${url}?fieldManager=kiln`, {
    method: 'PATCH',
    headers: { 'content-type': 'application/apply-patch+yaml' },
    body,
  });
  assert.equal(created.status, 201);
  const version = Number(
    ((await created.json()) as { metadata: { resourceVersion: string } }).metadata.resourceVersion,
  );
  const updated = await fetch(`${url}?fieldManager=kiln`, {
    method: 'PATCH',
    headers: { 'content-type': 'application/apply-patch+yaml' },
    body,
  });
  assert.equal(updated.status, 200);
  const next = Number(
    ((await updated.json()) as { metadata: { resourceVersion: string } }).metadata.resourceVersion,
  );
  assert.ok(next > version);
  const missingNs = await fetch(
    `${fake.url}/apis/apps/v1/namespaces/absent/deployments/x?fieldManager=kiln`,
    { method: 'PATCH', headers: { 'content-type': 'application/apply-patch+yaml' }, body },
  );
  assert.equal(missingNs.status, 404);
  assert.match(
    ((await missingNs.json()) as { message: string }).message,
    /namespaces "absent" not found/,
  );
});

test('a revision the renderer refuses (a GPU share no MIG resource holds) is the replica reason, not a crash', async (t) => {
  const fake = new FakeKubeApi();
  fake.namespaces.add(namespace);
  await fake.start();
  const backend = new KubernetesBackend({
    api: new KubeApi(fake.kubeConfig(namespace), namespace),
    render: () => {
      throw new Error('no declared MIG resource holds 30 GiB of an L4');
    },
    applyDelayMs: 5,
    retryMs: 20,
  });
  t.after(async () => {
    await backend.close();
    await fake.close();
  });
  await backend.init();
  const slot = recorder();
  backend.start(launchOf(0), slot.onEvent);
  await until(() => slot.events.length > 0, 'a failure reported');
  assert.deepEqual(slot.events, [
    {
      kind: 'failed',
      reason:
        'could not render endpoint fraud (fraud v1) for Kubernetes: no declared MIG resource holds 30 GiB of an L4',
    },
  ]);
  assert.equal(fake.requests.filter((r) => r.method === 'PATCH').length, 0);
});

test('a control plane that shuts down leaves the pods serving, and the next one adopts them without scaling down', async (t) => {
  const worker = await stubWorker('fraud');
  t.after(() => worker.server.close());
  const { fake, backend, api } = await harness(t, () => ({
    ready: true,
    ip: '127.0.0.1',
    port: worker.port,
  }));
  const name = standInRender(launchOf(0))[0]?.metadata.name ?? '';
  const replicas = (): unknown =>
    (fake.get('deployments', namespace, name)?.spec as { replicas?: number }).replicas;
  const first = [0, 1, 2].map((slot) => {
    const r = recorder();
    return { r, handle: backend.start(launchOf(slot), r.onEvent) };
  });
  await until(
    () => first.every(({ r }) => r.events.some((e) => e.kind === 'ready')),
    'three ready',
  );
  // Shutdown: the reconciler stops every replica, then closes the backend.
  backend.retain();
  await Promise.all(first.map(({ handle }) => handle.stop(1_000)));
  await backend.close();
  assert.equal(replicas(), 3);
  assert.equal(fake.list('pods', namespace).length, 3);
  const pods = new Set(fake.list('pods', namespace).map((p) => p.metadata.name));

  // The next control plane starts its slots one at a time: the running pods stay meanwhile.
  const next = new KubernetesBackend({
    api,
    render: standInRender,
    applyDelayMs: 5,
    retryMs: 20,
    adoptGraceMs: 400,
  });
  t.after(() => next.close());
  await next.init();
  const adopted = recorder();
  next.start(launchOf(0), adopted.onEvent);
  await until(() => adopted.events.some((e) => e.kind === 'ready'), 'the slot ready');
  const listening = adopted.events[0];
  assert.equal(listening?.kind, 'listening');
  assert.equal(replicas(), 3, 'no scale down while the others may still be started');
  assert.ok(fake.list('pods', namespace).every((p) => pods.has(p.metadata.name)));
  // Past the grace, the Deployment follows the live slots.
  await until(() => replicas() === 1, 'scaled to the one live slot');
});

test('a kubeconfig that cannot reach the API server fails the start, naming it', async () => {
  const fake = new FakeKubeApi();
  await fake.start();
  const config = fake.kubeConfig(namespace);
  await fake.close();
  const backend = new KubernetesBackend({
    api: new KubeApi(config, namespace),
    render: standInRender,
  });
  await assert.rejects(backend.init(), /could not be reached|ECONNREFUSED/);
  await backend.close();
});

test('an autoscaled revision applies its HPA and KEDA ScaledObject whole, and leaves the pod count to them', async (t) => {
  const worker = await stubWorker('fraud');
  t.after(() => worker.server.close());
  const fake = new FakeKubeApi();
  fake.namespaces.add(namespace);
  fake.pods = () => ({ ready: true, ip: '127.0.0.1', port: worker.port });
  await fake.start();
  const render = (launch: ReplicaLaunch): KubeObject[] => {
    const [deployment, ...rest] = standInRender(launch);
    if (deployment === undefined) throw new Error('no deployment');
    const { replicas: _owned, ...spec } = deployment.spec as Record<string, unknown>;
    const name = deployment.metadata.name;
    const target = { apiVersion: 'apps/v1', kind: 'Deployment', name };
    return [
      { ...deployment, spec },
      ...rest,
      {
        apiVersion: 'autoscaling/v2',
        kind: 'HorizontalPodAutoscaler',
        metadata: { name, labels: deployment.metadata.labels ?? {} },
        spec: {
          scaleTargetRef: target,
          minReplicas: 1,
          maxReplicas: 4,
          metrics: [
            {
              type: 'Resource',
              resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 70 } },
            },
          ],
        },
      },
      {
        apiVersion: 'keda.sh/v1alpha1',
        kind: 'ScaledObject',
        metadata: { name: `${name}-wake`, labels: deployment.metadata.labels ?? {} },
        spec: {
          scaleTargetRef: { name },
          minReplicaCount: 0,
          maxReplicaCount: 4,
          triggers: [
            {
              type: 'prometheus',
              metadata: {
                serverAddress: 'http://prometheus:9090',
                query: 'sum(x)',
                threshold: '5',
              },
            },
          ],
        },
      },
    ];
  };
  const backend = new KubernetesBackend({
    api: new KubeApi(fake.kubeConfig(namespace), namespace),
    render,
    applyDelayMs: 5,
    retryMs: 20,
    probeIntervalMs: 20,
  });
  t.after(async () => {
    await backend.close();
    await fake.close();
  });
  await backend.init();
  const slot = recorder();
  const name = standInRender(launchOf(0))[0]?.metadata.name ?? '';
  backend.start(launchOf(0), slot.onEvent);
  await until(() => slot.events.some((e) => e.kind === 'ready'), 'ready');
  await until(
    () => fake.get('scaledobjects', namespace, `${name}-wake`) !== undefined,
    'every object applied',
  );
  const hpa = fake.get('horizontalpodautoscalers', namespace, name);
  assert.deepEqual((hpa?.spec as { maxReplicas?: number }).maxReplicas, 4);
  assert.deepEqual(
    hpa?.metadata.managedFields?.map((f) => f.manager),
    ['kiln'],
  );
  const scaled = fake.get('scaledobjects', namespace, `${name}-wake`);
  assert.deepEqual(
    (scaled?.spec as { triggers?: { metadata: { query: string } }[] }).triggers?.[0]?.metadata
      .query,
    'sum(x)',
  );
  // The Deployment was applied once, without a count: the autoscaler's to set.
  const patches = () =>
    fake.requests.filter((r) => r.method === 'PATCH' && r.path.endsWith(`/deployments/${name}`));
  assert.equal(patches().length, 1);
  assert.equal(
    (fake.get('deployments', namespace, name)?.spec as { replicas?: number }).replicas,
    undefined,
  );
});
