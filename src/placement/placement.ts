// Placement: which node (and which accelerator devices on it) a replica runs on. Pure: the
// cluster's state is the inventory plus the replicas placed so far; no clock, no I/O.
//
// Best fit, by accelerator memory: of every device (or MIG instance) a request fits on, take
// the one it leaves the least free memory on, so partly used devices fill before empty ones
// are opened and large devices stay whole for large models. Packing a set at once sorts it
// by accelerator memory, largest first (best-fit decreasing). First fit (the first device
// that fits, in inventory order) is kept beside it for comparison.
//
// The order a best-fit candidate is chosen by, most important first:
//   1. capacity: a request for 'any' prefers spot (cheaper), unless it replaces a replica of
//      a reclaimed node (then on-demand, which is not reclaimed in turn);
//   2. spread: the node holding fewest replicas of the same endpoint (anti-affinity when
//      possible, never a reason to refuse);
//   3. accelerator memory left free on the chosen device(s) (best fit);
//   4. the node's memory left free (best fit for CPU-only replicas), then inventory order.
//
// Sharing: an 'exclusive' device is held whole by one replica; an 'mps' device is shared by
// memory, up to (1 − headroom) of it; a 'mig' device is cut into fixed instances, each held
// by one replica. Tensor-parallel requests (`count`) take whole devices on one node:
// exclusive ones, or mps ones nothing runs on.

import type { AcceleratorDevice, Inventory, InventoryNode } from './inventory.ts';
import { migProfile } from './mig-profiles.ts';
import { defaultHeadroom } from './parse-inventory.ts';
import type { ResolvedRequest } from './resource-request.ts';

/** One device (or MIG instance) a replica holds. */
export interface DeviceAssignment {
  readonly index: number;
  /** The MIG instance: its profile and its position in the device's `mig` list. */
  readonly mig?: { readonly profile: string; readonly instance: number };
  /** Accelerator memory it reserves there, in GiB (a whole device: all of it). */
  readonly memoryGiB: number;
  /** Held whole (exclusive, or a tensor-parallel share of a node's devices). */
  readonly whole: boolean;
}

export interface ReplicaPlacement {
  readonly node: string;
  readonly cpu: number;
  readonly memoryGiB: number;
  readonly devices: readonly DeviceAssignment[];
}

export interface PlacedReplica {
  readonly id: string;
  /** Replicas of one group (an endpoint) are spread across nodes. */
  readonly group: string;
  readonly placement: ReplicaPlacement;
}

export type PlaceResult =
  | { readonly ok: true; readonly placement: ReplicaPlacement }
  | { readonly ok: false; readonly reason: string };

export interface PlaceOptions {
  readonly group?: string;
  /** Nodes not to use (reclaimed, draining). */
  readonly excludeNodes?: ReadonlySet<string>;
  /** A replacement for a replica of a reclaimed spot node: on-demand first. */
  readonly preferOnDemand?: boolean;
  readonly strategy?: 'best-fit' | 'first-fit';
}

interface Candidate {
  readonly node: InventoryNode;
  readonly nodeOrder: number;
  readonly devices: readonly DeviceAssignment[];
  /** Accelerator memory left free on the devices it takes, in GiB. */
  readonly wasteGiB: number;
}

const epsilon = 1e-9;

function gib(value: number): string {
  return `${Math.round(value * 100) / 100} GiB`;
}

function plural(count: number, word: string): string {
  return `${Math.round(count * 1000) / 1000} ${word}${count === 1 ? '' : 's'}`;
}

export class ClusterState {
  private readonly placed = new Map<string, PlacedReplica>();
  readonly headroom: number;

  constructor(
    readonly inventory: Inventory,
    placed: readonly PlacedReplica[] = [],
  ) {
    this.headroom = inventory.headroom ?? defaultHeadroom;
    for (const p of placed) this.placed.set(p.id, p);
  }

  replicas(): PlacedReplica[] {
    return [...this.placed.values()];
  }

  get(id: string): PlacedReplica | null {
    return this.placed.get(id) ?? null;
  }

  add(replica: PlacedReplica): void {
    this.placed.set(replica.id, replica);
  }

  remove(id: string): void {
    this.placed.delete(id);
  }

