// The reconciler's decisions as a pure function: given the endpoints users asked for and
// the replicas that exist, which replicas to start, restart and stop. No clock reads, no
// I/O: tested with a fake `nowMs` and plain objects.
//
// A replica is started from a revision: the model, its version and the serving config the
// worker gets (serving-defaults.ts: workerRevision). Redeploying another model, version or
// worker config is a new revision, rolled out like a new version.
//
// Rules, per endpoint (desired revision R, N replicas):
// - slots 0..N-1 of revision R each hold one replica; an empty slot is started;
// - a failed replica is restarted when its backoff has passed (0.5 s, 1 s, 2 s … 30 s);
// - replicas of R in slots ≥ N are stopped (scale down);
// - replicas of other revisions keep serving until every slot of R is ready, then stop
//   (a new revision that never becomes ready never takes the old one's traffic away);
// - replicas of endpoints that no longer exist are stopped.

export type ReplicaState = 'starting' | 'ready' | 'failed' | 'stopping';

export interface DesiredEndpoint {
  readonly name: string;
  readonly version: number;
  /** What its replicas are started from (model, version, worker config). */
  readonly revision: string;
  readonly replicas: number;
}

export interface ObservedReplica {
  readonly id: string;
  readonly endpoint: string;
  readonly version: number;
  readonly revision: string;
  readonly slot: number;
  readonly state: ReplicaState;
  readonly restarts: number;
  /** When a failed replica may be started again. */
  readonly restartAtMs: number | null;
}

export type ReplicaAction =
  | {
      readonly kind: 'start';
      readonly endpoint: string;
      readonly version: number;
      readonly revision: string;
      readonly slot: number;
    }
  | { readonly kind: 'restart'; readonly replicaId: string }
  | {
      readonly kind: 'stop';
      readonly replicaId: string;
      readonly reason: 'scale-down' | 'replaced' | 'endpoint-deleted';
    };

export const maxBackoffMs = 30_000;

/** Delay before the n-th restart (n = restarts so far). */
export function restartBackoffMs(restarts: number): number {
  return Math.min(maxBackoffMs, 500 * 2 ** Math.min(restarts, 16));
}

export function planReplicas(
  endpoints: readonly DesiredEndpoint[],
  replicas: readonly ObservedReplica[],
  nowMs: number,
): ReplicaAction[] {
  const actions: ReplicaAction[] = [];
  const desired = new Map(endpoints.map((e) => [e.name, e]));
  const live = replicas.filter((r) => r.state !== 'stopping');

  for (const replica of live) {
    if (!desired.has(replica.endpoint)) {
      actions.push({ kind: 'stop', replicaId: replica.id, reason: 'endpoint-deleted' });
    }
  }

  for (const endpoint of endpoints) {
    const mine = live.filter((r) => r.endpoint === endpoint.name);
    const current = mine.filter((r) => r.revision === endpoint.revision);
    for (let slot = 0; slot < endpoint.replicas; slot++) {
      const holder = current.find((r) => r.slot === slot);
      if (holder === undefined) {
        actions.push({
          kind: 'start',
          endpoint: endpoint.name,
          version: endpoint.version,
          revision: endpoint.revision,
          slot,
        });
      } else if (
        holder.state === 'failed' &&
        holder.restartAtMs !== null &&
        holder.restartAtMs <= nowMs
      ) {
        actions.push({ kind: 'restart', replicaId: holder.id });
      }
    }
    for (const replica of current) {
      if (replica.slot >= endpoint.replicas) {
        actions.push({ kind: 'stop', replicaId: replica.id, reason: 'scale-down' });
      }
    }
    const readyCurrent = current.filter(
      (r) => r.state === 'ready' && r.slot < endpoint.replicas,
    ).length;
    if (readyCurrent >= endpoint.replicas) {
      for (const replica of mine) {
        if (replica.revision !== endpoint.revision) {
          actions.push({ kind: 'stop', replicaId: replica.id, reason: 'replaced' });
        }
      }
    }
  }
  return actions;
}
