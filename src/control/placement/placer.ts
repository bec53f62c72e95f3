// The control plane's side of placement: the inventory, the replicas placed on it, and the
// nodes reclaimed since start. The reconciler asks it for a node (and devices) before each
// start and tells it when a replica is gone; the deploy asks whether a replica could fit the
// inventory at all; `kiln placement show` reads its view. The decisions are the pure packer's
// (src/placement/placement.ts); this object only keeps the state between them.
//
// An endpoint that declares no `resources` asks nothing of placement (like a Kubernetes pod
// without requests): it is placed (so it has a node) but never refused — so a platform
// without an inventory behaves as before placement existed.

import { kilnError } from '../../core/errors.ts';
import type { EndpointConfig } from '../../store/serving-records.ts';
import type { InventoryNode } from '../../placement/inventory.ts';
import {
  ClusterState,
  type PlaceResult,
  type ReplicaPlacement,
} from '../../placement/placement.ts';
import { resolveRequest, type ResolvedRequest } from '../../placement/resource-request.ts';
import type { LoadedInventory } from './load-inventory.ts';

export interface PlacementView {
  /** The inventory file; null: this machine, none declared. */
  readonly source: string | null;
  readonly headroom: number;
  readonly nodes: readonly NodeView[];
}

export interface NodeView {
  readonly name: string;
  readonly capacity: 'spot' | 'on-demand';
  readonly instanceType: string | null;
  readonly costPerHour: number | null;
  /** Taken away (`kiln placement reclaim`): nothing new is placed here. */
  readonly reclaimed: boolean;
  readonly cpus: number;
  readonly cpuFree: number;
  readonly memoryGiB: number;
  readonly memoryFreeGiB: number;
  readonly replicas: ReadonlyArray<{
    readonly id: string;
    readonly endpoint: string;
    readonly cpu: number;
    readonly memoryGiB: number;
    readonly devices: readonly number[];
  }>;
  readonly accelerators: readonly DeviceView[];
}

export interface DeviceView {
  readonly index: number;
  readonly type: string;
  readonly memoryGiB: number;
  readonly sharing: 'exclusive' | 'mps' | 'mig';
  /** What a new replica could still get here, in GiB (mps: within the headroom). */
  readonly freeGiB: number;
  readonly holders: ReadonlyArray<{
    readonly replica: string;
    readonly endpoint: string;
    readonly memoryGiB: number;
    readonly whole: boolean;
    readonly mig: string | null;
  }>;
  /** MIG devices: each instance and who holds it. */
  readonly mig: ReadonlyArray<{
    readonly profile: string;
    readonly instance: number;
    readonly replica: string | null;
  }> | null;
}

/** What a replica of an endpoint with no `resources` asks: nothing, anywhere. */
const bestEffort: ResolvedRequest = { cpu: 0, memoryGiB: 0, accelerator: null, capacity: 'any' };

export class Placer {
  private readonly state: ClusterState;
  private readonly reclaimed = new Set<string>();

  constructor(readonly loaded: LoadedInventory) {
    this.state = new ClusterState(loaded.inventory);
  }

  requestFor(config: EndpointConfig, artifactBytes: number): ResolvedRequest {
    return config.resources === undefined
      ? bestEffort
      : resolveRequest(config.resources, artifactBytes);
  }

  /**
   * A node for a replica about to start (replacing any placement it had). `replacing`: it
   * stands in for a replica of a reclaimed node, so on-demand comes first.
   */
  place(
    replicaId: string,
    endpoint: { readonly name: string; readonly config: EndpointConfig },
    artifactBytes: number,
    replacing = false,
  ): PlaceResult {
    this.state.remove(replicaId);
    return this.state.assign(
      replicaId,
      endpoint.name,
      this.requestFor(endpoint.config, artifactBytes),
      {
        excludeNodes: this.reclaimed,
        preferOnDemand: replacing,
      },
    );
  }

  /** A replica left running by an earlier platform: it holds what it was given then. */
  adopt(replicaId: string, endpoint: string, placement: ReplicaPlacement): void {
    if (!this.state.inventory.nodes.some((n) => n.name === placement.node)) return;
    this.state.add({ id: replicaId, group: endpoint, placement });
  }

  release(replicaId: string): void {
    this.state.remove(replicaId);
  }

  nodeOf(replicaId: string): string | null {
    return this.state.get(replicaId)?.placement.node ?? null;
  }

  /** What placement gave a replica and the node it is on (cost accounting); null: not placed. */
  placed(replicaId: string): { placement: ReplicaPlacement; node: InventoryNode } | null {
    const placement = this.state.get(replicaId)?.placement;
    const node = this.state.inventory.nodes.find((n) => n.name === placement?.node);
    return placement === undefined || node === undefined ? null : { placement, node };
  }

  /** Why a replica of this config fits no node of the inventory even empty; null: it fits. */
  unschedulableEmpty(config: EndpointConfig, artifactBytes: number): string | null {
    if (config.resources === undefined) return null;
    const empty = new ClusterState(this.state.inventory);
    const result = empty.place(this.requestFor(config, artifactBytes));
    return result.ok ? null : result.reason;
  }

  /** Takes a node away: nothing new goes there; returns the replicas placed on it. */
  reclaim(node: string): string[] {
    if (!this.state.inventory.nodes.some((n) => n.name === node))
      throw kilnError('KILN_NODE_NOT_FOUND', { node });
    this.reclaimed.add(node);
    return this.state
      .replicas()
      .filter((r) => r.placement.node === node)
      .map((r) => r.id);
  }

  isReclaimed(node: string): boolean {
    return this.reclaimed.has(node);
  }

  view(): PlacementView {
    return {
      source: this.loaded.source,
      headroom: this.state.headroom,
      nodes: this.state.inventory.nodes.map((node) => this.nodeView(node)),
    };
  }

  private nodeView(node: InventoryNode): NodeView {
    const state = this.state;
    const replicas = state.replicas().filter((r) => r.placement.node === node.name);
    return {
      name: node.name,
      capacity: node.capacity,
      instanceType: node.instanceType ?? null,
      costPerHour: node.costPerHour ?? null,
      reclaimed: this.reclaimed.has(node.name),
      cpus: node.cpus,
      cpuFree: round(state.cpuFree(node)),
      memoryGiB: node.memoryGiB,
      memoryFreeGiB: round(state.memoryFree(node)),
      replicas: replicas
        .map((r) => ({
          id: r.id,
          endpoint: r.group,
          cpu: r.placement.cpu,
          memoryGiB: round(r.placement.memoryGiB),
          devices: r.placement.devices.map((d) => d.index),
        }))
        .sort((a, b) => (a.id < b.id ? -1 : 1)),
      accelerators: node.accelerators.map((device) => {
        const holders = state.holders(node, device.index);
        return {
          index: device.index,
          type: device.type,
          memoryGiB: device.memoryGiB,
          sharing: device.sharing,
          freeGiB: round(state.deviceFreeGiB(node, device)),
          holders: holders.map((h) => ({
            replica: h.replica.id,
            endpoint: h.replica.group,
            memoryGiB: round(h.device.memoryGiB),
            whole: h.device.whole,
            mig: h.device.mig?.profile ?? null,
          })),
          mig:
            device.mig === undefined
              ? null
              : device.mig.map((profile, instance) => ({
                  profile,
                  instance,
                  replica:
                    holders.find((h) => h.device.mig?.instance === instance)?.replica.id ?? null,
                })),
        };
      }),
    };
  }
}

function round(value: number): number {
  return Math.round(value * 1000) / 1000;
}