  /** Where `request` would go now (nothing changes), or why it fits nowhere. */
  place(request: ResolvedRequest, options: PlaceOptions = {}): PlaceResult {
    const nodes = this.eligibleNodes(request, options);
    if (nodes.length === 0) return { ok: false, reason: this.noNodeReason(request, options) };
    const candidates: Candidate[] = [];
    for (const [node, order] of nodes) {
      if (this.cpuFree(node) + epsilon < request.cpu) continue;
      if (this.memoryFree(node) + epsilon < request.memoryGiB) continue;
      const options_ = this.deviceOptions(node, request);
      for (const devices of options_)
        candidates.push({
          node,
          nodeOrder: order,
          devices: devices.devices,
          wasteGiB: devices.wasteGiB,
        });
    }
    if (candidates.length === 0) {
      return {
        ok: false,
        reason: this.unfitReason(
          request,
          nodes.map(([n]) => n),
        ),
      };
    }
    const chosen =
      options.strategy === 'first-fit' ? candidates[0]! : this.best(candidates, request, options);
    return {
      ok: true,
      placement: {
        node: chosen.node.name,
        cpu: request.cpu,
        memoryGiB: request.memoryGiB,
        devices: chosen.devices,
      },
    };
  }

  /** Places and records it. */
  assign(
    id: string,
    group: string,
    request: ResolvedRequest,
    options: PlaceOptions = {},
  ): PlaceResult {
    const result = this.place(request, { ...options, group });
    if (result.ok) this.add({ id, group, placement: result.placement });
    return result;
  }

  private best(
    candidates: Candidate[],
    request: ResolvedRequest,
    options: PlaceOptions,
  ): Candidate {
    const capacityRank = (node: InventoryNode): number => {
      if (request.capacity !== 'any') return 0;
      const spotFirst = options.preferOnDemand !== true;
      return (node.capacity === 'spot') === spotFirst ? 0 : 1;
    };
    const spread = (node: InventoryNode): number =>
      options.group === undefined
        ? 0
        : this.replicas().filter((r) => r.group === options.group && r.placement.node === node.name)
            .length;
    const keyed = candidates.map((c) => ({
      c,
      key: [
        capacityRank(c.node),
        spread(c.node),
        c.wasteGiB,
        this.memoryFree(c.node) - request.memoryGiB,
        c.nodeOrder,
      ],
    }));
    keyed.sort((a, b) => {
      for (let i = 0; i < a.key.length; i++) {
        const d = a.key[i]! - b.key[i]!;
        if (Math.abs(d) > epsilon) return d;
      }
      return 0;
    });
    return keyed[0]!.c;
  }

  private eligibleNodes(
    request: ResolvedRequest,
    options: PlaceOptions,
  ): Array<[InventoryNode, number]> {
    return this.inventory.nodes
      .map((node, order): [InventoryNode, number] => [node, order])
      .filter(
        ([node]) =>
          options.excludeNodes?.has(node.name) !== true &&
          (request.capacity === 'any' || node.capacity === request.capacity),
      );
  }

  private noNodeReason(request: ResolvedRequest, options: PlaceOptions): string {
    const matching = this.inventory.nodes.filter(
      (n) => request.capacity === 'any' || n.capacity === request.capacity,
    );
    const what = request.capacity === 'any' ? 'a node' : `a ${request.capacity} node`;
    if (matching.length === 0)
      return `needs ${what}, largest free none (no such node in the inventory)`;
    const excluded = matching.filter((n) => options.excludeNodes?.has(n.name) === true);
    return `needs ${what}, largest free none (reclaimed: ${excluded.map((n) => n.name).join(', ')})`;
  }

  // ---------------------------------------------------------------- free capacity

  private onNode(node: InventoryNode): PlacedReplica[] {
    return this.replicas().filter((r) => r.placement.node === node.name);
  }

  cpuFree(node: InventoryNode): number {
    return node.cpus - this.onNode(node).reduce((sum, r) => sum + r.placement.cpu, 0);
  }

  memoryFree(node: InventoryNode): number {
    return node.memoryGiB - this.onNode(node).reduce((sum, r) => sum + r.placement.memoryGiB, 0);
  }

  /** What holds a device: the assignments on it, with their replica. */
  holders(
    node: InventoryNode,
    index: number,
  ): Array<{ replica: PlacedReplica; device: DeviceAssignment }> {
    const found = [];
    for (const replica of this.onNode(node))
      for (const device of replica.placement.devices)
        if (device.index === index) found.push({ replica, device });
    return found;
  }

  /** Memory a shared device can still give (mps: within the headroom; others: whole or 0). */
  deviceFreeGiB(node: InventoryNode, device: AcceleratorDevice): number {
    const holders = this.holders(node, device.index);
    switch (device.sharing) {
      case 'exclusive':
        return holders.length === 0 ? device.memoryGiB : 0;
      case 'mps': {
        if (holders.some((h) => h.device.whole)) return 0;
        const used = holders.reduce((sum, h) => sum + h.device.memoryGiB, 0);
        return Math.max(0, device.memoryGiB * (1 - this.headroom) - used);
      }
      case 'mig':
        return Math.max(0, ...this.freeMigInstances(node, device).map((i) => i.memoryGiB));
    }
  }

