// /api/v1/endpoints, /api/v1/api-keys, the gateway's routing-snapshot long-poll, and (from
// routes-team-limits.ts) /api/v1/teams/{team}/limits.

import { createHash, randomBytes } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { kilnError } from '../../core/errors.ts';
import { checkName } from '../../registry/names.ts';
import type { Store } from '../../store/store.ts';
import type { DeployRequest, EndpointService } from '../endpoints.ts';
import type { Reconciler } from '../reconciler.ts';
import type { RoutingTable } from '../routing-table.ts';
import { adminAccess, routingAccess, teamAccess } from '../access-policy.ts';
import type { EndpointRecord } from '../../store/serving-records.ts';
import { recheckTeams } from './access-control.ts';
import { registerTeamLimitRoutes } from './routes-team-limits.ts';
import { actorOf } from '../traffic/traffic-service.ts';
import { maxWarmGraceMs } from '../traffic/traffic-settings.ts';

const shortString = { type: 'string', minLength: 1, maxLength: 256 } as const;

const deployBody = {
  type: 'object',
  required: ['model'],
  additionalProperties: false,
  properties: {
    model: shortString,
    version: { type: 'integer', minimum: 1 },
    alias: shortString,
    replicas: { type: 'integer', minimum: 0, maximum: 64 },
    team: shortString,
    // At most a week: a version kept running longer is a policy's job, not a grace period.
    warmGraceMs: { type: 'integer', minimum: 0, maximum: maxWarmGraceMs },
    config: {
      type: 'object',
      additionalProperties: false,
      properties: {
        intraOpThreads: { type: 'integer', minimum: 0, maximum: 256 },
        interOpThreads: { type: 'integer', minimum: 0, maximum: 256 },
        graphOptimizationLevel: { type: 'string', enum: ['disabled', 'basic', 'extended', 'all'] },
        maxBodyBytes: { type: 'integer', minimum: 1024, maximum: 1024 ** 3 },
        // null = off; absent = the runtime's default; missing fields take the ONNX defaults.
        batching: {
          type: ['object', 'null'],
          additionalProperties: false,
          properties: {
            maxBatchSize: { type: 'integer', minimum: 1, maximum: 4096 },
            maxDelayMicros: { type: 'integer', minimum: 0, maximum: 1_000_000 },
            preferredBatchSizes: {
              type: 'array',
              items: { type: 'integer', minimum: 1, maximum: 4096 },
              maxItems: 16,
              uniqueItems: true,
            },
            maxQueue: { type: 'integer', minimum: 1, maximum: 100_000 },
            // false: always gather by the fixed rule (default: adaptive).
            adaptive: { type: 'boolean' },
          },
        },
        timeoutMs: { type: 'integer', minimum: 1, maximum: 3_600_000 },
        maxConcurrency: { type: 'integer', minimum: 1, maximum: 1_000_000 },
        // A worker pool's name (issue 14): pool-deploy-check.ts says what may run there.
        pool: shortString,
        // Its fields are checked by resolveAutoscalePolicy at deploy (each problem named).
        autoscale: { type: 'object', maxProperties: 64 },
        // Placement (issue 14): checked whole by the deploy (resource-request.ts), naming the field.
        resources: { type: 'object' },
        // Issue 15: checked whole at deploy by resolveObservabilityConfig, naming the field.
        observability: { type: 'object', maxProperties: 16 },
        // hf-llm only. Types here; ranges, the format and the model's own limits are checked
        // by the deploy (llm-deploy-check.ts), with messages that say what would work.
        llm: {
          type: 'object',
          additionalProperties: false,
          properties: {
            kvCacheBytes: { type: 'integer' },
            blockSize: { type: 'integer' },
            maxNumSeqs: { type: 'integer' },
            maxNumBatchedTokens: { type: 'integer' },
            maxWaiting: { type: 'integer' },
            prefixCaching: { type: 'boolean' },
            threads: { type: 'integer' },
            maxN: { type: 'integer' },
            streamBufferBytes: { type: 'integer' },
            slowReaderTimeoutMs: { type: 'integer' },
            maxPausedBlocks: { type: 'integer' },
          },
        },
      },
    },
  },
} as const;

const apiKeyBody = {
  type: 'object',
  required: ['name'],
  additionalProperties: false,
  properties: { name: shortString, team: shortString, endpoint: shortString },
} as const;

const snapshotQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    after: { type: 'integer', minimum: 0 },
    waitMs: { type: 'integer', minimum: 0, maximum: 60_000, default: 25_000 },
    // The polling gateway process (issue 16: drains wait for every one of them).
    gateway: { type: 'string', maxLength: 128 },
  },
} as const;

