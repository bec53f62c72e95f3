// The control plane's observability routes (issue 15): its Prometheus metrics, and (added by
// each part) drift, quality, cost and SLO routes.

import type { FastifyInstance } from 'fastify';
import { readAccess } from '../access-policy.ts';
import type { ObservabilityServices } from '../observability/observability-services.ts';

export function registerObservabilityRoutes(
  app: FastifyInstance,
  services: ObservabilityServices,
): void {
  // Any caller that may read (Prometheus scrapes with a read token: `authorization` in its
  // scrape config); figures per endpoint and version, never per request.
  app.get('/metrics', { config: { access: readAccess } }, async (_request, reply) => {
    const text = await services.metrics.metrics();
    return reply.type(services.metrics.contentType).send(text);
  });
}