  freeMigInstances(
    node: InventoryNode,
    device: AcceleratorDevice,
  ): Array<{ profile: string; instance: number; memoryGiB: number }> {
    const taken = new Set(
      this.holders(node, device.index).map((h) => h.device.mig?.instance ?? -1),
    );
    return (device.mig ?? []).flatMap((profile, instance) =>
      taken.has(instance)
        ? []
        : [{ profile, instance, memoryGiB: migProfile(device.type, profile)?.memoryGiB ?? 0 }],
    );
  }

  /** Devices a tensor-parallel request may take whole: exclusive or mps, nothing on them. */
  private wholeFree(node: InventoryNode, type: string | undefined): AcceleratorDevice[] {
    return node.accelerators.filter(
      (d) =>
        d.sharing !== 'mig' &&
        (type === undefined || d.type === type) &&
        this.holders(node, d.index).length === 0,
    );
  }

  private deviceOptions(
    node: InventoryNode,
    request: ResolvedRequest,
  ): Array<{ devices: DeviceAssignment[]; wasteGiB: number }> {
    const accelerator = request.accelerator;
    if (accelerator === null) return [{ devices: [], wasteGiB: 0 }];
    const typed = node.accelerators.filter(
      (d) => accelerator.type === undefined || d.type === accelerator.type,
    );
    if (accelerator.count !== undefined) {
      const free = this.wholeFree(node, accelerator.type);
      if (free.length < accelerator.count) return [];
      // The smallest devices that will do, leaving the node's largest for larger requests.
      const taken = [...free]
        .sort((a, b) => a.memoryGiB - b.memoryGiB || a.index - b.index)
        .slice(0, accelerator.count)
        .sort((a, b) => a.index - b.index);
      return [
        {
          devices: taken.map((d) => ({ index: d.index, memoryGiB: d.memoryGiB, whole: true })),
          // Whole devices are used whole; what is left is the node's other free devices.
          wasteGiB: free.length - accelerator.count,
        },
      ];
    }
    if (accelerator.mig !== undefined) {
      const options = [];
      for (const device of typed) {
        if (device.sharing !== 'mig') continue;
        const free = this.freeMigInstances(node, device).find((i) => i.profile === accelerator.mig);
        if (free === undefined) continue;
        options.push({
          devices: [
            {
              index: device.index,
              mig: { profile: free.profile, instance: free.instance },
              memoryGiB: free.memoryGiB,
              whole: false,
            },
          ],
          wasteGiB: 0,
        });
      }
      return options;
    }
    const need = accelerator.memoryGiB ?? 0;
    const options = [];
    for (const device of typed) {
      switch (device.sharing) {
        case 'exclusive': {
          const free = this.deviceFreeGiB(node, device);
          if (free + epsilon >= need)
            options.push({
              devices: [{ index: device.index, memoryGiB: device.memoryGiB, whole: true }],
              wasteGiB: device.memoryGiB - need,
            });
          break;
        }
        case 'mps': {
          const free = this.deviceFreeGiB(node, device);
          if (free + epsilon >= need)
            options.push({
              devices: [{ index: device.index, memoryGiB: need, whole: false }],
              wasteGiB: free - need,
            });
          break;
        }
        case 'mig': {
          // The smallest free instance that holds it.
          const fits = this.freeMigInstances(node, device)
            .filter((i) => i.memoryGiB + epsilon >= need)
            .sort((a, b) => a.memoryGiB - b.memoryGiB || a.instance - b.instance)[0];
          if (fits !== undefined)
            options.push({
              devices: [
                {
                  index: device.index,
                  mig: { profile: fits.profile, instance: fits.instance },
                  memoryGiB: fits.memoryGiB,
                  whole: false,
                },
              ],
              wasteGiB: fits.memoryGiB - need,
            });
          break;
        }
      }
    }
    return options;
  }

  // ---------------------------------------------------------------- why not

  /**
   * "needs X, largest free Y": the first of accelerator, CPU and memory that no eligible
   * node can give (looking only at the nodes that passed the ones before it).
   */
  private unfitReason(request: ResolvedRequest, eligible: readonly InventoryNode[]): string {
    let nodes = [...eligible];
    let narrowed = '';
    const accelerator = request.accelerator;
    if (accelerator !== null) {
      const withDevice = nodes.filter((n) => this.deviceOptions(n, request).length > 0);
      if (withDevice.length === 0) return this.acceleratorReason(request, nodes);
      if (withDevice.length < nodes.length)
        narrowed = ' on the nodes with a free accelerator that fits';
      nodes = withDevice;
    }
    const cpuFits = nodes.filter((n) => this.cpuFree(n) + epsilon >= request.cpu);
    if (cpuFits.length === 0) {
      const largest = Math.max(...nodes.map((n) => this.cpuFree(n)));
      return `needs ${plural(request.cpu, 'CPU')}, largest free ${plural(Math.max(0, largest), 'CPU')}${narrowed}`;
    }
    if (cpuFits.length < nodes.length) narrowed = narrowed || ' on the nodes with the CPUs free';
    const largest = Math.max(...cpuFits.map((n) => this.memoryFree(n)));
    return `needs ${gib(request.memoryGiB)} of memory, largest free ${gib(Math.max(0, largest))}${narrowed}`;
  }

