// Golden sets (issue 13): input/output pairs registered with a version, reproduced against
// one of its replicas before a blue-green switch gives it traffic.
//
//   PUT /api/v1/models/{name}/versions/{ref}/golden    replace (body: golden-set-input.ts)
//   GET /api/v1/models/{name}/versions/{ref}/golden

import type { FastifyInstance, FastifyRequest } from 'fastify';
import { kilnError } from '../../core/errors.ts';
import type { Registry } from '../../registry/registry.ts';
import { teamAccess } from '../access-policy.ts';
import { parseGoldenSet } from '../traffic/golden-set-input.ts';
import { recheckTeams } from './access-control.ts';

const versionParams = {
  type: 'object',
  required: ['name', 'ref'],
  properties: { name: { type: 'string', maxLength: 256 }, ref: { type: 'string', maxLength: 256 } },
} as const;

export function registerGoldenRoutes(app: FastifyInstance, registry: Registry): void {
  const store = registry.store;
  const modelTeams = async (request: FastifyRequest): Promise<readonly string[]> => {
    const model = await store.getModel((request.params as { name: string }).name);
    return model === null ? [] : [model.team];
  };

  app.put<{ Params: { name: string; ref: string }; Body: unknown }>(
    '/api/v1/models/:name/versions/:ref/golden',
    {
      schema: { params: versionParams },
      config: { access: teamAccess('register golden sets', modelTeams) },
    },
    async (request) => {
      const model = await registry.requireModel(request.params.name);
      recheckTeams(request, [model.team]);
      const version = await registry.resolveVersion(model.name, request.params.ref);
      const golden = parseGoldenSet(model.name, version.version, request.body);
      return store.setGoldenSet(golden);
    },
  );

  app.get<{ Params: { name: string; ref: string } }>(
    '/api/v1/models/:name/versions/:ref/golden',
    { schema: { params: versionParams } },
    async (request) => {
      const version = await registry.resolveVersion(request.params.name, request.params.ref);
      const golden = await store.getGoldenSet(version.model, version.version);
      if (golden === null)
        throw kilnError('KILN_GOLDEN_SET_NOT_FOUND', {
          model: version.model,
          version: version.version,
        });
      return golden;
    },
  );
}
