// `kiln up --backend kubernetes` end to end against the fake API server: a deployed endpoint
// becomes the Deployment render.ts makes of its revision (applied as kiln, one replica), the
// fake's pod is a real worker on loopback serving the same model, and a request through the
// gateway is answered by it with the training library's reference outputs; an image that
// cannot be pulled leaves the endpoint not ready with Kubernetes' reason in `endpoints show`.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startPlatform, type RunningPlatform } from '../../../../src/control/start-platform.ts';
import { LocalBackend } from '../../../../src/control/backends/local/local-backend.ts';
import type { ReplicaEvent } from '../../../../src/control/backends/backend.ts';
import { call, registerFixture } from '../../../helpers/platform.ts';
import { FakeKubeApi, type PodBehaviour } from '../../../helpers/fake-kube-api.ts';
import { mlpWorkerSpec } from '../../../worker/mlp-worker-spec.ts';

const namespace = 'serving';
const expected = JSON.parse(
  await readFile(new URL('../../../../fixtures/onnx/mlp.expected.json', import.meta.url), 'utf8'),
) as {
  inputs: { name: string; datatype: string; shape: number[]; data: number[] }[];
  outputs: { name: string; data: number[] }[];
};

/** Polls until `done` holds (generous: workers start slowly on a loaded machine). */
async function waitFor<T>(
  read: () => Promise<T>,
  done: (value: T) => boolean,
  what: string,
  timeoutMs = 90_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last = await read();
  while (!done(last)) {
    if (Date.now() > deadline)
      assert.fail(`timed out waiting for ${what}: ${JSON.stringify(last)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
    last = await read();
  }
  return last;
}

/** A real worker serving fixtures/onnx/mlp.onnx as endpoint `e`: what the pod would run. */
async function realWorker(t: { after: (fn: () => Promise<void>) => void }): Promise<number> {
  const { spec, home } = await mlpWorkerSpec({ endpoint: 'e', model: 'm' });
  const local = new LocalBackend({ runDir: join(home, 'run'), standbyWorkers: 0 });
  await local.init();
  t.after(() => local.close());
  const { host: _host, port: _port, workDir: _workDir, channelSocket: _socket, ...launch } = spec;
  const url = await new Promise<string>((resolve, reject) => {
    let listening = '';
    local.start({ ...launch, revision: 'pod', slot: 0 }, (event: ReplicaEvent) => {
      if (event.kind === 'listening') listening = event.url;
      if (event.kind === 'ready') resolve(listening);
      if (event.kind === 'failed') reject(new Error(event.reason));
    });
  });
  return Number(new URL(url).port);
}

type ReplicaView = { state: string; url: string | null; reason: string | null };
type StatusView = { ready: boolean; reason: string | null; replicas: ReplicaView[] };

async function statusOf(platform: RunningPlatform): Promise<StatusView> {
  const reply = await call(platform.url, 'GET', '/api/v1/endpoints/e');
  assert.equal(reply.status, 200, JSON.stringify(reply.body));
  return (reply.body as { status: StatusView }).status;
}

async function replicasOf(platform: RunningPlatform): Promise<ReplicaView[]> {
  return (await statusOf(platform)).replicas;
}

async function platformOnFake(
  t: { after: (fn: () => Promise<void>) => void },
  pods: (deployment: string, index: number) => PodBehaviour,
  gateway: boolean,
): Promise<{ platform: RunningPlatform; fake: FakeKubeApi }> {
  const fake = new FakeKubeApi();
  fake.namespaces.add(namespace);
  fake.pods = pods;
  await fake.start();
  const home = await mkdtemp(join(tmpdir(), 'kiln-home-'));
  const platform = await startPlatform({
    home,
    host: '127.0.0.1',
    port: 0,
    gateway,
    gatewayPort: 0,
    dev: true,
    backend: 'kubernetes',
    kubernetes: {
      kubeConfig: fake.kubeConfig(namespace),
      namespace,
      workerImage: 'registry.example/kiln:test',
      controlUrl: 'http://kiln-control.serving.svc:8080',
    },
  });
  t.after(async () => {
    await platform.close();
    await fake.close();
    await rm(home, { recursive: true, force: true });
  });
  await registerFixture(platform.url, 'm', 'onnx', 'mlp.onnx');
  const deployed = await call(platform.url, 'PUT', '/api/v1/endpoints/e', {
    model: 'm',
    version: 1,
    replicas: 1,
  });
  assert.equal(deployed.status, 201, JSON.stringify(deployed.body));
  return { platform, fake };
}

test('an endpoint on the kubernetes backend is a Deployment applied as kiln whose pod serves through the gateway', async (t) => {
  const port = await realWorker(t);
  const { platform, fake } = await platformOnFake(
    t,
    () => ({ ready: true, ip: '127.0.0.1', port }),
    true,
  );
  const replicas = await waitFor(
    () => replicasOf(platform),
    (r) => r.length === 1 && r[0]?.state === 'ready',
    'the replica ready',
  );
  assert.equal(replicas[0]?.url, `http://127.0.0.1:${port}`);

  const [deployment] = fake.list('deployments', namespace);
  assert.ok(deployment !== undefined);
  assert.match(deployment.metadata.name, /^kiln-e-[0-9a-z]{8}$/);
  assert.deepEqual(
    deployment.metadata.managedFields?.map((f) => f.manager),
    ['kiln'],
  );
  const spec = deployment.spec as {
    replicas: number;
    template: { spec: { containers: { image: string }[] } };
  };
  assert.equal(spec.replicas, 1);
  assert.equal(spec.template.spec.containers[0]?.image, 'registry.example/kiln:test');
  assert.equal(fake.list('services', namespace).length, 1);
  assert.equal(fake.list('poddisruptionbudgets', namespace).length, 1);

  const answer = await waitFor(
    () =>
      call(platform.gatewayUrl, 'POST', '/v2/models/e/infer', {
        inputs: expected.inputs,
      }),
    (reply) => reply.status === 200,
    'an answer through the gateway',
  );
  const outputs = (answer.body as { outputs: { name: string; data: number[] }[] }).outputs;
  const want = expected.outputs[0]?.data ?? [];
  const got = outputs.find((o) => o.name === expected.outputs[0]?.name)?.data ?? [];
  assert.equal(got.length, want.length);
  for (let i = 0; i < want.length; i++)
    assert.ok(Math.abs((got[i] ?? NaN) - (want[i] ?? 0)) < 1e-5);

  // Scaled to two: one Deployment, two replicas, both ready.
  const scaled = await call(platform.url, 'PUT', '/api/v1/endpoints/e', {
    model: 'm',
    version: 1,
    replicas: 2,
  });
  assert.equal(scaled.status, 200, JSON.stringify(scaled.body));
  await waitFor(
    () => replicasOf(platform),
    (r) => r.length === 2 && r.every((x) => x.state === 'ready'),
    'two replicas ready',
  );
  assert.equal(fake.list('deployments', namespace).length, 1);
  assert.equal((fake.list('deployments', namespace)[0]?.spec as { replicas: number }).replicas, 2);
});

test('an image that cannot be pulled leaves the endpoint not ready, naming the reason', async (t) => {
  const { platform } = await platformOnFake(
    t,
    () => ({
      ready: false,
      waiting: {
        reason: 'ErrImagePull',
        message: 'failed to pull and unpack image "registry.example/kiln:test": not found',
      },
    }),
    false,
  );
  const replicas = await waitFor(
    () => replicasOf(platform),
    (r) => r[0]?.reason?.startsWith('ErrImagePull') === true,
    'the pull failure in endpoints show',
  );
  assert.equal(replicas[0]?.state, 'starting');
  assert.equal(replicas[0]?.url, null);
  assert.match(replicas[0]?.reason ?? '', /ErrImagePull: failed to pull and unpack image/);
  // The endpoint's own status says it too (what `kiln endpoints show` prints first).
  const status = await statusOf(platform);
  assert.equal(status.ready, false);
  assert.match(status.reason ?? '', /ErrImagePull/);
});
