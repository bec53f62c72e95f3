// A new leader's first snapshot must not take away what gateways serve: its reconciler starts
// its own replicas (the last leader's may be on another machine, out of its reach), and a
// snapshot published before they are ready would route an endpoint to nothing. So at a
// takeover the store keeps the last leader's snapshot — the replicas it names may well still
// be serving — until this leader's routing serves every endpoint that one served, or a bound
// passes (an endpoint that cannot start here must not freeze the routing for ever).

import type { RoutingSnapshot } from '../../gateway/routing-snapshot.ts';
import type { RoutingTable } from '../routing-table.ts';

/** Whether `next` routes every endpoint `previous` routed to a replica (or dropped it). */
export function servesWhatWasServed(previous: RoutingSnapshot, next: RoutingSnapshot): boolean {
  const routed = new Map(next.endpoints.map((e) => [e.name, e.replicas.length]));
  return previous.endpoints.every((e) => {
    if (e.replicas.length === 0) return true;
    const now = routed.get(e.name);
    return now === undefined || now > 0;
  });
}

/**
 * Resolves once `table` serves what `previous` served, `waitMs` passed, or `abandoned()`
 * holds (the lease lost meanwhile). Polls: the table publishes on every reconcile pass.
 */
export async function untilServing(
  previous: RoutingSnapshot,
  table: RoutingTable,
  waitMs: number,
  abandoned: () => boolean,
): Promise<boolean> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    if (servesWhatWasServed(previous, table.current())) return true;
    if (abandoned() || Date.now() >= deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
