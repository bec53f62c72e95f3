// Least-outstanding-requests replica choice. Pure: the caller passes the replicas with their
// current load, a rotating start index (ties go to the first replica in rotation order, so
// equal loads are served round-robin), the monotonic time and a replica to skip (the one a
// retry is moving away from).
//
// Ejected replicas (a connection to them failed recently) are skipped while any other is
// available; when every candidate is ejected we still pick the least loaded of them (the
// "panic" rule of Envoy-style balancers): a request that may fail beats a certain 503, and
// the retry rule in forward.ts catches the failure.

export interface ReplicaLoad {
  /** Requests sent to this replica that have not completed. */
  readonly outstanding: number;
  /** Monotonic ms (performance.now()) until which the replica is skipped; 0 = not ejected. */
  readonly ejectedUntilMs: number;
}

export function pickReplica<R extends ReplicaLoad>(
  replicas: readonly R[],
  start: number,
  nowMs: number,
  exclude: R | null,
): R | null {
  const n = replicas.length;
  let best: R | null = null;
  let bestLoad = Infinity;
  let fallback: R | null = null;
  let fallbackLoad = Infinity;
  for (let i = 0; i < n; i++) {
    const replica = replicas[(start + i) % n]!;
    if (replica === exclude) continue;
    if (replica.ejectedUntilMs > nowMs) {
      if (replica.outstanding < fallbackLoad) {
        fallback = replica;
        fallbackLoad = replica.outstanding;
      }
    } else if (replica.outstanding < bestLoad) {
      best = replica;
      bestLoad = replica.outstanding;
    }
  }
  return best ?? fallback;
}
