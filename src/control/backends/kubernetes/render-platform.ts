// Kiln itself on Kubernetes (deploy/kubernetes/ is this, rendered): the control plane (any
// number of replicas on one PostgreSQL: one leads, all serve the API), the gateways (their own
// Deployment, following a control plane's routing snapshot; pod IPs come from the workers'
// EndpointSlices), the control plane's RBAC for the objects it applies and watches, and the
// ConfigMap of artifact store settings the control plane and the workers share. Secrets are the
// operator's (docs/kubernetes.md): `kiln-store` (url), `kiln-artifacts` (AWS credentials),
// `kiln-gateway-token` (token: a gateway-role control token).

import type { KubeObject } from './kube-object.ts';
import {
  artifactEnvFrom,
  containerSecurityContext,
  podSecurityContext,
  type KubeClusterSettings,
} from './kube-cluster.ts';

export const controlPort = 8080;
export const gatewayPort = 8000;

export interface PlatformRenderInput extends KubeClusterSettings {
  /** Control-plane replicas (one leads; the others serve the API and take over). Default 2. */
  readonly controlReplicas?: number;
  /** Gateway replicas. Default 2. */
  readonly gatewayReplicas?: number;
  /** Gateway processes per gateway pod (`--processes`). Default 1: scale with pods. */
  readonly gatewayProcesses?: number;
  /** How the gateway is exposed. Default ClusterIP. */
  readonly gatewayServiceType?: 'ClusterIP' | 'NodePort' | 'LoadBalancer';
}

function labels(component: string): Record<string, string> {
  return { 'app.kubernetes.io/name': component, 'app.kubernetes.io/part-of': 'kiln' };
}

function volumes(): { volumes: unknown[]; volumeMounts: unknown[] } {
  return {
    volumes: [
      { name: 'state', emptyDir: {} },
      { name: 'tmp', emptyDir: {} },
    ],
    volumeMounts: [
      { name: 'state', mountPath: '/var/lib/kiln' },
      { name: 'tmp', mountPath: '/tmp' },
    ],
  };
}

function service(name: string, namespace: string, port: number, type: string): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace, labels: labels(name) },
    spec: {
      type,
      selector: labels(name),
      ports: [{ name: 'http', port, targetPort: 'http', protocol: 'TCP' }],
    },
  };
}

/** The gateway Deployment and its Service (`kiln-gateway`). */
export function renderGateway(input: PlatformRenderInput): KubeObject[] {
  const name = 'kiln-gateway';
  const { volumes: podVolumes, volumeMounts } = volumes();
  const deployment: KubeObject = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: input.namespace, labels: labels(name) },
    spec: {
      replicas: input.gatewayReplicas ?? 2,
      selector: { matchLabels: labels(name) },
      template: {
        metadata: { labels: labels(name) },
        spec: {
          automountServiceAccountToken: false,
          enableServiceLinks: false,
          terminationGracePeriodSeconds: 45,
          securityContext: podSecurityContext,
          containers: [
            {
              name: 'gateway',
              image: input.image,
              imagePullPolicy: input.imagePullPolicy ?? 'IfNotPresent',
              command: ['node', 'dist/gateway/main.js'],
              args: [
                '--control-url',
                input.controlUrl,
                '--host',
                '0.0.0.0',
                '--port',
                String(gatewayPort),
                '--state-dir',
                '/var/lib/kiln/gateway',
                '--processes',
                String(input.gatewayProcesses ?? 1),
              ],
              env: [
                {
                  name: 'KILN_CONTROL_TOKEN',
                  valueFrom: { secretKeyRef: { name: 'kiln-gateway-token', key: 'token' } },
                },
              ],
              ports: [{ name: 'http', containerPort: gatewayPort, protocol: 'TCP' }],
              resources: {
                requests: { cpu: '1', memory: '512Mi' },
                limits: { cpu: '2', memory: '1Gi' },
              },
              // Ready once it holds a routing snapshot (kept on its state dir while it runs).
              readinessProbe: {
                httpGet: { path: '/v2/health/ready', port: 'http' },
                periodSeconds: 2,
                failureThreshold: 2,
              },
              livenessProbe: {
                httpGet: { path: '/v2/health/live', port: 'http' },
                periodSeconds: 10,
                timeoutSeconds: 5,
                failureThreshold: 3,
              },
              // Out of the Service's endpoints before SIGTERM; then it finishes what it holds.
              lifecycle: {
                preStop: { exec: { command: ['sleep', String(input.drainSeconds ?? 5)] } },
              },
              securityContext: containerSecurityContext,
              volumeMounts,
            },
          ],
          volumes: podVolumes,
        },
      },
    },
  };
  return [
    deployment,
    service(name, input.namespace, gatewayPort, input.gatewayServiceType ?? 'ClusterIP'),
  ];
}

