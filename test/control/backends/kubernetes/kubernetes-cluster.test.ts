// The Kubernetes backend against a real cluster, when KUBECONFIG points at one (skipped, with
// the reason printed, otherwise). In KILN_TEST_KUBE_NAMESPACE (default `default`) it applies a
// revision whose pod runs a small image (KILN_TEST_KUBE_IMAGE, default the pause image: it
// needs no probe to be ready; the revision's schema is given, so no metadata probe either),
// waits for the replica to be listening at its pod IP and ready, checks the Deployment is
// managed by kiln with one replica, then stops it and waits for the objects to be deleted.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import type { ReplicaEvent } from '../../../../src/control/backends/backend.ts';
import type { KubeObject } from '../../../../src/control/backends/kubernetes/kube-object.ts';
import {
  defaultKubeConfig,
  deploymentsCollection,
  KubeApi,
} from '../../../../src/control/backends/kubernetes/kube-api.ts';
import { KubernetesBackend } from '../../../../src/control/backends/kubernetes/kubernetes-backend.ts';

const kubeconfig = process.env.KUBECONFIG;
const skip =
  kubeconfig === undefined || kubeconfig === ''
    ? 'KUBECONFIG is not set: no cluster to run the Kubernetes backend against'
    : kubeconfig.split(':').every((file) => !existsSync(file))
      ? `KUBECONFIG names no file that exists (${kubeconfig})`
      : false;
if (skip !== false) process.stdout.write(`# skipped: ${skip}\n`);

const namespace = process.env.KILN_TEST_KUBE_NAMESPACE ?? 'default';
const image = process.env.KILN_TEST_KUBE_IMAGE ?? 'registry.k8s.io/pause:3.9';
const suffix = Date.now().toString(36);

function render(): KubeObject[] {
  const name = `kiln-test-${suffix}`;
  const selector = { 'kiln.dev/endpoint': `test-${suffix}`, 'kiln.dev/revision': suffix };
  const labels = { 'app.kubernetes.io/managed-by': 'kiln', ...selector };
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
            terminationGracePeriodSeconds: 1,
            containers: [{ name: 'worker', image, ports: [{ name: 'http', containerPort: 9000 }] }],
          },
        },
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name, labels },
      spec: {
        clusterIP: 'None',
        selector,
        ports: [{ name: 'http', port: 9000, targetPort: 'http' }],
      },
    },
    {
      apiVersion: 'policy/v1',
      kind: 'PodDisruptionBudget',
      metadata: { name, labels },
      spec: { maxUnavailable: 1, selector: { matchLabels: selector } },
    },
  ];
}

async function waitFor(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 180_000;
  while (!(await check())) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

test(
  'on a real cluster: a revision is applied, its pod becomes a ready replica, and a stop removes it',
  { skip },
  async () => {
    const api = new KubeApi(defaultKubeConfig(), namespace);
    const backend = new KubernetesBackend({ api, render, removeAfterMs: 1_000 });
    await backend.init();
    const events: ReplicaEvent[] = [];
    const endpoint = `kiln-test-${suffix}`;
    const handle = backend.start(
      {
        replicaId: `${endpoint}-r0`,
        revision: `test@1#${suffix}`,
        slot: 0,
        endpoint,
        model: 'test',
        version: 1,
        format: 'onnx',
        files: [],
        schema: { inputs: [], outputs: [] },
        artifacts: { kind: 'local', root: '' },
        maxBodyBytes: 1_000_000,
        config: {},
        batching: null,
        defaultTimeoutMs: null,
      },
      (event) => events.push(event),
    );
    try {
      await waitFor(() => events.some((e) => e.kind === 'ready' || e.kind === 'failed'), 'ready');
      const failed = events.find((e) => e.kind === 'failed');
      assert.equal(failed, undefined, JSON.stringify(failed));
      assert.match(
        events[0]?.kind === 'listening' ? events[0].url : '',
        /^http:\/\/[\d.:[\]a-f]+:9000$/,
      );
      const listed = await api.list(deploymentsCollection, `kiln.dev/revision=${suffix}`);
      const deployment = listed.items[0] as KubeObject & {
        metadata: { managedFields?: { manager: string }[] };
        spec: { replicas: number };
      };
      assert.equal(deployment.spec.replicas, 1);
      assert.ok(deployment.metadata.managedFields?.some((f) => f.manager === 'kiln'));
    } finally {
      await handle.stop(10_000);
      await waitFor(
        async () =>
          (await api.list(deploymentsCollection, `kiln.dev/revision=${suffix}`)).items.length === 0,
        'the objects deleted',
      );
      await backend.close();
    }
  },
);
