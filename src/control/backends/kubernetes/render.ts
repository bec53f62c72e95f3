// An endpoint revision as Kubernetes objects (pure: no client, no clock, no I/O), for the
// Kubernetes backend to apply with server-side apply and for `kiln k8s render` to print:
//
//   Deployment  kiln-<endpoint>-<rev8>  the worker image; replicas = the endpoint's count,
//               or left to the autoscaler below; one pod = one replica of the revision
//   Service     kiln-<endpoint>-<rev8>  headless: its EndpointSlices list the ready pods'
//               IPs, which the control plane puts in the routing snapshot (gateways call pods)
//   PodDisruptionBudget                 at most one replica of the revision down by choice
//   HorizontalPodAutoscaler | ScaledObject   when the endpoint autoscales (kube-autoscaler.ts)
//
// The worker container. Its spec (what the local backend writes as a file: model, version,
// files with their digests, schema, serving config) is in KILN_WORKER_SPEC as JSON, without
// what is the pod's own (replica id = the pod's name, KILN_REPLICA_ID; the port; the folders).
// It fetches the version's blobs from the artifact store (whose settings come from the
// `kiln-artifacts` ConfigMap and Secret, like the control plane's) and verifies each digest
// before loading, as a local worker does; KILN_CONTROL_URL names the control plane.
//
// Lifecycle. Readiness is the worker's /v2/health/ready (ready once the model is loaded; not
// ready again once it drains), liveness /v2/health/live (answers from the start, also while
// loading); a startup probe gives a slow load (an LLM's weights) ten minutes, the local
// backend's start timeout. On deletion the preStop hook waits `drainSeconds` first, so the
// pod leaves the EndpointSlices and the gateways' next snapshot before it gets SIGTERM; the
// worker then drains (finishes every request it accepted) and exits 0. The grace period
// covers the wait, one request's timeout and a margin.

import { createHash } from 'node:crypto';
import type { AutoscalePolicy } from '../../../autoscale/autoscale-policy.ts';
import type { ResourceRequest } from '../../../placement/inventory.ts';
import type { WorkerSpec } from '../../../worker/worker-spec.ts';
import { renderAutoscaler } from './kube-autoscaler.ts';
import { labelValue, revisionObjectName, revisionShortId } from './kube-names.ts';
import type { KubeObject } from './kube-object.ts';
import { podScheduling } from './kube-resources.ts';
import {
  artifactEnvFrom,
  containerSecurityContext,
  podSecurityContext,
  type KubeClusterSettings,
} from './kube-cluster.ts';

export { renderControlPlane, renderGateway } from './render-platform.ts';
export type { KubeClusterSettings } from './kube-cluster.ts';

/** What a worker serves: the worker spec less what each pod has of its own. */
export type WorkerRevision = Pick<
  WorkerSpec,
  | 'endpoint'
  | 'model'
  | 'version'
  | 'format'
  | 'files'
  | 'schema'
  | 'maxBodyBytes'
  | 'config'
  | 'batching'
  | 'defaultTimeoutMs'
  | 'llm'
>;

export interface RevisionRenderInput {
  /** The revision (serving-defaults.ts `workerRevision`). */
  readonly revision: string;
  /** Replicas when the endpoint does not autoscale (else the autoscaler sets them). */
  readonly replicas: number;
  readonly worker: WorkerRevision;
  /** The endpoint's `config.resources`; absent: best effort (no requests). */
  readonly resources?: ResourceRequest;
  /** The endpoint's `config.autoscale`; absent: a fixed replica count. */
  readonly autoscale?: AutoscalePolicy;
  /** The version's size (memory defaults to twice it, as placement's does). */
  readonly artifactBytes: number;
  readonly cluster: KubeClusterSettings;
}

export const workerPort = 9000;
export const workerHome = '/var/lib/kiln';
export const fieldManager = 'kiln';
export const defaultPrometheusUrl = 'http://prometheus-operated.monitoring.svc:9090';
/** The local backend's start timeout (reconciler `startTimeoutMs`): 60 × 10 s. */
const startupProbeFailures = 60;

export const labelKeys = {
  name: 'app.kubernetes.io/name',
  managedBy: 'app.kubernetes.io/managed-by',
  endpoint: 'kiln.dev/endpoint',
  revision: 'kiln.dev/revision',
} as const;

/** The labels that select a revision's pods (also on every object of the revision). */
export function revisionLabels(endpoint: string, revision: string): Record<string, string> {
  return {
    [labelKeys.name]: 'kiln-worker',
    [labelKeys.managedBy]: 'kiln',
    [labelKeys.endpoint]: labelValue(endpoint),
    [labelKeys.revision]: revisionShortId(revision),
  };
}