/** The control-plane Deployment and its Service (`kiln-control`). */
export function renderControlPlane(input: PlatformRenderInput): KubeObject[] {
  const name = 'kiln-control';
  const { volumes: podVolumes, volumeMounts } = volumes();
  const deployment: KubeObject = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: input.namespace, labels: labels(name) },
    spec: {
      replicas: input.controlReplicas ?? 2,
      selector: { matchLabels: labels(name) },
      template: {
        metadata: { labels: labels(name) },
        spec: {
          serviceAccountName: name,
          enableServiceLinks: false,
          terminationGracePeriodSeconds: 30,
          securityContext: podSecurityContext,
          containers: [
            {
              name: 'control',
              image: input.image,
              imagePullPolicy: input.imagePullPolicy ?? 'IfNotPresent',
              command: ['node', 'bin/kiln.js'],
              args: [
                'up',
                '--host',
                '0.0.0.0',
                '--port',
                String(controlPort),
                '--backend',
                'kubernetes',
              ],
              env: [
                { name: 'KILN_HOME', value: '/var/lib/kiln/home' },
                {
                  name: 'KILN_STORE_URL',
                  valueFrom: { secretKeyRef: { name: 'kiln-store', key: 'url' } },
                },
                {
                  name: 'KILN_KUBERNETES_NAMESPACE',
                  valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } },
                },
                { name: 'KILN_WORKER_IMAGE', value: input.image },
                { name: 'KILN_CONTROL_URL', value: input.controlUrl },
              ],
              envFrom: artifactEnvFrom(input),
              ports: [{ name: 'http', containerPort: controlPort, protocol: 'TCP' }],
              resources: {
                requests: { cpu: '500m', memory: '512Mi' },
                limits: { cpu: '2', memory: '1Gi' },
              },
              readinessProbe: {
                httpGet: { path: '/api/v1/health', port: 'http' },
                periodSeconds: 5,
                failureThreshold: 2,
              },
              livenessProbe: {
                httpGet: { path: '/api/v1/health', port: 'http' },
                periodSeconds: 10,
                timeoutSeconds: 5,
                failureThreshold: 6,
              },
              securityContext: containerSecurityContext,
              volumeMounts,
            },
          ],
          volumes: podVolumes,
        },
      },
    },
  };
  return [deployment, service(name, input.namespace, controlPort, 'ClusterIP')];
}

/** The control plane's identity and what it may do: apply and watch the workers' objects. */
export function renderControlPlaneRbac(namespace: string): KubeObject[] {
  const name = 'kiln-control';
  const write = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'];
  const read = ['get', 'list', 'watch'];
  return [
    {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name, namespace, labels: labels(name) },
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name, namespace, labels: labels(name) },
      rules: [
        { apiGroups: ['apps'], resources: ['deployments'], verbs: write },
        { apiGroups: [''], resources: ['services'], verbs: write },
        { apiGroups: ['policy'], resources: ['poddisruptionbudgets'], verbs: write },
        { apiGroups: ['autoscaling'], resources: ['horizontalpodautoscalers'], verbs: write },
        { apiGroups: ['keda.sh'], resources: ['scaledobjects'], verbs: write },
        // Status read back: ready replicas, and why a pod is not (image pull, unschedulable).
        { apiGroups: [''], resources: ['pods', 'events'], verbs: read },
        { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: read },
        { apiGroups: ['apps'], resources: ['replicasets'], verbs: read },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name, namespace, labels: labels(name) },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
      subjects: [{ kind: 'ServiceAccount', name, namespace }],
    },
    // Nodes are cluster-scoped: their resources and labels make placement's inventory.
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: `${namespace}-kiln-control-nodes`, labels: labels(name) },
      rules: [{ apiGroups: [''], resources: ['nodes'], verbs: read }],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: `${namespace}-kiln-control-nodes`, labels: labels(name) },
      roleRef: {
        apiGroup: 'rbac.authorization.k8s.io',
        kind: 'ClusterRole',
        name: `${namespace}-kiln-control-nodes`,
      },
      subjects: [{ kind: 'ServiceAccount', name, namespace }],
    },
  ];
}

/** deploy/kubernetes/: every file and its objects, in the order they are applied. */
export function renderInstall(input: PlatformRenderInput): Readonly<Record<string, KubeObject[]>> {
  return {
    '00-namespace.yaml': [
      {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name: input.namespace, labels: { 'app.kubernetes.io/part-of': 'kiln' } },
      },
    ],
    '10-rbac.yaml': renderControlPlaneRbac(input.namespace),
    '20-artifacts.yaml': [
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: {
          name: 'kiln-artifacts',
          namespace: input.namespace,
          labels: { 'app.kubernetes.io/part-of': 'kiln' },
        },
        // Edit: the bucket and prefix blobs live under; endpoint only for non-AWS S3.
        data: {
          KILN_S3_BUCKET: 'kiln-artifacts',
          KILN_S3_PREFIX: 'prod/',
          AWS_REGION: 'us-east-1',
          AWS_ENDPOINT_URL_S3: '',
        },
      },
    ],
    '30-control-plane.yaml': renderControlPlane(input),
    '40-gateway.yaml': renderGateway(input),
  };
}
