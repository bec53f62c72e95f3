// renderRevision: golden manifests per kind of endpoint, schema validity of every object it
// can produce, names and labels of the shared contract, resources, scheduling and the choice
// of autoscaler. Regenerate the goldens with KILN_UPDATE_GOLDEN=1 (then read the diff).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { loadAllYaml } from '@kubernetes/client-node';
import { isKilnError } from '../../../../src/core/errors.ts';
import type { KubeObject } from '../../../../src/control/backends/kubernetes/kube-object.ts';
import { kubeYaml } from '../../../../src/control/backends/kubernetes/kube-yaml.ts';
import {
  kubeName,
  labelValue,
  revisionShortId,
} from '../../../../src/control/backends/kubernetes/kube-names.ts';
import {
  renderRevision,
  type RevisionRenderInput,
} from '../../../../src/control/backends/kubernetes/render.ts';
import { workerRevision } from '../../../../src/control/serving-defaults.ts';
import type { ResourceRequest } from '../../../../src/placement/inventory.ts';
import { scaleSignals } from '../../../../src/autoscale/autoscale-policy.ts';
import {
  goldenSamples,
  inputOf,
  llmSample,
  onnxSample,
  policy,
  treeSample,
} from './render-samples.ts';
import { validateKubeObject } from './validate-kube.ts';

const goldenDir = new URL('../../../../fixtures/golden-k8s/', import.meta.url).pathname;
const update = process.env.KILN_UPDATE_GOLDEN === '1';

type Json = Record<string, unknown>;
const at = (value: unknown, ...path: (string | number)[]): unknown =>
  path.reduce<unknown>(
    (v, key) => (v as Record<string | number, unknown> | undefined)?.[key],
    value,
  );
const byKind = (objects: KubeObject[], kind: string): KubeObject => {
  const found = objects.find((o) => o.kind === kind);
  assert.ok(found, `no ${kind} among ${objects.map((o) => o.kind).join(', ')}`);
  return found;
};
const container = (objects: KubeObject[]): Json =>
  at(byKind(objects, 'Deployment'), 'spec', 'template', 'spec', 'containers', 0) as Json;
const podSpec = (objects: KubeObject[]): Json =>
  at(byKind(objects, 'Deployment'), 'spec', 'template', 'spec') as Json;

/** Valid for the schemas, and nothing lost through the YAML (no field a model does not know). */
function checkObjects(objects: KubeObject[]): void {
  for (const object of objects) validateKubeObject(object);
  const back = loadAllYaml(kubeYaml(objects)).map((o) => JSON.parse(JSON.stringify(o)) as unknown);
  assert.deepEqual(back, JSON.parse(JSON.stringify(objects)));
}

function withResources(
  resources: ResourceRequest,
  input = inputOf(treeSample),
): RevisionRenderInput {
  return { ...input, resources };
}

for (const [name, sample] of Object.entries(goldenSamples)) {
  test(`golden manifest: ${name}`, () => {
    const objects = renderRevision(inputOf(sample));
    checkObjects(objects);
    const yaml = kubeYaml(objects);
    const file = `${goldenDir}${name}.yaml`;
    if (update || !existsSync(file)) {
      mkdirSync(goldenDir, { recursive: true });
      writeFileSync(file, yaml);
      if (!update) assert.fail(`wrote the missing golden ${file}: check it in and rerun`);
    }
    assert.equal(
      yaml,
      readFileSync(file, 'utf8'),
      `${file} differs (KILN_UPDATE_GOLDEN=1 rewrites it)`,
    );
  });
}

