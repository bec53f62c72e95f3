// The endpoints the golden manifests are rendered from (fixtures/golden-k8s/): one per kind of
// model, as the API shows them (endpoint + version), through the same input builder as
// `kiln k8s render`.

import {
  resolveAutoscalePolicy,
  type AutoscalePolicy,
} from '../../../../src/autoscale/autoscale-policy.ts';
import type { KubeClusterSettings } from '../../../../src/control/backends/kubernetes/kube-cluster.ts';
import {
  revisionRenderInput,
  type RenderedEndpoint,
  type RenderedVersion,
} from '../../../../src/control/backends/kubernetes/revision-render-input.ts';
import type { RevisionRenderInput } from '../../../../src/control/backends/kubernetes/render.ts';
import { completeEndpointConfig } from '../../../../src/control/serving-defaults.ts';

export const cluster: KubeClusterSettings = {
  namespace: 'kiln',
  image: 'registry.example.com/kiln:0.1.0',
  controlUrl: 'http://kiln-control.kiln.svc:8080',
};

export function policy(input: unknown): AutoscalePolicy {
  const check = resolveAutoscalePolicy(input);
  if (!check.ok) throw new Error(check.reason);
  return check.policy;
}

const digest = (c: string): string => c.repeat(64);

export interface Sample {
  readonly endpoint: RenderedEndpoint;
  readonly version: RenderedVersion;
}

/** An xgboost tree model: fixed replicas, CPU and memory, on-demand nodes only. */
export const treeSample: Sample = {
  endpoint: {
    name: 'fraud',
    model: 'fraud-xgb',
    version: 3,
    replicas: 2,
    config: completeEndpointConfig({
      resources: { cpu: 0.5, memoryGiB: 1, capacity: 'on-demand' },
    }),
  },
  version: {
    format: 'xgboost',
    files: [{ path: 'model.json', size: 182_331, sha256: digest('a') }],
    schema: {
      inputs: [{ name: 'input', datatype: 'FP32', shape: [-1, 30] }],
      outputs: [{ name: 'output', datatype: 'FP32', shape: [-1] }],
    },
    sizeBytes: 182_331,
  },
};

/** An ONNX model with dynamic batching, on spot nodes, scaled by KEDA on queue depth. */
export const onnxSample: Sample = {
  endpoint: {
    name: 'iris.onnx',
    model: 'iris',
    version: 7,
    replicas: 1,
    config: completeEndpointConfig(
      {
        batching: { maxBatchSize: 16, maxDelayMicros: 500, maxQueue: 128 },
        timeoutMs: 2000,
        resources: { cpu: 2, capacity: 'spot' },
      },
      policy({ minReplicas: 1, maxReplicas: 8, signal: 'queue-depth', target: 4 }),
    ),
  },
  version: {
    format: 'onnx',
    files: [{ path: 'model.onnx', size: 4_096_000, sha256: digest('b') }],
    schema: {
      inputs: [{ name: 'float_input', datatype: 'FP32', shape: [-1, 4] }],
      outputs: [{ name: 'label', datatype: 'INT64', shape: [-1] }],
    },
    sizeBytes: 4_096_000,
  },
};

/** An LLM on a whole A100, scaled by an HPA on requests in flight. */
export const llmSample: Sample = {
  endpoint: {
    name: 'chat',
    model: 'tiny-llama',
    version: 1,
    replicas: 1,
    config: completeEndpointConfig(
      {
        resources: {
          cpu: 4,
          memoryGiB: 16,
          accelerator: { type: 'A100-80GB', count: 1 },
          capacity: 'any',
        },
      },
      policy({ minReplicas: 1, maxReplicas: 4, signal: 'concurrency', target: 8 }),
    ),
  },
  version: {
    format: 'hf-llm',
    files: [
      { path: 'config.json', size: 612, sha256: digest('c') },
      { path: 'model.safetensors', size: 2_200_000_000, sha256: digest('d') },
      { path: 'tokenizer.json', size: 1_842_000, sha256: digest('e') },
    ],
    schema: null,
    sizeBytes: 2_201_842_612,
  },
};

export const goldenSamples: Readonly<Record<string, Sample>> = {
  'tree-xgboost': treeSample,
  'onnx-batching': onnxSample,
  'llm-gpu': llmSample,
};

export function inputOf(
  sample: Sample,
  settings: KubeClusterSettings = cluster,
): RevisionRenderInput {
  return revisionRenderInput(sample.endpoint, sample.version, settings);
}
