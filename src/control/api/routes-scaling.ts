// Autoscaling routes (issue 14): the gateways' load reports and wake calls, an endpoint's
// policy, its scale state and history, and the control plane's Prometheus metrics.
//
//   POST   /api/v1/scaling/reports               routing a gateway's demand (not audited)
//   POST   /api/v1/endpoints/{name}/wake          routing a gateway holds requests: 0 → 1 now
//   GET    /api/v1/endpoints/{name}/autoscale     read    the policy in force (null: none)
//   PUT    /api/v1/endpoints/{name}/autoscale     team    put a policy in force
//   DELETE /api/v1/endpoints/{name}/autoscale     team    back to a fixed count
//   GET    /api/v1/endpoints/{name}/scale         read    count, ready, mode, last decision,
//                                                         signals, events, latency quantiles
//   GET    /api/v1/endpoints/{name}/scale/events  read    scale events, newest first
//   GET    /metrics                               read    Prometheus text

import type { FastifyInstance, FastifyRequest } from 'fastify';
import { kilnError } from '../../core/errors.ts';
import type { Store } from '../../store/store.ts';
import { routingAccess, teamAccess } from '../access-policy.ts';
import type { AutoscaleController } from '../autoscale/autoscale-controller.ts';
import { checkLoadReport } from '../autoscale/load-report-check.ts';
import type { CostService } from '../observability/cost-service.ts';

type Named = { Params: { name: string } };

const sinceQuery = {
  type: 'object',
  additionalProperties: false,
  properties: { since: { type: 'string', minLength: 1, maxLength: 64 } },
} as const;

const eventsQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    since: { type: 'string', minLength: 1, maxLength: 64 },
    limit: { type: 'integer', minimum: 1, maximum: 1000, default: 100 },
  },
} as const;

/** The policy's fields are checked by resolveAutoscalePolicy (each problem named). */
const policyBody = { type: 'object', maxProperties: 64 } as const;

function parseTime(field: string, text: string): string {
  const ms = Date.parse(text);
  if (Number.isNaN(ms)) {
    throw kilnError(
      'KILN_VALIDATION_FAILED',
      { reason: `${field} ${JSON.stringify(text)} is not an ISO 8601 time` },
      { field },
    );
  }
  return new Date(ms).toISOString();
}

export function registerScalingRoutes(
  app: FastifyInstance,
  store: Store,
  autoscale: AutoscaleController,
  /** Issue 15 (cost): LLM tokens ride on the same reports. */
  cost?: CostService,
): void {
  const endpointTeams = async (request: FastifyRequest): Promise<string[]> => {
    const endpoint = await store.getEndpoint((request.params as { name: string }).name);
    return endpoint === null ? [] : [endpoint.team];
  };
  const changePolicy = teamAccess('change the autoscaling of endpoints', endpointTeams);

  // Every gateway, every second it has demand: checked whole (a malformed report is 400).
  app.post(
    '/api/v1/scaling/reports',
    { config: { access: routingAccess, audit: false } },
    async (request, reply) => {
      const report = checkLoadReport(request.body);
      autoscale.ingest(report);
      cost?.ingestTokens(report);
      return reply.code(202).send({ endpoints: report.endpoints.length });
    },
  );

  // Once per cold start per gateway; the scale event records it, the audit log need not.
  app.post<Named>(
    '/api/v1/endpoints/:name/wake',
    { config: { access: routingAccess, audit: false } },
    async (request) => autoscale.wake(request.params.name),
  );

  app.get<Named>('/api/v1/endpoints/:name/autoscale', async (request) => {
    const endpoint = await store.getEndpoint(request.params.name);
    if (endpoint === null) {
      throw kilnError('KILN_ENDPOINT_NOT_FOUND', { endpoint: request.params.name });
    }
    return { endpoint: endpoint.name, autoscale: endpoint.config.autoscale ?? null };
  });

  app.put<Named & { Body: Record<string, unknown> }>(
    '/api/v1/endpoints/:name/autoscale',
    { schema: { body: policyBody }, config: { access: changePolicy } },
    async (request) => autoscale.setPolicy(request.params.name, request.body),
  );

  app.delete<Named>(
    '/api/v1/endpoints/:name/autoscale',
    { config: { access: changePolicy } },
    async (request) => autoscale.clearPolicy(request.params.name),
  );

  app.get<Named & { Querystring: { since?: string } }>(
    '/api/v1/endpoints/:name/scale',
    { schema: { querystring: sinceQuery } },
    async (request) => {
      const since = request.query.since;
      return autoscale.status(
        request.params.name,
        since === undefined ? {} : { latencySince: parseTime('since', since) },
      );
    },
  );

  app.get<Named & { Querystring: { since?: string; limit: number } }>(
    '/api/v1/endpoints/:name/scale/events',
    { schema: { querystring: eventsQuery } },
    async (request) => {
      const { since, limit } = request.query;
      if ((await store.getEndpoint(request.params.name)) === null) {
        // Its history outlives it: answered when there is any.
        const events = await store.listScaleEvents({ endpoint: request.params.name, limit: 1 });
        if (events.length === 0) {
          throw kilnError('KILN_ENDPOINT_NOT_FOUND', { endpoint: request.params.name });
        }
      }
      return {
        items: await store.listScaleEvents({
          endpoint: request.params.name,
          limit,
          ...(since === undefined ? {} : { since: parseTime('since', since) }),
        }),
      };
    },
  );
}