test('objects carry the contract names, labels and selectors', () => {
  const input = inputOf(treeSample);
  const revision = workerRevision(treeSample.endpoint);
  assert.equal(input.revision, revision);
  const rev8 = revisionShortId(revision);
  assert.match(rev8, /^[0-9a-f]{8}$/);
  const objects = renderRevision(input);
  assert.deepEqual(
    objects.map((o) => o.kind),
    ['Deployment', 'Service', 'PodDisruptionBudget'],
  );
  const labels = {
    'app.kubernetes.io/name': 'kiln-worker',
    'app.kubernetes.io/managed-by': 'kiln',
    'kiln.dev/endpoint': 'fraud',
    'kiln.dev/revision': rev8,
  };
  for (const o of objects) {
    assert.equal(o.metadata.name, `kiln-fraud-${rev8}`);
    assert.equal(o.metadata.namespace, 'kiln');
    assert.deepEqual(o.metadata.labels, labels);
  }
  const deployment = byKind(objects, 'Deployment');
  assert.deepEqual(at(deployment, 'spec', 'selector', 'matchLabels'), labels);
  assert.deepEqual(at(deployment, 'spec', 'template', 'metadata', 'labels'), labels);
  assert.equal(at(deployment, 'spec', 'replicas'), 2);
  assert.deepEqual(at(byKind(objects, 'Service'), 'spec', 'selector'), labels);
  assert.equal(at(byKind(objects, 'Service'), 'spec', 'clusterIP'), 'None');
  assert.deepEqual(
    at(byKind(objects, 'PodDisruptionBudget'), 'spec', 'selector', 'matchLabels'),
    labels,
  );
  // A new config is a new revision: other names, so both run side by side during a rollout.
  const changed = renderRevision(
    inputOf({ ...treeSample, endpoint: { ...treeSample.endpoint, version: 4 } }),
  );
  assert.notEqual(changed[0]!.metadata.name, objects[0]!.metadata.name);
});

test('the worker container: spec in the environment, probes on its routes, drain before SIGTERM', () => {
  const objects = renderRevision(inputOf(onnxSample));
  const c = container(objects);
  const env = c.env as { name: string; value?: string }[];
  const spec = JSON.parse(env.find((e) => e.name === 'KILN_WORKER_SPEC')!.value!) as Json;
  assert.equal(spec.endpoint, 'iris.onnx');
  assert.equal(spec.model, 'iris');
  assert.equal(spec.version, 7);
  assert.equal(spec.format, 'onnx');
  assert.deepEqual(spec.files, onnxSample.version.files);
  assert.deepEqual(spec.batching, { maxBatchSize: 16, maxDelayMicros: 500, maxQueue: 128 });
  assert.equal(spec.defaultTimeoutMs, 2000);
  assert.equal(
    env.find((e) => e.name === 'KILN_CONTROL_URL')!.value,
    'http://kiln-control.kiln.svc:8080',
  );
  assert.deepEqual(c.envFrom, [
    { configMapRef: { name: 'kiln-artifacts' } },
    { secretRef: { name: 'kiln-artifacts', optional: true } },
  ]);
  assert.equal(at(c, 'readinessProbe', 'httpGet', 'path'), '/v2/health/ready');
  assert.equal(at(c, 'livenessProbe', 'httpGet', 'path'), '/v2/health/live');
  assert.deepEqual(at(c, 'lifecycle', 'preStop', 'exec', 'command'), ['sleep', '5']);
  // preStop 5 s + the request timeout 2 s + 5 s margin.
  assert.equal(podSpec(objects).terminationGracePeriodSeconds, 12);
  assert.equal(at(podSpec(objects), 'securityContext', 'runAsNonRoot'), true);
});

test('cpu and memory: requests equal limits, from the resources with placement defaults', () => {
  const tree = container(renderRevision(inputOf(treeSample)));
  assert.deepEqual(tree.resources, {
    requests: { cpu: '500m', memory: '1024Mi' },
    limits: { cpu: '500m', memory: '1024Mi' },
  });
  // memoryGiB absent: twice the model (4 096 000 B → 0.25 GiB floor).
  const onnx = container(renderRevision(inputOf(onnxSample)));
  assert.deepEqual(at(onnx, 'requests'), undefined);
  assert.deepEqual(at(onnx, 'resources', 'requests'), { cpu: '2', memory: '256Mi' });
  // No resources: best effort, nothing asked.
  const { resources: _none, ...withoutResources } = inputOf(treeSample);
  const bare = renderRevision(withoutResources);
  assert.equal(container(bare).resources, undefined);
  checkObjects(bare);
});

