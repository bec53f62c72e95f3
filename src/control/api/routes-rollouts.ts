// Rollouts (issue 13): canary and blue-green, started and steered per endpoint.
//
//   POST /api/v1/endpoints/{name}/rollout             start (body: model, version, strategy, steps, …)
//   GET  /api/v1/endpoints/{name}/rollout             the active one (else the latest) + live analysis
//   POST /api/v1/endpoints/{name}/rollout/{action}    pause | resume | promote | abort ({reason})
//   GET  /api/v1/rollouts?endpoint=&active=           list, newest first
//   GET  /api/v1/rollouts/{id}                        one, with its live analysis

import type { FastifyInstance, FastifyRequest } from 'fastify';
import { kilnError } from '../../core/errors.ts';
import type { Registry } from '../../registry/registry.ts';
import { teamAccess } from '../access-policy.ts';
import type { RolloutController } from '../traffic/rollout-controller.ts';
import type { RolloutStartRequest } from '../traffic/rollout-spec.ts';
import { actorOf } from '../traffic/traffic-service.ts';
import { recheckTeams } from './access-control.ts';

const shortString = { type: 'string', minLength: 1, maxLength: 256 } as const;
const nullableString = { type: ['string', 'null'], minLength: 1, maxLength: 256 } as const;

const startBody = {
  type: 'object',
  required: ['model', 'version'],
  additionalProperties: false,
  properties: {
    model: shortString,
    version: { type: 'integer', minimum: 1 },
    strategy: { type: 'string', enum: ['canary', 'blue-green'] },
    // Ranges are checked by resolveRolloutSpec, which names each bad field.
    steps: { type: 'array', items: { type: 'number' }, maxItems: 100 },
    intervalMs: { type: 'number' },
    thresholds: {
      type: 'object',
      additionalProperties: false,
      properties: {
        maxErrorRate: { type: 'number' },
        maxP99Ms: { type: 'number' },
        maxPsi: { type: 'number' },
        minRequests: { type: 'number' },
        minSliceRequests: { type: 'number' },
        alpha: { type: 'number' },
        psiBins: { type: 'number' },
      },
    },
    sliceKey: nullableString,
    slicePath: nullableString,
    reason: { type: 'string', maxLength: 1000 },
  },
} as const;

const actionBody = {
  type: ['object', 'null'],
  additionalProperties: false,
  properties: { reason: { type: 'string', maxLength: 1000 } },
} as const;

const listQuery = {
  type: 'object',
  additionalProperties: false,
  properties: { endpoint: shortString, active: { type: 'boolean' } },
} as const;

const actions = ['pause', 'resume', 'promote', 'abort'] as const;
type RolloutAction = (typeof actions)[number];

export function registerRolloutRoutes(
  app: FastifyInstance,
  registry: Registry,
  rollouts: RolloutController,
): void {
  const store = registry.store;
  const endpointTeams = async (request: FastifyRequest): Promise<readonly string[]> => {
    const existing = await store.getEndpoint((request.params as { name: string }).name);
    return existing === null ? [] : [existing.team];
  };

  app.post<{ Params: { name: string }; Body: RolloutStartRequest }>(
    '/api/v1/endpoints/:name/rollout',
    {
      schema: { body: startBody },
      config: {
        // The endpoint's team and the canary model's: a deployer rolls out its own models
        // on its own endpoints only.
        access: teamAccess('roll out endpoints', async (request) => {
          const model = await store.getModel((request.body as RolloutStartRequest).model);
          return [...(await endpointTeams(request)), ...(model === null ? [] : [model.team])];
        }),
      },
    },
    async (request, reply) => {
      const { name } = request.params;
      const body = request.body;
      const endpoint = await store.getEndpoint(name);
      if (endpoint === null) throw kilnError('KILN_ENDPOINT_NOT_FOUND', { endpoint: name });
      const model = await registry.requireModel(body.model);
      recheckTeams(request, [model.team]);
      // The version's checks (exists, trusted, servable, the endpoint's protocol) are the
      // controller's, so `kiln deploy --strategy canary` gets them too.
      const rollout = await rollouts.startRollout(name, body, actorOf(request));
      request.log.info({ endpoint: name, rollout: rollout.id }, 'rollout started');
      return reply.code(201).send(await rollouts.view(rollout));
    },
  );

  app.get<{ Params: { name: string } }>('/api/v1/endpoints/:name/rollout', async (request) => {
    const { name } = request.params;
    if ((await store.getEndpoint(name)) === null)
      throw kilnError('KILN_ENDPOINT_NOT_FOUND', { endpoint: name });
    const view = await rollouts.status(name);
    if (view === null)
      throw kilnError('KILN_ROLLOUT_NOT_FOUND', { rollout: `of endpoint ${name}` });
    return view;
  });

  app.post<{ Params: { name: string; action: string }; Body: { reason?: string } | null }>(
    '/api/v1/endpoints/:name/rollout/:action',
    {
      schema: { body: actionBody },
      config: { access: teamAccess('steer rollouts', endpointTeams) },
    },
    async (request) => {
      const { name, action } = request.params;
      if (!(actions as readonly string[]).includes(action))
        throw kilnError('KILN_ROUTE_NOT_FOUND', { method: 'POST', url: request.url });
      const actor = actorOf(request);
      const reason = request.body?.reason;
      const rollout = await run(rollouts, action as RolloutAction, name, actor, reason);
      return rollouts.view(rollout);
    },
  );

  app.get<{ Querystring: { endpoint?: string; active?: boolean } }>(
    '/api/v1/rollouts',
    { schema: { querystring: listQuery } },
    async (request) => {
      const { endpoint, active } = request.query;
      const items = await store.listRollouts({
        ...(endpoint === undefined ? {} : { endpoint }),
        ...(active === undefined ? {} : { active }),
      });
      return { items };
    },
  );

  app.get<{ Params: { id: string } }>('/api/v1/rollouts/:id', async (request) => {
    const rollout = await store.getRollout(request.params.id);
    if (rollout === null) throw kilnError('KILN_ROLLOUT_NOT_FOUND', { rollout: request.params.id });
    return rollouts.view(rollout);
  });
}

function run(
  rollouts: RolloutController,
  action: RolloutAction,
  endpoint: string,
  actor: string,
  reason: string | undefined,
): ReturnType<RolloutController['pause']> {
  switch (action) {
    case 'pause':
      return rollouts.pause(endpoint, actor, reason);
    case 'resume':
      return rollouts.resume(endpoint, actor, reason);
    case 'promote':
      return rollouts.promote(endpoint, actor, reason);
    case 'abort':
      return rollouts.abort(endpoint, actor, reason);
  }
}
