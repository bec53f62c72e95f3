// Checks an endpoint's `config.resources` (what one replica needs of a node) at deploy, and
// completes it with the defaults placement packs by. A request that could never be met by any
// inventory (both a memory share and whole devices, a negative size) is a 400 naming the
// field; one this inventory cannot meet is placement's answer (KILN_UNSCHEDULABLE).

import type { AcceleratorRequest, ResourceRequest } from './inventory.ts';
import { migDeviceKinds } from './mig-profiles.ts';

/** A request with every default filled in: what the packer reads. */
export interface ResolvedRequest {
  readonly cpu: number;
  readonly memoryGiB: number;
  readonly accelerator: AcceleratorRequest | null;
  readonly capacity: 'spot' | 'on-demand' | 'any';
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function positiveNumber(value: unknown): boolean {
  return typeof value === 'number' && Number.isFinite(value) && value > 0;
}

/** Why `value` is not a valid resource request (naming the field), or null when it is. */
export function resourceRequestProblem(value: unknown): string | null {
  if (!isRecord(value)) return 'resources must be an object';
  for (const key of Object.keys(value))
    if (!['cpu', 'memoryGiB', 'accelerator', 'capacity'].includes(key))
      return `resources: unknown field "${key}"`;
  if (value.cpu !== undefined && !positiveNumber(value.cpu))
    return `resources.cpu must be a number > 0 (got ${JSON.stringify(value.cpu)})`;
  if (value.memoryGiB !== undefined && !positiveNumber(value.memoryGiB))
    return `resources.memoryGiB must be a number > 0 (got ${JSON.stringify(value.memoryGiB)})`;
  const capacity = value.capacity;
  if (
    capacity !== undefined &&
    capacity !== 'spot' &&
    capacity !== 'on-demand' &&
    capacity !== 'any'
  )
    return `resources.capacity must be spot, on-demand or any (got ${JSON.stringify(capacity)})`;
  const accelerator = value.accelerator;
  if (accelerator === undefined) return null;
  if (!isRecord(accelerator)) return 'resources.accelerator must be an object';
  for (const key of Object.keys(accelerator))
    if (!['type', 'memoryGiB', 'count', 'mig'].includes(key))
      return `resources.accelerator: unknown field "${key}"`;
  const { type, memoryGiB, count, mig } = accelerator;
  if (type !== undefined && (typeof type !== 'string' || type.length === 0 || type.length > 64))
    return 'resources.accelerator.type must be a device type such as "A100-80GB"';
  if (memoryGiB !== undefined && !positiveNumber(memoryGiB))
    return `resources.accelerator.memoryGiB must be a number > 0 (got ${JSON.stringify(memoryGiB)})`;
  if (
    count !== undefined &&
    !(Number.isInteger(count) && (count as number) >= 1 && (count as number) <= 64)
  )
    return `resources.accelerator.count must be a whole number from 1 to 64 (got ${JSON.stringify(count)})`;
  if (mig !== undefined && (typeof mig !== 'string' || !/^\d+g\.\d+gb$/.test(mig)))
    return `resources.accelerator.mig must name a MIG profile such as "1g.10gb" (got ${JSON.stringify(mig)})`;
  if (typeof mig === 'string') {
    // An inventory only holds MIG instances of known profiles (parse-inventory checks them):
    // an unknown one is a typo that no inventory could ever place, not a wait for room.
    const kinds =
      typeof type === 'string' && type in migDeviceKinds ? [type] : Object.keys(migDeviceKinds);
    const valid = [
      ...new Set(kinds.flatMap((k) => migDeviceKinds[k]!.profiles.map((p) => p.name))),
    ];
    if (!valid.includes(mig))
      return `resources.accelerator.mig: no ${kinds.length === 1 ? kinds[0] : 'GPU'} has a MIG profile ${mig} (known: ${valid.join(', ')})`;
  }
  const ways = [memoryGiB, count, mig].filter((v) => v !== undefined).length;
  if (ways === 0) return 'resources.accelerator needs one of memoryGiB, count or mig';
  if (ways > 1)
    return 'resources.accelerator: give one of memoryGiB (a share), count (whole devices) or mig (an instance)';
  return null;
}

/**
 * The request with its defaults: cpu 1; memory twice the model's files (at least 0.25 GiB),
 * since a runtime holds the parsed model beside buffers of about its size; capacity 'any'.
 */
export function resolveRequest(request: ResourceRequest, artifactBytes: number): ResolvedRequest {
  return {
    cpu: request.cpu ?? 1,
    memoryGiB: request.memoryGiB ?? Math.max(0.25, (2 * artifactBytes) / 1024 ** 3),
    accelerator: request.accelerator ?? null,
    capacity: request.capacity ?? 'any',
  };
}
