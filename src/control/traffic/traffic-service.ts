// The control plane's one door to an endpoint's traffic (issue 13): every change of a
// policy, a stable version, warm or staged versions goes through `change`, which writes it
// with its history event in one store transaction and has the reconciler publish a new
// routing snapshot at once (the gateways apply it atomically). Controllers (rollouts,
// blue-green, experiments) and the API call it; none writes traffic state another way.

import type { FastifyRequest } from 'fastify';
import { systemClock, type Clock } from '../../core/clock.ts';
import type { Registry } from '../../registry/registry.ts';
import type { EndpointTrafficRecord, TrafficChange } from '../../store/traffic-records.ts';
import { describePrincipal, devPrincipal } from '../access-policy.ts';
import type { Reconciler } from '../reconciler.ts';

/** Who made a change, as history shows it: the caller's token, or a controller's name. */
export function actorOf(request: FastifyRequest): string {
  return describePrincipal(request.principal ?? devPrincipal);
}

export class TrafficService {
  constructor(
    readonly registry: Registry,
    readonly reconciler: Reconciler,
    readonly clock: Clock = systemClock,
  ) {}

  /** Writes `change` (store transaction with its event), then publishes the new routing. */
  async change(endpoint: string, change: TrafficChange): Promise<EndpointTrafficRecord> {
    const record = await this.registry.store.updateEndpointTraffic(endpoint, change);
    await this.reconciler.trigger();
    return record;
  }
}
