// The reconciler's decisions as a pure function: given the endpoints users asked for and
// the replicas that exist, which replicas to start, restart and stop. No clock reads, no
// I/O: tested with a fake `nowMs` and plain objects.
//
// Rules, per endpoint (desired version V, N replicas):
// - slots 0..N-1 of version V each hold one replica; an empty slot is started;
// - a failed replica is restarted when its backoff has passed (0.5 s, 1 s, 2 s … 30 s);
// - replicas of V in slots ≥ N are stopped (scale down);
// - replicas of other versions keep serving until every slot of V is ready, then stop
//   (a new version that never becomes ready never takes the old one's traffic away);
// - replicas of endpoints that no longer exist are stopped.

export type ReplicaState = 'starting' | 'ready' | 'failed' | 'stopping';

export interface DesiredEndpoint {
  readonly name: string;
  readonly version: number;
  readonly replicas: number;
}

export interface ObservedReplica {
  readonly id: string;
  readonly endpoint: string;
  readonly version: number;
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
    const current = mine.filter((r) => r.version === endpoint.version);
    for (let slot = 0; slot < endpoint.replicas; slot++) {
      const holder = current.find((r) => r.slot === slot);
      if (holder === undefined) {
        actions.push({ kind: 'start', endpoint: endpoint.name, version: endpoint.version, slot });
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
        if (replica.version !== endpoint.version) {
          actions.push({ kind: 'stop', replicaId: replica.id, reason: 'replaced' });
        }
      }
    }
  }
  return actions;
}
