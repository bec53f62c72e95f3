// One gateway process's share of the limits a routing snapshot sets for "the gateway",
// when `kiln up --gateway-processes N` runs N of them on one port (issue 16). The kernel
// (cluster round robin) spreads connections over the processes, and each process keeps its
// own gates and buckets, so a limit kept whole in every process would let N times as much
// through:
//
//   endpoint maxConcurrency         → shared live, not here: admission.ts (a guaranteed
//                                      ⌊bound / N⌋, plus what the other processes leave)
//   team requestsPerSecond, burst   → rate / N, max(1, burst / N)
//   drift maxRequestsPerSecond      → rate / N  (issue 15's ≤ 200 marked req/s per gateway)
//   activation queueLimit           → max(1, ⌊limit / N⌋)
//
// A bound below N gives every process 1 (N in all): a process with none would refuse every
// request that lands on it. With one process the snapshot is returned as it is.

import type { RoutingSnapshot } from './routing-snapshot.ts';

export function processShare(snapshot: RoutingSnapshot, processes: number): RoutingSnapshot {
  if (processes <= 1) return snapshot;
  const whole = (limit: number): number => Math.max(1, Math.floor(limit / processes));
  return {
    ...snapshot,
    endpoints: snapshot.endpoints.map((endpoint) => ({
      ...endpoint,
      ...(endpoint.activation === undefined
        ? {}
        : {
            activation: {
              ...endpoint.activation,
              queueLimit: whole(endpoint.activation.queueLimit),
            },
          }),
      ...(endpoint.drift?.maxRequestsPerSecond == null
        ? {}
        : {
            drift: {
              ...endpoint.drift,
              maxRequestsPerSecond: endpoint.drift.maxRequestsPerSecond / processes,
            },
          }),
    })),
    teamLimits: snapshot.teamLimits.map((limit) => ({
      ...limit,
      requestsPerSecond: limit.requestsPerSecond / processes,
      burst: Math.max(1, limit.burst / processes),
    })),
  };
}
