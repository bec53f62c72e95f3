// What a worker pod asks of the cluster, from the endpoint's `config.resources` (placement's
// ResourceRequest, src/placement/inventory.ts): container requests and limits, and where the
// pod may be scheduled (node selector, affinity, tolerations).
//
// Accelerators are extended resources that the cluster's device plugin declares; Kiln names
// them as NVIDIA's device plugin does with the "mixed" MIG strategy:
//   count N          → nvidia.com/gpu: N           (whole devices)
//   mig '1g.10gb'    → nvidia.com/mig-1g.10gb: 1   (one MIG instance of that profile)
//   memoryGiB M      → the smallest declared MIG instance holding M GiB (placement packs a
//                      memory share onto the smallest MIG instance that holds it; Kubernetes
//                      has no resource for a share of a device by memory)
// A request that no declared resource name can carry is refused (KILN_UNSCHEDULABLE) with the
// names declared, rather than rendered into a pod that would stay Pending.
//
// Capacity (spot vs on-demand) follows placement's rules on node labels:
//   spot       nodeSelector kiln.dev/capacity=spot, tolerates the spot taint
//   on-demand  required affinity: kiln.dev/capacity NotIn [spot] (unlabelled nodes count as
//              on-demand, like an inventory node without `capacity`)
//   any        tolerates the spot taint and prefers spot nodes (cheaper), like placement

import { kilnError } from '../../../core/errors.ts';
import type { ResourceRequest } from '../../../placement/inventory.ts';
import { migDeviceKinds } from '../../../placement/mig-profiles.ts';
import { resolveRequest } from '../../../placement/resource-request.ts';

export interface KubeSchedulingOptions {
  /** Extended resource names the cluster declares for accelerators. Default: see below. */
  readonly acceleratorResources?: readonly string[];
  /** Node label naming a node's accelerator type (`A100-80GB`). Default kiln.dev/accelerator-type. */
  readonly acceleratorTypeLabel?: string;
  /** Node label saying spot or on-demand, also the spot taint's key. Default kiln.dev/capacity. */
  readonly capacityLabel?: string;
}

export const gpuResource = 'nvidia.com/gpu';
export const migResourcePrefix = 'nvidia.com/mig-';
export const defaultAcceleratorTypeLabel = 'kiln.dev/accelerator-type';
export const defaultCapacityLabel = 'kiln.dev/capacity';

/** Whole GPUs plus every MIG profile Kiln knows (src/placement/mig-profiles.ts). */
export const defaultAcceleratorResources: readonly string[] = [
  gpuResource,
  ...new Set(
    Object.values(migDeviceKinds).flatMap((k) => k.profiles.map((p) => migResourcePrefix + p.name)),
  ),
];

export interface Toleration {
  readonly key: string;
  readonly operator: 'Equal' | 'Exists';
  readonly value?: string;
  readonly effect: 'NoSchedule';
}

export interface PodResources {
  readonly requests: Record<string, string>;
  readonly limits: Record<string, string>;
}

export interface PodScheduling {
  /** Absent: the endpoint asks nothing (best effort, like placement without `resources`). */
  readonly resources: PodResources | null;
  readonly nodeSelector: Record<string, string>;
  readonly tolerations: readonly Toleration[];
  readonly affinity: Record<string, unknown> | null;
  /** The accelerator resource asked for, if any (for the pod's annotations and docs). */
  readonly acceleratorResource: string | null;
}

/** CPU cores as a quantity: whole cores plain ("2"), fractions in millicores ("500m"). */
export function cpuQuantity(cores: number): string {
  const millis = Math.ceil(cores * 1000);
  return millis % 1000 === 0 ? String(millis / 1000) : `${millis}m`;
}

/** GiB as a quantity in Mi (rounded up), so 0.25 GiB is "256Mi". */
export function memoryQuantity(gib: number): string {
  return `${Math.ceil(gib * 1024)}Mi`;
}

function unschedulable(endpoint: string, reason: string): Error {
  return kilnError('KILN_UNSCHEDULABLE', { endpoint, reason });
}