export function registerServingRoutes(
  app: FastifyInstance,
  store: Store,
  endpoints: EndpointService,
  reconciler: Reconciler,
  /** Where gateways' snapshots come from (issue 17: a follower serves the leader's). */
  routing: () => RoutingTable = () => reconciler.routing,
): void {
  app.get('/api/v1/endpoints', async () => ({ items: await endpoints.list() }));

  app.get<{ Params: { name: string } }>('/api/v1/endpoints/:name', async (request) =>
    endpoints.get(request.params.name),
  );

  // A deploy touches the endpoint's current team (if it exists), the team it will have, and
  // the model's: a deployer may use only its own team's models, in its own team's endpoints.
  const deployTeams = async (name: string, body: DeployRequest): Promise<readonly string[]> => {
    const [existing, model] = await Promise.all([
      store.getEndpoint(name),
      store.getModel(body.model),
    ]);
    const teams = [existing?.team, model?.team, body.team ?? model?.team];
    return teams.filter((team): team is string => team !== undefined);
  };
  const endpointTeams = async (name: string): Promise<readonly string[]> => {
    const existing = await store.getEndpoint(name);
    return existing === null ? [] : [existing.team];
  };
  const manageApiKeys = adminAccess('manage API keys');
  // Checked again in the store's write: an endpoint another team created or took since the
  // preHandler's check is refused, not overwritten.
  const sameTeams = (request: FastifyRequest) => ({
    check: (existing: EndpointRecord | null) =>
      recheckTeams(request, existing === null ? [] : [existing.team]),
  });

  app.put<{ Params: { name: string }; Body: DeployRequest }>(
    '/api/v1/endpoints/:name',
    {
      schema: { body: deployBody },
      config: {
        access: teamAccess('deploy endpoints', (request) =>
          deployTeams((request.params as { name: string }).name, request.body as DeployRequest),
        ),
      },
    },
    async (request, reply) => {
      const { endpoint, created } = await endpoints.deploy(request.params.name, request.body, {
        ...sameTeams(request),
        actor: actorOf(request),
        // A model is never deleted and its team never changes: one read is the one used.
        checkModel: (model) => recheckTeams(request, [model.team, request.body.team ?? model.team]),
      });
      request.log.info({ endpoint: endpoint.name, version: endpoint.version }, 'endpoint deployed');
      return reply.code(created ? 201 : 200).send(endpoint);
    },
  );

  app.delete<{ Params: { name: string } }>(
    '/api/v1/endpoints/:name',
    {
      config: {
        access: teamAccess('delete endpoints', (request) =>
          endpointTeams((request.params as { name: string }).name),
        ),
      },
    },
    async (request) =>
      endpoints.delete(request.params.name, { ...sameTeams(request), actor: actorOf(request) }),
  );

  app.get('/api/v1/api-keys', async () => ({
    items: (await store.listApiKeys()).map(({ sha256: _hash, ...key }) => key),
  }));

  app.post<{ Body: { name: string; team?: string; endpoint?: string } }>(
    '/api/v1/api-keys',
    { schema: { body: apiKeyBody }, config: { access: manageApiKeys } },
    async (request, reply) => {
      const { name, team, endpoint } = request.body;
      if ((team === undefined) === (endpoint === undefined)) {
        throw kilnError('KILN_VALIDATION_FAILED', {
          reason: 'give exactly one of team or endpoint',
        });
      }
      checkName('key', name);
      if (team !== undefined) checkName('team', team);
      if (endpoint !== undefined) checkName('endpoint', endpoint);
      const key = `kiln_${randomBytes(24).toString('base64url')}`;
      const record = await store.addApiKey({
        id: randomBytes(6).toString('hex'),
        name,
        sha256: createHash('sha256').update(key).digest('hex'),
        prefix: key.slice(0, 12),
        team: team ?? null,
        endpoint: endpoint ?? null,
      });
      await reconciler.trigger();
      const { sha256: _hash, ...shown } = record;
      return reply.code(201).send({ ...shown, key });
    },
  );

  app.delete<{ Params: { id: string } }>(
    '/api/v1/api-keys/:id',
    { config: { access: manageApiKeys } },
    async (request) => {
      const revoked = await store.revokeApiKey(request.params.id);
      if (revoked === null) throw kilnError('KILN_API_KEY_NOT_FOUND', { key: request.params.id });
      await reconciler.trigger();
      const { sha256: _hash, ...shown } = revoked;
      return shown;
    },
  );

  app.get<{ Querystring: { after?: number; waitMs: number; gateway?: string } }>(
    '/api/v1/routing/snapshot',
    { schema: { querystring: snapshotQuery }, config: { access: routingAccess } },
    async (request, reply) => {
      const controller = new AbortController();
      reply.raw.once('close', () => controller.abort());
      const snapshot = await routing().waitForNewer(
        request.query.after ?? 0,
        request.query.waitMs,
        controller.signal,
        request.query.gateway ?? '',
      );
      if (snapshot === null) return reply.code(204).send();
      return snapshot;
    },
  );

  registerTeamLimitRoutes(app, store, reconciler);
}
