// The render input of an endpoint's stable revision, from what the API shows of the endpoint
// and its version: the worker fields exactly as the reconciler gives a local worker (serving
// settings with their defaults, serving-defaults.ts), the revision id, resources and policy.
// Shared by `kiln k8s render` and the golden manifests' tests, so both render what the
// Kubernetes backend would apply.

import type { ModelSchema } from '../../../core/tensor.ts';
import type { ModelFormat } from '../../../registry/formats/artifact-file.ts';
import type { ManifestFile } from '../../../registry/manifest.ts';
import type { EndpointConfig } from '../../../store/serving-records.ts';
import { defaultMaxBodyBytes } from '../../endpoint-route.ts';
import { workerRevision, workerServingSettings } from '../../serving-defaults.ts';
import type { KubeClusterSettings } from './kube-cluster.ts';
import type { RevisionRenderInput } from './render.ts';

export interface RenderedEndpoint {
  readonly name: string;
  readonly model: string;
  readonly version: number;
  readonly replicas: number;
  readonly config: EndpointConfig;
}

export interface RenderedVersion {
  readonly format: ModelFormat;
  readonly files: readonly ManifestFile[];
  readonly schema: ModelSchema | null;
  readonly sizeBytes: number;
}

export function revisionRenderInput(
  endpoint: RenderedEndpoint,
  version: RenderedVersion,
  cluster: KubeClusterSettings,
): RevisionRenderInput {
  const serving = workerServingSettings(version.format, endpoint.config);
  return {
    revision: workerRevision(endpoint),
    replicas: endpoint.replicas,
    worker: {
      endpoint: endpoint.name,
      model: endpoint.model,
      version: endpoint.version,
      format: version.format,
      files: version.files,
      schema: version.schema,
      maxBodyBytes: serving.maxBodyBytes ?? defaultMaxBodyBytes,
      config: serving.config,
      batching: serving.batching,
      defaultTimeoutMs: serving.defaultTimeoutMs,
      ...(serving.llm === null ? {} : { llm: serving.llm }),
    },
    ...(endpoint.config.resources === undefined ? {} : { resources: endpoint.config.resources }),
    ...(endpoint.config.autoscale === undefined ? {} : { autoscale: endpoint.config.autoscale }),
    artifactBytes: version.sizeBytes,
    cluster,
  };
}
