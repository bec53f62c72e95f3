// Model quality routes (issue 15, D; docs/outcomes.md):
//   POST /api/v1/quality/predictions        a gateway's batch of predictions (not audited)
//   POST /api/v1/endpoints/{e}/outcomes     callers report true outcomes by request id
//   GET  /api/v1/endpoints/{e}/quality      accuracy / AUC / log-loss or MAE / RMSE,
//                                           per version; ?slice=KEY per slice value;
//                                           ?since=1h|7d|ISO time (default 24h)

import type { FastifyInstance, FastifyRequest } from 'fastify';
import { kilnError } from '../../core/errors.ts';
import type { Store } from '../../store/store.ts';
import { routingAccess, teamAccess } from '../access-policy.ts';
import type { QualityService } from '../observability/quality-service.ts';
import type { Clock } from '../../core/clock.ts';

type Named = { Params: { name: string } };

const defaultSinceMs = 24 * 60 * 60 * 1000;

export function registerQualityRoutes(
  app: FastifyInstance,
  store: Store,
  quality: QualityService,
  clock: Clock,
): void {
  const endpointTeams = async (request: FastifyRequest): Promise<string[]> => {
    const endpoint = await store.getEndpoint((request.params as { name: string }).name);
    return endpoint === null ? [] : [endpoint.team];
  };

  // Every gateway, every second it has predictions of endpoints with quality settings.
  app.post(
    '/api/v1/quality/predictions',
    { config: { access: routingAccess, audit: false } },
    async (request, reply) => reply.code(202).send(await quality.ingestPredictions(request.body)),
  );

  app.post<Named & { Body: unknown }>(
    '/api/v1/endpoints/:name/outcomes',
    { config: { access: teamAccess('report outcomes of endpoints', endpointTeams) } },
    async (request) => quality.recordOutcomes(request.params.name, request.body),
  );

  app.get<Named & { Querystring: { slice?: string; since?: string } }>(
    '/api/v1/endpoints/:name/quality',
    {
      schema: {
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            slice: { type: 'string', minLength: 1, maxLength: 64 },
            since: { type: 'string', minLength: 1, maxLength: 64 },
          },
        },
      },
    },
    async (request) => {
      const { slice, since } = request.query;
      const now = clock.now();
      const sinceMs = since === undefined ? now - defaultSinceMs : sinceTime(since, now);
      return quality.report(request.params.name, sinceMs, slice ?? null);
    },
  );
}

/** `30m`, `1h`, `7d` before now, or an ISO 8601 time. */
export function sinceTime(text: string, nowMs: number): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/.exec(text.trim());
  if (match !== null) {
    const factor = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }[match[2]!]!;
    return nowMs - Math.round(Number(match[1]) * factor);
  }
  const ms = Date.parse(text);
  if (Number.isNaN(ms)) {
    throw kilnError(
      'KILN_VALIDATION_FAILED',
      {
        reason: `since ${JSON.stringify(text)} is neither a duration (30m, 1h, 7d) nor an ISO 8601 time`,
      },
      { field: 'since' },
    );
  }
  return ms;
}
