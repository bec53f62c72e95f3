// Traffic management routes (issue 13): an endpoint's traffic policy, shadows and their
// report, rollback, history; and the gateways' traffic reports.
//
//   GET    /api/v1/endpoints/{name}/traffic          read    the split in force, previous, warm
//   PUT    /api/v1/endpoints/{name}/traffic          team    put a policy in force
//   DELETE /api/v1/endpoints/{name}/traffic          team    back to the stable version at 100 %
//   POST   /api/v1/endpoints/{name}/rollback         team    one step back (rollback-plan.ts)
//   GET    /api/v1/endpoints/{name}/history          read    traffic changes, newest first
//   PUT    /api/v1/endpoints/{name}/shadows          team    replace the shadows
//   DELETE /api/v1/endpoints/{name}/shadows          team    no shadows
//   GET    /api/v1/endpoints/{name}/shadows/report   read    agreement, |diff|, latency
//   POST   /api/v1/traffic/reports                   routing a gateway's counts (not audited)
//
// A policy body's shape is checked by its schema (unknown fields are typos: 400); what its
// versions and weights say is checked by the service, which names every problem at once.

import { pagedSinceQuery } from './schemas.ts';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { kilnError } from '../../core/errors.ts';
import type { Store } from '../../store/store.ts';
import type { ShadowVersion } from '../../traffic/traffic-split.ts';
import { routingAccess, teamAccess } from '../access-policy.ts';
import type { PolicyInput } from '../traffic/traffic-policy-input.ts';
import { actorOf, type ChangeContext, type TrafficService } from '../traffic/traffic-service.ts';

const reason = { type: 'string', maxLength: 1024 } as const;
/** Entries are checked by the service (every problem named), only their number here. */
const entries = { type: 'array', maxItems: 64, items: { type: 'object' } } as const;
const nullablePath = { type: ['string', 'null'], maxLength: 256 } as const;

const policyBody = {
  type: 'object',
  required: ['versions'],
  additionalProperties: false,
  properties: {
    versions: entries,
    shadows: entries,
    keyPath: nullablePath,
    sliceKey: { type: ['string', 'null'], maxLength: 64 },
    slicePath: nullablePath,
    salt: { type: 'string', minLength: 1, maxLength: 128 },
    reason,
    expectRevision: { type: 'integer', minimum: 0 },
  },
} as const;

const shadowsBody = {
  type: 'object',
  required: ['shadows'],
  additionalProperties: false,
  properties: { shadows: entries, reason, expectRevision: { type: 'integer', minimum: 0 } },
} as const;

const reasonQuery = {
  type: 'object',
  additionalProperties: false,
  properties: { reason },
} as const;

const reportQuery = {
  type: 'object',
  additionalProperties: false,
  properties: { since: { type: 'string', minLength: 1, maxLength: 64 } },
} as const;

type Named = { Params: { name: string } };
type PolicyBody = PolicyInput & { reason?: string; expectRevision?: number };
type ShadowsBody = { shadows: ShadowVersion[]; reason?: string; expectRevision?: number };
type ReasonBody = { reason?: string; expectRevision?: number };

/** The report window's default: the last hour. */
const defaultShadowWindowMs = 3_600_000;

