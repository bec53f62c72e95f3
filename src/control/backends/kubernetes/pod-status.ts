// What the backend reads from watched objects, as pure functions: why a pod is not serving
// (in Kubernetes' own words: ImagePullBackOff, CrashLoopBackOff, OOMKilled, Unschedulable with
// the scheduler's message), why a Deployment makes no pods, and where a ready pod listens
// (its EndpointSlice address, which is ready only once the pod's readiness probe passes).

import type { KubeItem } from './kube-api.ts';

type ContainerState = {
  waiting?: { reason?: string; message?: string };
  terminated?: { reason?: string; message?: string; exitCode?: number };
};
type ContainerStatus = {
  name?: string;
  state?: ContainerState;
  lastState?: ContainerState;
  restartCount?: number;
};
type Condition = { type?: string; status?: string; reason?: string; message?: string };
type PodStatus = {
  phase?: string;
  reason?: string;
  message?: string;
  conditions?: Condition[];
  containerStatuses?: ContainerStatus[];
  initContainerStatuses?: ContainerStatus[];
};

/** Waiting reasons that mean the container will not run as things are. */
const stuckReasons = new Set([
  'ErrImagePull',
  'ImagePullBackOff',
  'InvalidImageName',
  'ErrImageNeverPull',
  'CrashLoopBackOff',
  'CreateContainerConfigError',
  'CreateContainerError',
  'RunContainerError',
]);

function lastExit(status: ContainerStatus): string | null {
  const terminated = status.lastState?.terminated ?? status.state?.terminated;
  if (terminated === undefined) return null;
  const reason = terminated.reason ?? 'Error';
  return terminated.exitCode === undefined ? reason : `${reason}, exit code ${terminated.exitCode}`;
}

/**
 * Why the pod is not serving, or null when nothing is wrong that Kubernetes reports (it may just
 * be starting). The reason's first word is Kubernetes' own (ImagePullBackOff …).
 */
export function podProblem(pod: KubeItem): string | null {
  const status = (pod.status ?? {}) as PodStatus;
  if (status.phase === 'Failed') {
    return `pod ${pod.metadata.name} failed: ${status.reason ?? 'Failed'}${status.message === undefined ? '' : ` (${status.message})`}`;
  }
  const statuses = [...(status.initContainerStatuses ?? []), ...(status.containerStatuses ?? [])];
  for (const container of statuses) {
    const waiting = container.state?.waiting;
    if (waiting?.reason !== undefined && stuckReasons.has(waiting.reason)) {
      const exit = waiting.reason === 'CrashLoopBackOff' ? lastExit(container) : null;
      const detail = exit !== null ? `last exit: ${exit}` : (waiting.message ?? '');
      return `${waiting.reason}: ${detail === '' ? `container ${container.name ?? '?'}` : detail}`;
    }
    const terminated = container.state?.terminated ?? container.lastState?.terminated;
    if (terminated?.reason === 'OOMKilled') {
      return `OOMKilled: container ${container.name ?? '?'} ran out of memory (restarted ${container.restartCount ?? 0} times)`;
    }
  }
  const scheduled = status.conditions?.find((c) => c.type === 'PodScheduled');
  if (scheduled?.status === 'False' && scheduled.reason === 'Unschedulable')
    return `Unschedulable: ${scheduled.message ?? 'no node fits the pod'}`;
  return null;
}

/** Why a Deployment creates no pods (a quota, an admission webhook), or null. */
export function deploymentProblem(deployment: KubeItem): string | null {
  const conditions = ((deployment.status ?? {}) as { conditions?: Condition[] }).conditions ?? [];
  const failure = conditions.find((c) => c.type === 'ReplicaFailure' && c.status === 'True');
  if (failure !== undefined)
    return `${failure.reason ?? 'ReplicaFailure'}: ${failure.message ?? ''}`;
  const progressing = conditions.find((c) => c.type === 'Progressing' && c.status === 'False');
  if (progressing !== undefined)
    return `${progressing.reason ?? 'ProgressDeadlineExceeded'}: ${progressing.message ?? ''}`;
  return null;
}

/** Whether the labels hold every pair of the selector. */
export function matchesLabels(
  labels: Readonly<Record<string, string>> | undefined,
  selector: Readonly<Record<string, string>>,
): boolean {
  return Object.entries(selector).every(([key, value]) => labels?.[key] === value);
}

/** A pod is on its way out (a scale down, a delete): it takes no slot. */
export function isTerminating(pod: KubeItem): boolean {
  return pod.metadata.deletionTimestamp !== undefined && pod.metadata.deletionTimestamp !== null;
}

type SliceEndpoint = {
  addresses?: string[];
  conditions?: { ready?: boolean | null; serving?: boolean | null; terminating?: boolean | null };
  targetRef?: { kind?: string; name?: string };
};
type SlicePort = { name?: string; port?: number; protocol?: string };

/**
 * The ready pods behind a Service, by pod name: `http://IP:port` from its EndpointSlices (the
 * first port of each slice). IPv6 addresses are bracketed.
 */
export function readyPodUrls(slices: Iterable<KubeItem>, service: string): Map<string, string> {
  const urls = new Map<string, string>();
  for (const slice of slices) {
    if (slice.metadata.labels?.['kubernetes.io/service-name'] !== service) continue;
    const port = ((slice.ports ?? []) as SlicePort[])[0]?.port;
    if (port === undefined) continue;
    for (const endpoint of (slice.endpoints ?? []) as SliceEndpoint[]) {
      // `ready` absent means ready (discovery.k8s.io/v1: "nil should be interpreted as true").
      if (endpoint.conditions?.ready === false) continue;
      if (endpoint.conditions?.terminating === true) continue;
      const address = endpoint.addresses?.[0];
      const pod = endpoint.targetRef?.kind === 'Pod' ? endpoint.targetRef.name : undefined;
      if (address === undefined || pod === undefined) continue;
      const host = address.includes(':') ? `[${address}]` : address;
      urls.set(pod, `http://${host}:${port}`);
    }
  }
  return urls;
}