function workerContainer(input: RevisionRenderInput, resources: unknown): Record<string, unknown> {
  const { worker, cluster } = input;
  const drainSeconds = cluster.drainSeconds ?? 5;
  const httpGet = (path: string): Record<string, unknown> => ({ path, port: 'http' });
  return {
    name: 'worker',
    image: cluster.image,
    imagePullPolicy: cluster.imagePullPolicy ?? 'IfNotPresent',
    command: ['node', 'dist/worker/main.js'],
    args: ['--spec-env', 'KILN_WORKER_SPEC'],
    ports: [{ name: 'http', containerPort: workerPort, protocol: 'TCP' }],
    env: [
      { name: 'KILN_REPLICA_ID', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
      { name: 'KILN_NODE', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
      { name: 'KILN_WORKER_PORT', value: String(workerPort) },
      { name: 'KILN_WORK_DIR', value: `${workerHome}/worker` },
      { name: 'KILN_CONTROL_URL', value: cluster.controlUrl },
      { name: 'KILN_WORKER_SPEC', value: JSON.stringify(worker) },
    ],
    envFrom: artifactEnvFrom(cluster),
    ...(resources === null ? {} : { resources }),
    readinessProbe: { httpGet: httpGet('/v2/health/ready'), periodSeconds: 2, failureThreshold: 2 },
    livenessProbe: {
      httpGet: httpGet('/v2/health/live'),
      periodSeconds: 10,
      timeoutSeconds: 5,
      failureThreshold: 3,
    },
    startupProbe: {
      httpGet: httpGet('/v2/health/live'),
      periodSeconds: 10,
      failureThreshold: startupProbeFailures,
    },
    lifecycle: { preStop: { exec: { command: ['sleep', String(drainSeconds)] } } },
    securityContext: containerSecurityContext,
    volumeMounts: [
      { name: 'work', mountPath: workerHome },
      { name: 'tmp', mountPath: '/tmp' },
    ],
  };
}

/** The revision's objects, in the order they are applied. */
export function renderRevision(input: RevisionRenderInput): KubeObject[] {
  const { worker, cluster } = input;
  const name = revisionObjectName(worker.endpoint, input.revision);
  const labels = revisionLabels(worker.endpoint, input.revision);
  const metadata = (): KubeObject['metadata'] => ({
    name,
    namespace: cluster.namespace,
    labels: { ...labels },
  });
  const scheduling = podScheduling(
    worker.endpoint,
    input.resources,
    input.artifactBytes,
    cluster.scheduling,
  );
  const drainSeconds = cluster.drainSeconds ?? 5;
  const requestSeconds = Math.ceil((worker.defaultTimeoutMs ?? 30_000) / 1000);
  const annotations = {
    'kiln.dev/endpoint-name': worker.endpoint,
    'kiln.dev/model': worker.model,
    'kiln.dev/model-version': String(worker.version),
    'kiln.dev/revision-sha256': createHash('sha256').update(input.revision).digest('hex'),
  };
  const podSpec: Record<string, unknown> = {
    automountServiceAccountToken: false,
    enableServiceLinks: false,
    terminationGracePeriodSeconds: drainSeconds + requestSeconds + 5,
    securityContext: podSecurityContext,
    containers: [workerContainer(input, scheduling.resources)],
    volumes: [
      { name: 'work', emptyDir: {} },
      { name: 'tmp', emptyDir: {} },
    ],
    ...(Object.keys(scheduling.nodeSelector).length === 0
      ? {}
      : { nodeSelector: scheduling.nodeSelector }),
    ...(scheduling.affinity === null ? {} : { affinity: scheduling.affinity }),
    ...(scheduling.tolerations.length === 0 ? {} : { tolerations: scheduling.tolerations }),
  };
  const deployment: KubeObject = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { ...metadata(), annotations },
    spec: {
      // Autoscaled: the HPA / ScaledObject owns the count (server-side apply leaves it alone).
      ...(input.autoscale === undefined ? { replicas: input.replicas } : {}),
      selector: { matchLabels: { ...labels } },
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } },
      template: {
        metadata: {
          labels: { ...labels },
          annotations: {
            'prometheus.io/scrape': 'true',
            'prometheus.io/port': String(workerPort),
            'prometheus.io/path': '/metrics',
          },
        },
        spec: podSpec,
      },
    },
  };
  const service: KubeObject = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: metadata(),
    spec: {
      clusterIP: 'None',
      selector: { ...labels },
      ports: [{ name: 'http', port: workerPort, targetPort: 'http', protocol: 'TCP' }],
    },
  };
  const budget: KubeObject = {
    apiVersion: 'policy/v1',
    kind: 'PodDisruptionBudget',
    metadata: metadata(),
    spec: { maxUnavailable: 1, selector: { matchLabels: { ...labels } } },
  };
  const objects = [deployment, service, budget];
  if (input.autoscale !== undefined) {
    objects.push(
      renderAutoscaler({
        name,
        namespace: cluster.namespace,
        endpoint: worker.endpoint,
        labels: { ...labels },
        policy: input.autoscale,
        cpuCores: input.resources === undefined ? 1 : (input.resources.cpu ?? 1),
        prometheusUrl: cluster.prometheusUrl ?? defaultPrometheusUrl,
      }),
    );
  }
  return objects;
}
