// SLO routes (issue 15, F; docs/slo.md):
//
//   GET /api/v1/endpoints/{name}/slo   read  the SLO, SLIs per burn window, 30-day budgets,
//                                            alert states and recent transitions
//   GET /api/v1/slo/rules[?endpoint=][&format=json]  read  the SLOs as Prometheus rules (YAML)

import type { FastifyInstance } from 'fastify';
import { readAccess } from '../access-policy.ts';
import type { SloService } from '../observability/slo/slo-service.ts';

const rulesQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    endpoint: { type: 'string', minLength: 1, maxLength: 256 },
    // yaml (default: what Prometheus loads) or json ({"rules": "<yaml>"}: the CLI).
    format: { type: 'string', enum: ['yaml', 'json'] },
  },
} as const;

export function registerSloRoutes(app: FastifyInstance, slo: SloService): void {
  app.get<{ Params: { name: string } }>(
    '/api/v1/endpoints/:name/slo',
    { config: { access: readAccess } },
    async (request) => slo.status(request.params.name),
  );

  app.get<{ Querystring: { endpoint?: string; format?: 'yaml' | 'json' } }>(
    '/api/v1/slo/rules',
    { config: { access: readAccess }, schema: { querystring: rulesQuery } },
    async (request, reply) => {
      const text = await slo.rules(request.query.endpoint);
      if (request.query.format === 'json') return { rules: text };
      return reply.type('application/yaml; charset=utf-8').send(text);
    },
  );
}
