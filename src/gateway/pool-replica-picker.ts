// Which pool worker gets a request for a pool endpoint (issue 14, docs/pools.md). A pool
// worker loads a model on its first request, so spreading a model's requests over every
// worker would load it everywhere and evict the others. Two rules:
//   1. a worker that holds the model loaded now (it says so on every answer:
//      `kiln-pool-resident`) gets it — the least loaded of them if several;
//   2. else the worker ranked first for the model by rendezvous hashing (highest
//      murmur3(endpoint, worker id)): every gateway picks the same one, and a worker leaving
//      moves only its own models.
// Ejected workers are skipped while any other is available (as pickReplica does).

import { murmur3 } from '../traffic/sticky-bucket.ts';
import type { ReplicaLoad } from './replica-picker.ts';

interface PoolCandidate extends ReplicaLoad {
  readonly id: string;
}

/** What each worker said it holds in its last answer, by the gateway's replica state. */
const residency = new WeakMap<object, ReadonlySet<string>>();

/** Records a pool worker's `kiln-pool-resident` header (absent: nothing learned). */
export function notePoolResidency(replica: object, header: string | string[] | undefined): void {
  if (typeof header !== 'string') return;
  residency.set(replica, new Set(header.length === 0 ? [] : header.split(',')));
}

export function holdsModel(replica: object, endpoint: string): boolean {
  return residency.get(replica)?.has(endpoint) ?? false;
}

export function pickPoolReplica<R extends PoolCandidate>(
  replicas: readonly R[],
  endpoint: string,
  nowMs: number,
  exclude: R | null,
): R | null {
  const usable = replicas.filter((r) => r !== exclude);
  const live = usable.filter((r) => r.ejectedUntilMs <= nowMs);
  const candidates = live.length > 0 ? live : usable;
  if (candidates.length === 0) return null;
  const ranked = [...candidates].sort((a, b) => rank(b, endpoint) - rank(a, endpoint));
  let best: R | null = null;
  for (const replica of ranked) {
    if (!holdsModel(replica, endpoint)) continue;
    if (best === null || replica.outstanding < best.outstanding) best = replica;
  }
  return best ?? ranked[0] ?? null;
}

/** Rendezvous score of a worker for an endpoint (unsigned 32-bit). */
export function rank(replica: PoolCandidate, endpoint: string): number {
  return murmur3(`${endpoint}\u0000${replica.id}`, 0x6b696c6e);
}
