// A worker started as the Kubernetes backend's pods start it: the rendered container's args
// and environment (render.ts) with the values the kubelet fills in (the pod's name), served
// from a real artifact folder — it loads, verifies, is ready on its readiness route, and drains
// on SIGTERM. A pod environment that cannot make a spec exits 2 naming what is wrong.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { renderRevision } from '../../src/control/backends/kubernetes/render.ts';
import { tempDir } from '../helpers/temp-dir.ts';
import { mlpWorkerSpec } from './mlp-worker-spec.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));

interface Container {
  readonly command: string[];
  readonly args: string[];
  readonly env: { name: string; value?: string; valueFrom?: unknown }[];
}

/** The rendered worker container of the mlp spec, and its env as the kubelet would set it. */
async function renderedPod(): Promise<{ container: Container; env: Record<string, string> }> {
  const { spec } = await mlpWorkerSpec();
  const [deployment] = renderRevision({
    revision: 'mlp@1#{}',
    replicas: 1,
    worker: {
      endpoint: spec.endpoint,
      model: spec.model,
      version: spec.version,
      format: spec.format,
      files: spec.files,
      schema: spec.schema,
      maxBodyBytes: spec.maxBodyBytes,
      config: spec.config,
      batching: spec.batching,
      defaultTimeoutMs: spec.defaultTimeoutMs,
    },
    artifactBytes: spec.files[0]!.size,
    cluster: { namespace: 'kiln', image: 'kiln:test', controlUrl: 'http://127.0.0.1:1' },
  });
  const container = (
    deployment as unknown as { spec: { template: { spec: { containers: Container[] } } } }
  ).spec.template.spec.containers[0]!;
  const env: Record<string, string> = {};
  for (const e of container.env) if (e.value !== undefined) env[e.name] = e.value;
  return {
    container,
    env: {
      ...env,
      KILN_REPLICA_ID: 'kiln-mlp-1a2b3c4d-5f6d7c8b9-x2x4z', // fieldRef metadata.name
      KILN_NODE: 'node-1', // fieldRef spec.nodeName
      // The ConfigMap's setting; a folder here (no S3 in this test).
      KILN_ARTIFACTS_URL: spec.artifacts.kind === 'local' ? spec.artifacts.root : '',
      // Loopback and any free port here; in a pod 0.0.0.0:9000.
      KILN_WORKER_HOST: '127.0.0.1',
      KILN_WORKER_PORT: '0',
      KILN_WORK_DIR: join(await tempDir('kiln-pod-'), 'worker'),
    },
  };
}

function startPod(container: Container, env: Record<string, string>) {
  // `node dist/worker/main.js ARGS` from the sources.
  assert.deepEqual(container.command, ['node', 'dist/worker/main.js']);
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'src/worker/main.ts', ...container.args],
    { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const events: { event?: string; url?: string }[] = [];
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  createInterface({ input: child.stdout }).on('line', (line) => {
    try {
      events.push(JSON.parse(line) as { event?: string });
    } catch {
      // not an event
    }
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, events, exited, stderr: () => stderr };
}

test('a worker started from the rendered pod environment loads, is ready and drains', async () => {
  const { container, env } = await renderedPod();
  assert.deepEqual(container.args, ['--spec-env', 'KILN_WORKER_SPEC']);
  const pod = startPod(container, env);
  try {
    // Loading under a loaded machine may take a while: a generous bound, no fixed sleep.
    for (let i = 0; i < 1200; i++) {
      if (pod.events.some((e) => e.event === 'ready') || pod.child.exitCode !== null) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    assert.ok(
      pod.events.some((e) => e.event === 'ready'),
      `${JSON.stringify(pod.events)}\n${pod.stderr()}`,
    );
    const url = pod.events.find((e) => e.event === 'listening')!.url!;
    const ready = await fetch(`${url}/v2/health/ready`);
    assert.equal(ready.status, 200);
    const answer = await fetch(`${url}/v2/models/mlp`);
    assert.equal(answer.headers.get('kiln-replica'), env.KILN_REPLICA_ID);
    pod.child.kill('SIGTERM');
    assert.equal(await pod.exited, 0);
    assert.equal(existsSync(env.KILN_WORK_DIR!), false, 'the work folder is removed');
  } finally {
    pod.child.kill('SIGKILL');
  }
});

test('a pod environment that cannot make a spec exits 2 naming the problem', async () => {
  const { container, env } = await renderedPod();
  const cases: [Record<string, string | undefined>, RegExp][] = [
    [{ KILN_REPLICA_ID: '' }, /KILN_REPLICA_ID is not set/],
    [{ KILN_WORKER_SPEC: '{"endpoint":' }, /KILN_WORKER_SPEC is not JSON/],
    [{ KILN_WORKER_PORT: '70000' }, /KILN_WORKER_PORT 70000/],
    [{ KILN_ARTIFACTS_URL: 'gs://bucket/prefix' }, /expected s3:\/\/BUCKET/],
  ];
  for (const [change, reason] of cases) {
    const pod = startPod(container, { ...env, ...change } as Record<string, string>);
    assert.equal(await pod.exited, 2, JSON.stringify(change));
    assert.match(pod.stderr(), reason);
  }
});
