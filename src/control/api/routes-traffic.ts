// Traffic management routes (issue 13): the gateways' traffic reports.

import type { FastifyInstance } from 'fastify';
import { routingAccess } from '../access-policy.ts';
import type { TrafficService } from '../traffic/traffic-service.ts';

export function registerTrafficRoutes(app: FastifyInstance, traffic: TrafficService): void {
  // Every gateway, every second it has counts: checked whole, merged into 10-second rows.
  app.post(
    '/api/v1/traffic/reports',
    { config: { access: routingAccess, audit: false } },
    async (request, reply) => {
      const { rows } = await traffic.ingestReport(request.body);
      return reply.code(202).send({ rows });
    },
  );
}