  private acceleratorReason(request: ResolvedRequest, nodes: readonly InventoryNode[]): string {
    const accelerator = request.accelerator!;
    const typeText = accelerator.type === undefined ? '' : ` ${accelerator.type}`;
    const devices = nodes.flatMap((n) =>
      n.accelerators
        .filter((d) => accelerator.type === undefined || d.type === accelerator.type)
        .map((d) => ({ node: n, device: d })),
    );
    if (accelerator.count !== undefined) {
      const largest = Math.max(0, ...nodes.map((n) => this.wholeFree(n, accelerator.type).length));
      return `needs ${accelerator.count} whole${typeText} device${accelerator.count === 1 ? '' : 's'} on one node, largest free ${largest}`;
    }
    if (accelerator.mig !== undefined) {
      const free = devices
        .filter(({ device }) => device.sharing === 'mig')
        .flatMap(({ node, device }) => this.freeMigInstances(node, device))
        .sort((a, b) => b.memoryGiB - a.memoryGiB)[0];
      return `needs a free${typeText} MIG instance ${accelerator.mig}, largest free ${free === undefined ? 'none' : free.profile}`;
    }
    const largest = Math.max(
      0,
      ...devices.map(({ node, device }) => this.deviceFreeGiB(node, device)),
    );
    return `needs ${gib(accelerator.memoryGiB ?? 0)} of${typeText} accelerator memory, largest free ${gib(largest)}`;
  }
}

/** The devices (node/index) holding at least one replica. */
export function devicesInUse(state: ClusterState): number {
  const used = new Set<string>();
  for (const r of state.replicas())
    for (const d of r.placement.devices) used.add(`${r.placement.node}/${d.index}`);
  return used.size;
}

/** Accelerator memory a request is sorted by (largest first, for best-fit decreasing). */
export function acceleratorDemandGiB(request: ResolvedRequest, inventory: Inventory): number {
  const a = request.accelerator;
  if (a === null) return 0;
  if (a.memoryGiB !== undefined) return a.memoryGiB;
  if (a.count !== undefined) {
    const largest = Math.max(
      0,
      ...inventory.nodes.flatMap((n) =>
        n.accelerators
          .filter((d) => a.type === undefined || d.type === a.type)
          .map((d) => d.memoryGiB),
      ),
    );
    return a.count * largest;
  }
  const memories = inventory.nodes.flatMap((n) =>
    n.accelerators.flatMap((d) =>
      a.mig === undefined ? [] : [migProfile(d.type, a.mig)?.memoryGiB ?? 0],
    ),
  );
  return Math.max(0, ...memories);
}

export interface PackResult {
  readonly state: ClusterState;
  /** Requests that fit nowhere, by index into the input, with why. */
  readonly unplaced: ReadonlyArray<{ readonly index: number; readonly reason: string }>;
  readonly devicesUsed: number;
}

/**
 * Places a set of requests onto an empty inventory: 'best-fit' sorts them by accelerator
 * memory, largest first (best-fit decreasing); 'first-fit' takes them in the order given,
 * each on the first device that fits.
 */
export function packAll(
  inventory: Inventory,
  requests: ReadonlyArray<{ readonly group: string; readonly request: ResolvedRequest }>,
  strategy: 'best-fit' | 'first-fit',
): PackResult {
  const state = new ClusterState(inventory);
  const order = requests.map((r, index) => ({ ...r, index }));
  if (strategy === 'best-fit') {
    order.sort(
      (a, b) =>
        acceleratorDemandGiB(b.request, inventory) - acceleratorDemandGiB(a.request, inventory) ||
        b.request.memoryGiB - a.request.memoryGiB ||
        b.request.cpu - a.request.cpu ||
        a.index - b.index,
    );
  }
  const unplaced = [];
  for (const { group, request, index } of order) {
    const result = state.assign(`r${index}`, group, request, { strategy });
    if (!result.ok) unplaced.push({ index, reason: result.reason });
  }
  unplaced.sort((a, b) => a.index - b.index);
  return { state, unplaced, devicesUsed: devicesInUse(state) };
}
