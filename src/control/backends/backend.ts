// A backend runs replicas: worker processes here (local), pods later (kubernetes). It is the
// one place that performs side effects for the reconciler; the reconciler's decisions are a
// pure function (replica-plan.ts) of desired and observed state.

import type { ModelSchema } from '../../core/tensor.ts';
import type { WorkerSpec } from '../../worker/worker-spec.ts';
import type { ReplicaPlacement } from '../../placement/placement.ts';

/** A worker spec without the parts the backend chooses (where it listens, its folder). */
export type ReplicaLaunch = Omit<WorkerSpec, 'host' | 'port' | 'workDir' | 'channelSocket'> & {
  /**
   * Where the replica belongs (replica-plan.ts): the revision it serves and its slot. Kept
   * with the replica, so a platform started after the one that launched it died can adopt it.
   */
  readonly revision: string;
  readonly slot: number;
  /**
   * The node and devices placement gave it (issue 14): the worker's environment names them,
   * and a platform adopting the replica knows what it holds. Absent: not placed.
   */
  readonly placement?: ReplicaPlacement;
};

export type ReplicaEvent =
  | {
      readonly kind: 'listening';
      readonly url: string;
      /** A Unix socket on the gateway's host serving the same routes, if the replica has one. */
      readonly socketPath: string | null;
    }
  | {
      readonly kind: 'ready';
      readonly schema: ModelSchema;
      readonly memoryBytes: number;
      /** The model's feature names (tree models), when its file has them. */
      readonly featureNames: readonly string[] | null;
    }
  | {
      readonly kind: 'failed';
      readonly reason: string;
      /** The error code the worker reported (KILN_ARTIFACT_CORRUPT …); absent: none. */
      readonly code?: string;
    }
  | { readonly kind: 'exited'; readonly code: number | null; readonly signal: string | null };

export interface ReplicaHandle {
  readonly id: string;
  readonly pid: number | null;
  /** Asks the replica to drain and stop; kills it after graceMs. Resolves when it is gone. */
  stop(graceMs: number): Promise<void>;
}

/**
 * A replica that an earlier platform on this home started and left running when it died.
 * The data plane outlives its control plane: the next platform adopts it (or stops it).
 */
export interface SurvivingReplica {
  readonly launch: ReplicaLaunch;
  readonly pid: number;
  /**
   * Takes it over: it then reports like a replica just started — `listening` at once, `ready`
   * once probed ready (with the schema it serves), `exited` when it is gone.
   */
  adopt(onEvent: (event: ReplicaEvent) => void): ReplicaHandle;
  /** Stops it unadopted (drains; killed after graceMs). */
  stop(graceMs: number): Promise<void>;
}

export interface Backend {
  readonly kind: 'local' | 'kubernetes';
  start(launch: ReplicaLaunch, onEvent: (event: ReplicaEvent) => void): ReplicaHandle;
  /** Replicas left running by an earlier platform on this home: each to adopt or stop. */
  survivors?(): readonly SurvivingReplica[];
  /** Stops every replica (platform shutdown). */
  close(): Promise<void>;
}
