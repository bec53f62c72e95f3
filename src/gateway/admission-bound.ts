// The default bound on an endpoint's infer requests in flight at a gateway, for endpoints
// whose config sets no `maxConcurrency`: what its ready replicas can hold, so a flood is
// refused at the door (429 KILN_ENDPOINT_BUSY + Retry-After) instead of queueing without
// limit in the gateway's memory, on the channel and in the worker's event loop.
//
//   bound = Σ over the ready replicas serving the endpoint of what one replica holds
//           (with none ready: one replica's worth, so the 503s stay bounded too)
//
//   one replica holds
//     batching on:  maxQueue (the batcher's queue; 256 by default)
//     batching off: 64 (unbatchedReplicaBound)
//
// Why maxQueue and not maxQueue + maxBatchSize: a batch is cut from the queue, and a burst
// that lands on an idle worker in one read (the frames of one channel write) is enqueued
// before any batch forms, so the queue alone is what a worker is sure to accept. With the
// gateway admitting at most that, no request it let in is shed by a worker's full queue
// (least-outstanding picking keeps every replica at or under its share), and a batch still
// runs while the rest of the queue refills (maxQueue ≥ 2 × maxBatchSize by default).
//
// Why 64 without batching: such a worker has no queue of its own and runs one request at a
// time, so beyond a few in flight every request only waits (Little's law: the wait grows by
// the service time with each one). The overload bench put the knee of the trees model (the
// fastest, where the gateway itself is the limit) at 32 connections; 64 leaves headroom for
// bursts and the gateway→worker hop while keeping the queue a few dozen service times long.
//
// Pure: the control plane computes the bound where it builds the routing snapshot (so the
// gateway, `kiln endpoints show` and the API report one number); the gateway uses it only
// for a snapshot from an older control plane that carries no bound.

/** What one worker without batching is let hold (it runs one request at a time). */
export const unbatchedReplicaBound = 64;

/** What one replica holds: its batcher's queue, or the unbatched figure. */
export function replicaBound(batching: { readonly maxQueue: number } | null): number {
  return batching === null ? unbatchedReplicaBound : Math.max(1, batching.maxQueue);
}

/**
 * The endpoint's derived bound from what each ready replica holds; `idleBound` (one
 * replica's worth) when none is ready.
 */
export function derivedMaxConcurrency(replicaBounds: readonly number[], idleBound: number): number {
  let sum = 0;
  for (const bound of replicaBounds) sum += bound;
  return sum > 0 ? sum : Math.max(1, idleBound);
}
