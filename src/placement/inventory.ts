// The nodes replicas may be placed on (issue 14) and what a replica asks of one. The local
// backend reads a declared inventory (`kiln up --inventory FILE`, else `<home>/inventory.json`,
// else one node: this machine, its CPUs and memory, no accelerators); the Kubernetes backend
// (issue 17) will build the same shape from node resources and labels. Placement
// (placement.ts, pure) assigns every replica a node — and devices on it — before it starts.

/** A MIG profile by name (`1g.10gb` … `7g.80gb` on A100 80GB; `1g.10gb` … on H100). */
export type MigProfileName = string;

export interface AcceleratorDevice {
  /** Index on its node (what CUDA_VISIBLE_DEVICES names). */
  readonly index: number;
  /** `A100-80GB`, `H100-80GB`, `L4` …: what `resources.accelerator.type` matches. */
  readonly type: string;
  readonly memoryGiB: number;
  /**
   * How the device is shared: 'exclusive' (one replica holds it whole), 'mps' (several
   * replicas share it by memory, with CUDA MPS), or 'mig' (cut into the listed instances).
   */
  readonly sharing: 'exclusive' | 'mps' | 'mig';
  /** With 'mig': the instances it is cut into, e.g. ['3g.40gb', '2g.20gb', '1g.10gb', '1g.10gb']. */
  readonly mig?: readonly MigProfileName[];
}

export interface InventoryNode {
  readonly name: string;
  readonly cpus: number;
  readonly memoryGiB: number;
  /** Spot capacity may be reclaimed at short notice; on-demand is not. Default 'on-demand'. */
  readonly capacity: 'spot' | 'on-demand';
  /** Instance type (for start-up times and cost in the simulator), e.g. `p4d.24xlarge`. */
  readonly instanceType?: string;
  /** Price per hour of the whole node, for cost reports. */
  readonly costPerHour?: number;
  readonly accelerators: readonly AcceleratorDevice[];
  readonly labels?: Readonly<Record<string, string>>;
}

export interface Inventory {
  readonly nodes: readonly InventoryNode[];
  /** Accelerator memory kept free on every shared device, 0..0.5 of it. Default 0.1. */
  readonly headroom?: number;
}

/**
 * What one replica of an endpoint needs (the endpoint's `config.resources`). An endpoint
 * without `resources` asks nothing (best effort, like a Kubernetes pod without requests): it
 * is given a node but never refused one; the defaults below apply once `resources` is given.
 */
export interface ResourceRequest {
  /** CPU cores (fractions allowed). Default 1. */
  readonly cpu?: number;
  /** GiB. Default: estimated from the model's artifact size (× 2, at least 0.25). */
  readonly memoryGiB?: number;
  readonly accelerator?: AcceleratorRequest;
  /** 'spot' | 'on-demand' | 'any' (default: 'any', spot preferred when both fit). */
  readonly capacity?: 'spot' | 'on-demand' | 'any';
}

export interface AcceleratorRequest {
  /** Device type to match (`A100-80GB`); absent: any. */
  readonly type?: string;
  /**
   * Accelerator memory one replica needs, in GiB: packed by memory onto shared (mps) devices,
   * or onto the smallest MIG instance that holds it. Exclusive with `count`.
   */
  readonly memoryGiB?: number;
  /** Whole devices on one node (tensor parallel across them). Exclusive with `memoryGiB`. */
  readonly count?: number;
  /** A MIG instance of exactly this profile. */
  readonly mig?: MigProfileName;
}