export function registerTrafficRoutes(
  app: FastifyInstance,
  store: Store,
  traffic: TrafficService,
): void {
  const nameOf = (request: FastifyRequest): string => (request.params as { name: string }).name;
  const endpointTeams = async (request: FastifyRequest): Promise<string[]> => {
    const endpoint = await store.getEndpoint(nameOf(request));
    return endpoint === null ? [] : [endpoint.team];
  };
  // A policy touches the endpoint's team and the team of every model it routes to.
  const policyTeams = async (request: FastifyRequest): Promise<string[]> => {
    const teams = await endpointTeams(request);
    if (teams.length === 0) return teams;
    const body = request.body as { versions?: unknown[]; shadows?: unknown[] } | undefined;
    const models = new Set<string>();
    for (const entry of [...(body?.versions ?? []), ...(body?.shadows ?? [])]) {
      const model = (entry as { model?: unknown }).model;
      if (typeof model === 'string') models.add(model);
    }
    for (const name of models) {
      const model = await store.getModel(name);
      if (model !== null) teams.push(model.team);
    }
    return teams;
  };
  const context = (request: FastifyRequest, body: ReasonBody | undefined): ChangeContext => ({
    actor: actorOf(request),
    ...(body?.reason === undefined ? {} : { reason: body.reason }),
    ...(body?.expectRevision === undefined ? {} : { expectRevision: body.expectRevision }),
  });

  app.get<Named>('/api/v1/endpoints/:name/traffic', async (request) =>
    traffic.view(request.params.name),
  );

  app.put<Named & { Body: PolicyBody }>(
    '/api/v1/endpoints/:name/traffic',
    {
      schema: { body: policyBody },
      config: { access: teamAccess('change the traffic of endpoints', policyTeams) },
    },
    async (request) => {
      const { reason: _reason, expectRevision: _revision, ...policy } = request.body;
      return traffic.setPolicy(request.params.name, policy, context(request, request.body));
    },
  );

  app.delete<Named & { Querystring: { reason?: string } }>(
    '/api/v1/endpoints/:name/traffic',
    {
      schema: { querystring: reasonQuery },
      config: { access: teamAccess('change the traffic of endpoints', endpointTeams) },
    },
    async (request) => traffic.clearPolicy(request.params.name, context(request, request.query)),
  );

  app.post<Named & { Body: unknown }>(
    '/api/v1/endpoints/:name/rollback',
    // No schema: a bare POST (no body at all) is a rollback without a reason.
    { config: { access: teamAccess('roll back endpoints', endpointTeams) } },
    async (request) => {
      const body = reasonBodyOf(request.body);
      const result = await traffic.rollback(request.params.name, context(request, body));
      request.log.info({ endpoint: request.params.name, kind: result.kind }, 'rolled back');
      return result;
    },
  );

  app.get<Named & { Querystring: { limit: number; pageToken?: string; since?: string } }>(
    '/api/v1/endpoints/:name/history',
    { schema: { querystring: pagedSinceQuery } },
    async (request) => {
      const { limit, pageToken, since } = request.query;
      return traffic.history(request.params.name, {
        limit,
        pageToken,
        since: since === undefined ? undefined : new Date(parseTime('since', since)).toISOString(),
      });
    },
  );

  app.put<Named & { Body: ShadowsBody }>(
    '/api/v1/endpoints/:name/shadows',
    {
      schema: { body: shadowsBody },
      config: { access: teamAccess('change the traffic of endpoints', policyTeams) },
    },
    async (request) =>
      traffic.setShadows(request.params.name, request.body.shadows, context(request, request.body)),
  );

  app.delete<Named & { Querystring: { reason?: string } }>(
    '/api/v1/endpoints/:name/shadows',
    {
      schema: { querystring: reasonQuery },
      config: { access: teamAccess('change the traffic of endpoints', endpointTeams) },
    },
    async (request) => traffic.setShadows(request.params.name, [], context(request, request.query)),
  );

  app.get<Named & { Querystring: { since?: string } }>(
    '/api/v1/endpoints/:name/shadows/report',
    { schema: { querystring: reportQuery } },
    async (request) => {
      const since = request.query.since;
      const sinceMs =
        since === undefined
          ? traffic.clock.now() - defaultShadowWindowMs
          : parseTime('since', since);
      return traffic.shadowReport(request.params.name, sinceMs);
    },
  );

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

/** `{reason?, expectRevision?}`, or nothing at all. */
function reasonBodyOf(body: unknown): ReasonBody {
  if (body === undefined || body === null) return {};
  const fields = typeof body === 'object' && !Array.isArray(body) ? (body as ReasonBody) : null;
  const bad = (reason: string) => kilnError('KILN_VALIDATION_FAILED', { reason });
  if (fields === null) throw bad('body must be an object {reason?, expectRevision?}');
  for (const key of Object.keys(fields)) {
    if (key !== 'reason' && key !== 'expectRevision')
      throw bad(`body has unknown property ${JSON.stringify(key)}`);
  }
  const { reason: why, expectRevision } = fields;
  if (why !== undefined && (typeof why !== 'string' || why.length > 1024))
    throw bad('body/reason must be a string of at most 1024 characters');
  if (
    expectRevision !== undefined &&
    (typeof expectRevision !== 'number' ||
      !Number.isSafeInteger(expectRevision) ||
      expectRevision < 0)
  )
    throw bad('body/expectRevision must be an integer >= 0');
  return fields;
}

function parseTime(field: string, text: string): number {
  const ms = Date.parse(text);
  if (Number.isNaN(ms)) {
    throw kilnError(
      'KILN_VALIDATION_FAILED',
      { reason: `${field} ${JSON.stringify(text)} is not an ISO 8601 time` },
      { field },
    );
  }
  return ms;
}
