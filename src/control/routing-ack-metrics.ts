// The control plane's view of the gateway processes that follow the routing snapshot
// (issue 16): how many polls each one confirmed a version with, and how many are live. A
// drain waits for every live one, so a gateway that stops confirming shows here first.

import { Counter, Gauge, type Registry } from 'prom-client';
import type { RoutingTable } from './routing-table.ts';

export function registerRoutingAckMetrics(registry: Registry, routing: RoutingTable): void {
  new Counter({
    name: 'kiln_control_routing_acks_total',
    help: 'Routing snapshot polls that confirmed the version a gateway process holds, by gateway id (<supervisor pid>/<index>); a gateway that stopped polling drops out.',
    labelNames: ['gateway'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [gateway, acks] of routing.ackCounts()) this.inc({ gateway }, acks);
    },
  });
  new Gauge({
    name: 'kiln_control_routing_gateways',
    help: 'Gateway processes live in the drain acknowledgement set (polling now or lately).',
    registers: [registry],
    collect() {
      this.set(routing.ackCounts().size);
    },
  });
}
