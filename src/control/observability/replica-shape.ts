// What one running replica holds, for cost accounting: its resource request with the
// defaults placement packs by (cpu 1, memory from the model's size), the capacity of the node
// placement gave it, and its share of that node's accelerators.
//
// A replica is charged for what it asks, not for what placement reserved: an endpoint
// without `resources` is placed as best effort (it reserves nothing) yet still runs a
// process of about the default size, and that is what it costs whoever runs it.

import type { InventoryNode } from '../../placement/inventory.ts';
import type { ReplicaPlacement } from '../../placement/placement.ts';
import type { ResolvedRequest } from '../../placement/resource-request.ts';
import type { ReplicaShape } from '../../observability/cost/price-table.ts';

/** Compute slices of a MIG-capable device: a `3g.40gb` instance is 3/7 of it. */
const migSlices = 7;

export function replicaShape(
  request: ResolvedRequest,
  placed: { readonly placement: ReplicaPlacement; readonly node: InventoryNode } | null,
): ReplicaShape {
  const capacity = placed?.node.capacity ?? (request.capacity === 'spot' ? 'spot' : 'on-demand');
  let acceleratorType: string | null = null;
  let accelerators = 0;
  if (placed !== null && placed.placement.devices.length > 0) {
    for (const assignment of placed.placement.devices) {
      const device = placed.node.accelerators.find((d) => d.index === assignment.index);
      if (device === undefined) continue;
      acceleratorType ??= device.type;
      if (assignment.whole) accelerators += 1;
      else if (assignment.mig !== undefined) {
        const slices = Number(/^(\d+)g\./.exec(assignment.mig.profile)?.[1] ?? migSlices);
        accelerators += Math.min(1, slices / migSlices);
      } else accelerators += Math.min(1, assignment.memoryGiB / device.memoryGiB);
    }
  } else if (request.accelerator !== null) {
    // Not placed on a device (no inventory lists one): charged by what it asks, a share as one.
    acceleratorType = request.accelerator.type ?? 'any';
    accelerators = request.accelerator.count ?? 1;
  }
  return {
    cpu: request.cpu,
    memoryGiB: request.memoryGiB,
    acceleratorType,
    accelerators,
    capacity,
  };
}
