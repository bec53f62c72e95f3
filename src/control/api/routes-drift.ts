// Drift and skew (issue 15, docs/drift.md): `GET /api/v1/endpoints/{e}/drift?slice=KEY&since=1h`
// — per version, overall (and per slice value with `slice`), per feature and output, PSI and
// Kolmogorov–Smirnov against the version's reference profile and against the previous window.

import type { FastifyInstance } from 'fastify';
import type { DriftService } from '../observability/drift/drift-service.ts';

interface DriftRequest {
  Params: { name: string };
  Querystring: { slice?: string; since?: string };
}

const driftQuery = {
  type: 'object',
  properties: {
    slice: { type: 'string', minLength: 1, maxLength: 64 },
    since: { type: 'string', minLength: 1, maxLength: 64 },
  },
  additionalProperties: false,
} as const;

export function registerDriftRoutes(app: FastifyInstance, drift: DriftService): void {
  app.get<DriftRequest>(
    '/api/v1/endpoints/:name/drift',
    { schema: { querystring: driftQuery } },
    async (request) =>
      drift.report(request.params.name, {
        slice: request.query.slice ?? null,
        since: request.query.since ?? null,
      }),
  );
}