test('GPUs and MIG instances as the device plugin names them', () => {
  const llm = renderRevision(inputOf(llmSample));
  assert.equal(at(container(llm), 'resources', 'limits', 'nvidia.com/gpu'), '1');
  assert.equal(at(podSpec(llm), 'nodeSelector', 'kiln.dev/accelerator-type'), 'A100-80GB');
  assert.ok(
    (podSpec(llm).tolerations as Json[]).some(
      (t) => t.key === 'nvidia.com/gpu' && t.operator === 'Exists',
    ),
  );
  const cases: [ResourceRequest['accelerator'], string][] = [
    [{ count: 4 }, 'nvidia.com/gpu'],
    [{ type: 'A100-80GB', mig: '3g.40gb' }, 'nvidia.com/mig-3g.40gb'],
    [{ mig: '1g.5gb' }, 'nvidia.com/mig-1g.5gb'],
    // A memory share: the smallest MIG instance of the type that holds it.
    [{ type: 'A100-80GB', memoryGiB: 15 }, 'nvidia.com/mig-1g.20gb'],
    [{ type: 'H100-80GB', memoryGiB: 10 }, 'nvidia.com/mig-1g.10gb'],
  ];
  for (const [accelerator, resource] of cases) {
    const objects = renderRevision(withResources({ accelerator: accelerator! }));
    checkObjects(objects);
    const limits = at(container(objects), 'resources', 'limits') as Json;
    const requests = at(container(objects), 'resources', 'requests') as Json;
    assert.ok(resource in limits, `${JSON.stringify(accelerator)} → ${JSON.stringify(limits)}`);
    assert.equal(limits[resource], requests[resource]);
    assert.equal(limits[resource], String(accelerator!.count ?? 1));
  }
});

test('an accelerator request no declared resource name carries is refused, naming why', () => {
  const refused = (resources: ResourceRequest, declared?: readonly string[]): string => {
    const input = withResources(resources);
    const settings =
      declared === undefined
        ? input.cluster
        : { ...input.cluster, scheduling: { acceleratorResources: declared } };
    try {
      renderRevision({ ...input, cluster: settings });
    } catch (error) {
      assert.ok(isKilnError(error), String(error));
      assert.equal(error.code, 'KILN_UNSCHEDULABLE');
      assert.equal(error.status, 409);
      return error.message;
    }
    return assert.fail(`rendered ${JSON.stringify(resources)}`);
  };
  assert.match(
    refused({ accelerator: { type: 'A100-80GB', memoryGiB: 100 } }),
    /no declared MIG resource holds 100 GiB/,
  );
  assert.match(
    refused({ accelerator: { type: 'L4', memoryGiB: 8 } }),
    /cannot share a device by memory/,
  );
  assert.match(
    refused({ accelerator: { type: 'A100-80GB', mig: '1g.5gb' } }),
    /no A100-80GB has a MIG profile 1g\.5gb/,
  );
  assert.match(
    refused({ accelerator: { mig: '1g.10gb' } }, ['nvidia.com/gpu']),
    /MIG profile 1g\.10gb needs nvidia\.com\/mig-1g\.10gb; declared accelerator resources: nvidia\.com\/gpu/,
  );
  assert.match(
    refused({ accelerator: { count: 2 } }, []),
    /need nvidia\.com\/gpu; declared accelerator resources: none/,
  );
  // Only the declared instances are chosen from: 15 GiB on A100-80GB with only 3g.40gb declared.
  const objects = renderRevision({
    ...withResources({ accelerator: { type: 'A100-80GB', memoryGiB: 15 } }),
    cluster: {
      ...inputOf(treeSample).cluster,
      scheduling: { acceleratorResources: ['nvidia.com/mig-3g.40gb'] },
    },
  });
  assert.equal(at(container(objects), 'resources', 'limits', 'nvidia.com/mig-3g.40gb'), '1');
});

