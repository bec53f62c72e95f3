// `kiln k8s render`: the real CLI against a started platform. What it prints is exactly what
// the renderer makes of the endpoint and version the API shows, valid for the Kubernetes
// schemas; an unknown endpoint, a request Kubernetes cannot carry and a bad namespace fail
// with their codes.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { loadAllYaml } from '@kubernetes/client-node';
import { kubeYaml } from '../../src/control/backends/kubernetes/kube-yaml.ts';
import { renderRevision } from '../../src/control/backends/kubernetes/render.ts';
import { revisionRenderInput } from '../../src/control/backends/kubernetes/revision-render-input.ts';
import type { Endpoint } from '../../src/cli/api-types.ts';
import type { ModelVersion } from '../../src/registry/types.ts';
import { call, registerFixture, testPlatform } from '../helpers/platform.ts';
import { tempDir } from '../helpers/temp-dir.ts';
import { validateKubeObject } from '../control/backends/kubernetes/validate-kube.ts';
import { Cli } from './cli-harness.ts';

test('kiln k8s render prints the endpoint revision the backend would apply', async () => {
  const inventory = join(await tempDir(), 'inventory.json');
  await writeFile(
    inventory,
    JSON.stringify({
      nodes: [
        {
          name: 'gpu-1',
          cpus: 8,
          memoryGiB: 32,
          accelerators: [{ index: 0, type: 'L4', memoryGiB: 24, sharing: 'mps' }],
        },
      ],
    }),
  );
  const platform = await testPlatform({ inventory });
  await registerFixture(platform.url, 'fraud', 'xgboost', 'xgb-binary.json');
  const cli = new Cli(platform.url, platform.home);
  await cli.ok(['deploy', 'fraud', '--endpoint', 'fraud', '--cpus', '0.5', '--replicas', '2']);

  const printed = await cli.ok([
    'k8s',
    'render',
    'fraud',
    '--namespace',
    'prod',
    '--image',
    'registry.example.com/kiln:1',
  ]);
  const endpoint = (await call(platform.url, 'GET', '/api/v1/endpoints/fraud')).body as Endpoint;
  const version = (await call(platform.url, 'GET', '/api/v1/models/fraud/versions/1'))
    .body as ModelVersion;
  const expected = renderRevision(
    revisionRenderInput(endpoint, version, {
      namespace: 'prod',
      image: 'registry.example.com/kiln:1',
      controlUrl: 'http://kiln-control.prod.svc:8080',
    }),
  );
  assert.equal(printed, kubeYaml(expected));
  const objects = loadAllYaml(printed) as { kind: string; metadata: { namespace: string } }[];
  assert.deepEqual(
    objects.map((o) => o.kind),
    ['Deployment', 'Service', 'PodDisruptionBudget'],
  );
  for (const object of objects) {
    validateKubeObject(JSON.parse(JSON.stringify(object)) as { apiVersion: string });
    assert.equal(object.metadata.namespace, 'prod');
  }
  assert.match(printed, /image: registry\.example\.com\/kiln:1\n/);
  assert.match(printed, /replicas: 2\n/);
  assert.match(printed, /cpu: 500m\n/);

  assert.match(
    await cli.fails(['k8s', 'render', 'nope'], 1),
    /endpoint nope does not exist \(KILN_ENDPOINT_NOT_FOUND\)/,
  );
  // Placed locally on a shared L4 (MPS), but Kubernetes has no resource for a memory share.
  await cli.ok([
    'deploy',
    'fraud',
    '--endpoint',
    'shared',
    '--gpu-type',
    'L4',
    '--gpu-memory-gib',
    '8',
  ]);
  assert.match(
    await cli.fails(['k8s', 'render', 'shared'], 1),
    /endpoint shared is unschedulable: 8 GiB of L4 memory: Kubernetes cannot share a device by memory .*\(KILN_UNSCHEDULABLE\)/,
  );
  assert.match(
    await cli.fails(['k8s', 'render', 'fraud', '--namespace', 'Not_A_Label'], 2),
    /invalid --namespace Not_A_Label.*\(KILN_USAGE\)/,
  );
});
