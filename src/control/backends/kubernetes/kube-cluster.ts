// What every Kiln pod on Kubernetes shares: where Kiln runs (namespace, image, the control
// plane's URL), the artifact store's settings as env (a ConfigMap and a Secret the control
// plane and the workers both read), and the restricted pod security profile.

import type { KubeSchedulingOptions } from './kube-resources.ts';

export const defaultArtifactSettings = 'kiln-artifacts';

/** Where and how Kiln runs in the cluster: the same for every endpoint. */
export interface KubeClusterSettings {
  readonly namespace: string;
  /** The Kiln image (Dockerfile): one image for the control plane, gateways and workers. */
  readonly image: string;
  readonly imagePullPolicy?: 'Always' | 'IfNotPresent' | 'Never';
  /** The control plane's URL as pods reach it, e.g. http://kiln-control.kiln.svc:8080. */
  readonly controlUrl: string;
  /** ConfigMap with the artifact store's settings (env). Default kiln-artifacts; null: none. */
  readonly artifactConfigMap?: string | null;
  /** Secret with the artifact store's credentials (env). Default kiln-artifacts; null: none. */
  readonly artifactSecret?: string | null;
  /** KEDA's Prometheus server. Default http://prometheus-operated.monitoring.svc:9090. */
  readonly prometheusUrl?: string;
  /** preStop wait before SIGTERM, so gateways stop sending first. Default 5. */
  readonly drainSeconds?: number;
  readonly scheduling?: KubeSchedulingOptions;
}

/** Env from the artifact store's ConfigMap and Secret (the Secret may be absent: IAM roles). */
export function artifactEnvFrom(cluster: KubeClusterSettings): Record<string, unknown>[] {
  const configMap =
    cluster.artifactConfigMap === undefined ? defaultArtifactSettings : cluster.artifactConfigMap;
  const secret =
    cluster.artifactSecret === undefined ? defaultArtifactSettings : cluster.artifactSecret;
  return [
    ...(configMap === null ? [] : [{ configMapRef: { name: configMap } }]),
    ...(secret === null ? [] : [{ secretRef: { name: secret, optional: true } }]),
  ];
}

/** The restricted pod security profile; uid 1000 is the image's `node` user (Dockerfile). */
export const podSecurityContext = {
  runAsNonRoot: true,
  runAsUser: 1000,
  runAsGroup: 1000,
  fsGroup: 1000,
  seccompProfile: { type: 'RuntimeDefault' },
} as const;

export const containerSecurityContext = {
  allowPrivilegeEscalation: false,
  readOnlyRootFilesystem: true,
  capabilities: { drop: ['ALL'] },
} as const;