test('spot, on-demand and any: node selector, affinity and the spot taint', () => {
  const spot = podSpec(renderRevision(withResources({ capacity: 'spot' })));
  assert.deepEqual(spot.nodeSelector, { 'kiln.dev/capacity': 'spot' });
  assert.deepEqual(spot.tolerations, [
    { key: 'kiln.dev/capacity', operator: 'Equal', value: 'spot', effect: 'NoSchedule' },
  ]);
  const onDemand = podSpec(renderRevision(withResources({ capacity: 'on-demand' })));
  assert.equal(onDemand.tolerations, undefined);
  assert.deepEqual(
    at(
      onDemand,
      'affinity',
      'nodeAffinity',
      'requiredDuringSchedulingIgnoredDuringExecution',
      'nodeSelectorTerms',
      0,
      'matchExpressions',
    ),
    [{ key: 'kiln.dev/capacity', operator: 'NotIn', values: ['spot'] }],
  );
  const any = podSpec(renderRevision(withResources({ cpu: 1 })));
  assert.equal(
    at(
      any,
      'affinity',
      'nodeAffinity',
      'preferredDuringSchedulingIgnoredDuringExecution',
      0,
      'weight',
    ),
    100,
  );
  assert.equal((any.tolerations as Json[]).length, 1);
  const labelled = podSpec(
    renderRevision({
      ...withResources({ capacity: 'spot' }),
      cluster: {
        ...inputOf(treeSample).cluster,
        scheduling: { capacityLabel: 'cloud.example.com/lifecycle' },
      },
    }),
  );
  assert.deepEqual(labelled.nodeSelector, { 'cloud.example.com/lifecycle': 'spot' });
});