/** The extended resource (name, count) an accelerator request takes; throws when none fits. */
function acceleratorResource(
  endpoint: string,
  accelerator: NonNullable<ResourceRequest['accelerator']>,
  declared: readonly string[],
): { readonly name: string; readonly count: number } {
  const known = `declared accelerator resources: ${declared.length === 0 ? 'none' : declared.join(', ')}`;
  if (accelerator.count !== undefined) {
    if (!declared.includes(gpuResource))
      throw unschedulable(
        endpoint,
        `${accelerator.count} whole GPU(s) need ${gpuResource}; ${known}`,
      );
    return { name: gpuResource, count: accelerator.count };
  }
  const types =
    accelerator.type === undefined
      ? Object.keys(migDeviceKinds)
      : accelerator.type in migDeviceKinds
        ? [accelerator.type]
        : [];
  const profiles = types.flatMap((t) => migDeviceKinds[t]!.profiles);
  if (accelerator.mig !== undefined) {
    const name = migResourcePrefix + accelerator.mig;
    if (!profiles.some((p) => p.name === accelerator.mig))
      throw unschedulable(
        endpoint,
        `no ${accelerator.type ?? 'GPU'} has a MIG profile ${accelerator.mig}, so no resource ${name} can carry it`,
      );
    if (!declared.includes(name))
      throw unschedulable(endpoint, `MIG profile ${accelerator.mig} needs ${name}; ${known}`);
    return { name, count: 1 };
  }
  const memoryGiB = accelerator.memoryGiB ?? 0;
  // The smallest declared MIG instance that holds the share; ties broken by name.
  const fitting = profiles
    .filter((p) => p.memoryGiB >= memoryGiB && declared.includes(migResourcePrefix + p.name))
    .sort(
      (a, b) =>
        a.memoryGiB - b.memoryGiB ||
        a.computeSlices - b.computeSlices ||
        (a.name < b.name ? -1 : 1),
    );
  const smallest = fitting[0];
  if (smallest === undefined)
    throw unschedulable(
      endpoint,
      `${memoryGiB} GiB of ${accelerator.type ?? 'GPU'} memory: Kubernetes cannot share a device by memory and no declared MIG resource holds ${memoryGiB} GiB (ask for whole GPUs with count, or a MIG profile; ${known})`,
    );
  return { name: migResourcePrefix + smallest.name, count: 1 };
}

/**
 * Requests and limits (equal, so a replica gets what placement would have reserved for it and
 * nothing more: Guaranteed QoS) and the scheduling constraints of one worker pod.
 */
export function podScheduling(
  endpoint: string,
  request: ResourceRequest | undefined,
  artifactBytes: number,
  options: KubeSchedulingOptions = {},
): PodScheduling {
  const capacityLabel = options.capacityLabel ?? defaultCapacityLabel;
  if (request === undefined)
    return {
      resources: null,
      nodeSelector: {},
      tolerations: [],
      affinity: null,
      acceleratorResource: null,
    };
  const resolved = resolveRequest(request, artifactBytes);
  const amounts: Record<string, string> = {
    cpu: cpuQuantity(resolved.cpu),
    memory: memoryQuantity(resolved.memoryGiB),
  };
  const nodeSelector: Record<string, string> = {};
  const tolerations: Toleration[] = [];
  let acceleratorName: string | null = null;
  if (resolved.accelerator !== null) {
    const declared = options.acceleratorResources ?? defaultAcceleratorResources;
    const { name, count } = acceleratorResource(endpoint, resolved.accelerator, declared);
    amounts[name] = String(count);
    acceleratorName = name;
    if (resolved.accelerator.type !== undefined)
      nodeSelector[options.acceleratorTypeLabel ?? defaultAcceleratorTypeLabel] =
        resolved.accelerator.type;
    // GPU node pools are commonly tainted so that only pods asking for a GPU land there.
    tolerations.push({ key: gpuResource, operator: 'Exists', effect: 'NoSchedule' });
  }
  const spotToleration: Toleration = {
    key: capacityLabel,
    operator: 'Equal',
    value: 'spot',
    effect: 'NoSchedule',
  };
  let affinity: Record<string, unknown> | null = null;
  switch (resolved.capacity) {
    case 'spot':
      nodeSelector[capacityLabel] = 'spot';
      tolerations.push(spotToleration);
      break;
    case 'on-demand':
      affinity = {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [
              { matchExpressions: [{ key: capacityLabel, operator: 'NotIn', values: ['spot'] }] },
            ],
          },
        },
      };
      break;
    case 'any':
      tolerations.push(spotToleration);
      affinity = {
        nodeAffinity: {
          preferredDuringSchedulingIgnoredDuringExecution: [
            {
              weight: 100,
              preference: {
                matchExpressions: [{ key: capacityLabel, operator: 'In', values: ['spot'] }],
              },
            },
          ],
        },
      };
      break;
  }
  return {
    resources: { requests: { ...amounts }, limits: { ...amounts } },
    nodeSelector,
    tolerations,
    affinity,
    acceleratorResource: acceleratorName,
  };
}
