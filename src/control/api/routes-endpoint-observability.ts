// An endpoint's observability settings (issue 15), changed without a redeploy and without
// restarting a replica (endpoint-observability.ts):
//
//   GET    /api/v1/endpoints/{name}/observability              read  the settings in force
//   PUT    /api/v1/endpoints/{name}/observability              team  replace them whole
//   DELETE /api/v1/endpoints/{name}/observability[?part=P]     team  take one part (or all) off

import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Store } from '../../store/store.ts';
import { teamAccess } from '../access-policy.ts';
import {
  observabilityParts,
  type EndpointObservability,
  type ObservabilityPart,
} from '../observability/endpoint-observability.ts';

type Named = { Params: { name: string } };

/** Each part's fields are checked by resolveObservabilityConfig, naming the field. */
const settingsBody = { type: 'object', maxProperties: 16 } as const;

const clearQuery = {
  type: 'object',
  additionalProperties: false,
  properties: { part: { type: 'string', enum: [...observabilityParts] } },
} as const;

export function registerEndpointObservabilityRoutes(
  app: FastifyInstance,
  store: Store,
  settings: EndpointObservability,
): void {
  const endpointTeams = async (request: FastifyRequest): Promise<string[]> => {
    const endpoint = await store.getEndpoint((request.params as { name: string }).name);
    return endpoint === null ? [] : [endpoint.team];
  };
  const change = teamAccess('change the observability of endpoints', endpointTeams);

  app.get<Named>('/api/v1/endpoints/:name/observability', async (request) =>
    settings.get(request.params.name),
  );

  app.put<Named & { Body: Record<string, unknown> }>(
    '/api/v1/endpoints/:name/observability',
    { schema: { body: settingsBody }, config: { access: change } },
    async (request) => settings.set(request.params.name, request.body),
  );

  app.delete<Named & { Querystring: { part?: ObservabilityPart } }>(
    '/api/v1/endpoints/:name/observability',
    { schema: { querystring: clearQuery }, config: { access: change } },
    async (request) => settings.clear(request.params.name, request.query.part),
  );
}
