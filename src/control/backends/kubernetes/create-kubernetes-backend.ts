// `kiln up --backend kubernetes`: the Kubernetes backend with the objects render.ts makes of
// each revision. The kubeconfig is found where kubectl finds it ($KUBECONFIG, ~/.kube/config,
// else the pod's service account); the namespace, the worker image and the URL pods reach the
// control plane at come from the flags or the environment the control plane's own manifest
// sets (render-platform.ts: KILN_KUBERNETES_NAMESPACE, KILN_WORKER_IMAGE, KILN_CONTROL_URL).

import type { KubeConfig } from '@kubernetes/client-node';
import type { Store } from '../../../store/store.ts';
import type { ReplicaLaunch } from '../backend.ts';
import { controlPort } from './render-platform.ts';
import { renderRevision } from './render.ts';
import { defaultKubeConfig, KubeApi } from './kube-api.ts';
import type { KubeObject } from './kube-object.ts';
import { KubernetesBackend } from './kubernetes-backend.ts';

export interface KubernetesBackendSettings {
  /** Default $KILN_KUBERNETES_NAMESPACE, else the kubeconfig context's, else 'default'. */
  readonly namespace?: string;
  /** The worker image; default $KILN_WORKER_IMAGE (one of the two is required). */
  readonly workerImage?: string;
  /** Default $KILN_CONTROL_URL, else http://kiln-control.<namespace>.svc:8080. */
  readonly controlUrl?: string;
  /** Tests: a kubeconfig of their own (default: the standard places). */
  readonly kubeConfig?: KubeConfig;
  readonly log?: (message: string) => void;
}

/** The backend, not yet initialised (init() checks the namespace and rights, then watches). */
export function createKubernetesBackend(
  settings: KubernetesBackendSettings,
  store: Pick<Store, 'getEndpoint'>,
  env: NodeJS.ProcessEnv = process.env,
): KubernetesBackend {
  const config = settings.kubeConfig ?? defaultKubeConfig();
  const namespace =
    settings.namespace ?? env.KILN_KUBERNETES_NAMESPACE ?? KubeApi.contextNamespace(config);
  const image = settings.workerImage ?? env.KILN_WORKER_IMAGE;
  if (image === undefined || image === '')
    throw new Error(
      'the kubernetes backend needs a worker image: --worker-image or $KILN_WORKER_IMAGE',
    );
  const controlUrl =
    settings.controlUrl ??
    env.KILN_CONTROL_URL ??
    `http://kiln-control.${namespace}.svc:${controlPort}`;
  const render = async (launch: ReplicaLaunch): Promise<readonly KubeObject[]> => {
    // Resources and the autoscaling policy are the endpoint's, not the worker's.
    const endpoint = await store.getEndpoint(launch.endpoint);
    const config = endpoint?.config;
    return renderRevision({
      revision: launch.revision,
      replicas: 1, // the backend applies the live slots' count
      worker: {
        endpoint: launch.endpoint,
        model: launch.model,
        version: launch.version,
        format: launch.format,
        files: launch.files,
        schema: launch.schema,
        maxBodyBytes: launch.maxBodyBytes,
        config: launch.config,
        batching: launch.batching,
        defaultTimeoutMs: launch.defaultTimeoutMs,
        ...(launch.llm === undefined || launch.llm === null ? {} : { llm: launch.llm }),
      },
      ...(config?.resources === undefined ? {} : { resources: config.resources }),
      ...(config?.autoscale === undefined ? {} : { autoscale: config.autoscale }),
      artifactBytes: launch.files.reduce((sum, file) => sum + file.size, 0),
      cluster: { namespace, image, controlUrl },
    });
  };
  return new KubernetesBackend({
    api: new KubeApi(config, namespace),
    render,
    ...(settings.log === undefined ? {} : { log: settings.log }),
  });
}