test('autoscaling: HPA where it can express the signal, KEDA otherwise and for scale to zero', () => {
  for (const signal of scaleSignals) {
    for (const minReplicas of [0, 1]) {
      const target = signal === 'cpu' || signal === 'accelerator' ? 0.6 : 3;
      const autoscale = policy({
        minReplicas,
        maxReplicas: 5,
        signal,
        ...(signal === 'slo' ? { slo: { latencyMs: 200 } } : { target }),
        ...(signal === 'custom' ? { customMetric: 'tokens.per-second' } : {}),
      });
      const objects = renderRevision({ ...inputOf(onnxSample), autoscale });
      checkObjects(objects);
      const deployment = byKind(objects, 'Deployment');
      assert.equal(at(deployment, 'spec', 'replicas'), undefined, 'the autoscaler owns the count');
      const hpa = minReplicas >= 1 && ['cpu', 'concurrency', 'qps', 'slo'].includes(signal);
      const scaler = objects[3]!;
      assert.equal(objects.length, 4);
      assert.equal(
        scaler.kind,
        hpa ? 'HorizontalPodAutoscaler' : 'ScaledObject',
        `${signal} min ${minReplicas}`,
      );
      assert.equal(scaler.metadata.name, deployment.metadata.name);
      assert.deepEqual(at(scaler, 'spec', 'scaleTargetRef'), {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        name: deployment.metadata.name,
      });
      if (hpa) {
        assert.equal(at(scaler, 'spec', 'minReplicas'), minReplicas);
        assert.equal(at(scaler, 'spec', 'maxReplicas'), 5);
        assert.equal(at(scaler, 'spec', 'behavior', 'scaleDown', 'stabilizationWindowSeconds'), 30);
      } else {
        assert.equal(at(scaler, 'spec', 'minReplicaCount'), minReplicas);
        assert.equal(at(scaler, 'spec', 'maxReplicaCount'), 5);
        const triggers = at(scaler, 'spec', 'triggers') as Json[];
        // At zero no worker reports: something the gateways measure must wake it.
        if (minReplicas === 0)
          assert.ok(
            triggers.some((t) => String(at(t, 'metadata', 'query')).includes('kiln_gateway_')),
            JSON.stringify(triggers),
          );
      }
    }
  }
  const atZero = renderRevision({
    ...inputOf(onnxSample),
    autoscale: policy({ minReplicas: 0, maxReplicas: 3, signal: 'queue-depth', target: 4 }),
  })[3]!;
  assert.equal(at(atZero, 'spec', 'cooldownPeriod'), 300);
  assert.deepEqual(at(atZero, 'spec', 'triggers', 1), {
    type: 'prometheus',
    name: 'wake',
    metricType: 'AverageValue',
    metadata: {
      serverAddress: 'http://prometheus-operated.monitoring.svc:9090',
      query:
        '(sum(kiln_gateway_inflight_requests{namespace="kiln",endpoint="iris.onnx"}) or vector(0)) + (sum(kiln_gateway_activator_held{namespace="kiln",endpoint="iris.onnx"}) or vector(0))',
      threshold: '1000000000',
      activationThreshold: '0',
    },
  });
  const cpu = renderRevision({
    ...inputOf(onnxSample),
    autoscale: policy({ minReplicas: 1, maxReplicas: 3, signal: 'cpu', target: 0.7 }),
  })[3]!;
  // 0.7 of the 2 cores each replica requests.
  assert.equal(at(cpu, 'spec', 'metrics', 0, 'resource', 'target', 'averageValue'), '1400m');
  const custom = renderRevision({
    ...inputOf(onnxSample),
    autoscale: policy({
      minReplicas: 1,
      maxReplicas: 3,
      signal: 'custom',
      customMetric: 'tokens.per-second',
      target: 50,
    }),
  })[3]!;
  assert.match(
    String(at(custom, 'spec', 'triggers', 0, 'metadata', 'query')),
    /^sum\(tokens_per_second\{namespace="kiln",pod=~"kiln-iris-onnx-/,
  );
  assert.equal(at(custom, 'spec', 'triggers', 0, 'metadata', 'threshold'), '50');
  // No queueing model on Kubernetes: slo scales as one request in flight per replica.
  const slo = renderRevision({
    ...inputOf(onnxSample),
    autoscale: policy({ minReplicas: 1, maxReplicas: 3, signal: 'slo', slo: { latencyMs: 200 } }),
  })[3]!;
  assert.deepEqual(at(slo, 'spec', 'metrics', 0, 'pods'), {
    metric: { name: 'kiln_worker_inflight_requests' },
    target: { type: 'AverageValue', averageValue: '1' },
  });
});

test('names too long or not DNS-safe are shortened deterministically and stay distinct', () => {
  const long = 'a'.repeat(40) + '.model_' + 'b'.repeat(16); // 63: the longest endpoint name
  assert.equal(long.length, 63);
  const name = kubeName('kiln', long, '0123abcd');
  assert.ok(name.length <= 63, name);
  assert.match(name, /^[a-z]([-a-z0-9]*[a-z0-9])?$/);
  assert.equal(name, kubeName('kiln', long, '0123abcd'));
  assert.notEqual(kubeName('kiln', 'a.b', 'x'), kubeName('kiln', 'a-b', 'x'));
  assert.equal(kubeName('kiln', 'a-b', 'x'), 'kiln-a-b-x');
  assert.match(labelValue('trailing-'), /^[a-zA-Z0-9]([-_.a-zA-Z0-9]*[a-zA-Z0-9])?$/);
  assert.equal(labelValue('iris.onnx'), 'iris.onnx');
  const objects = renderRevision(
    inputOf({ ...treeSample, endpoint: { ...treeSample.endpoint, name: long } }),
  );
  checkObjects(objects);
  for (const o of objects) {
    assert.ok(o.metadata.name.length <= 63);
    assert.equal(o.metadata.labels!['kiln.dev/endpoint'], long);
  }
  const dotted = renderRevision(inputOf(onnxSample))[0]!;
  assert.match(dotted.metadata.name, /^kiln-iris-onnx-[0-9a-f]{6}-[0-9a-f]{8}$/);
  assert.equal(dotted.metadata.annotations!['kiln.dev/endpoint-name'], 'iris.onnx');
});
