// Reference profiles (issue 15 B): a version's training-data profile, the baseline that
// drift reports compare serving traffic with (training-serving skew).
//
//   PUT /api/v1/models/{name}/versions/{ref}/profile    replace (body: a DataProfile)
//   GET /api/v1/models/{name}/versions/{ref}/profile
//
// A profile is checked whole before it is stored (KILN_PROFILE_INVALID naming the field), and
// its feature and output names must be ones the version's workers see, when the version says
// which (schema, model feature names): a misspelt feature would otherwise never be compared.

import type { FastifyInstance, FastifyRequest } from 'fastify';
import { kilnError } from '../../core/errors.ts';
import { parseDataProfile } from '../../observability/profile/parse-data-profile.ts';
import {
  formatFeatureNames,
  unknownProfileNames,
} from '../../observability/profile/profile-names.ts';
import type { Registry } from '../../registry/registry.ts';
import { teamAccess } from '../access-policy.ts';
import { recheckTeams } from './access-control.ts';

const versionParams = {
  type: 'object',
  required: ['name', 'ref'],
  properties: { name: { type: 'string', maxLength: 256 }, ref: { type: 'string', maxLength: 256 } },
} as const;

export function registerProfileRoutes(app: FastifyInstance, registry: Registry): void {
  const store = registry.store;
  const modelTeams = async (request: FastifyRequest): Promise<readonly string[]> => {
    const model = await store.getModel((request.params as { name: string }).name);
    return model === null ? [] : [model.team];
  };

  app.put<{ Params: { name: string; ref: string }; Body: unknown }>(
    '/api/v1/models/:name/versions/:ref/profile',
    {
      schema: { params: versionParams },
      config: { access: teamAccess('register reference profiles', modelTeams) },
    },
    async (request) => {
      const model = await registry.requireModel(request.params.name);
      recheckTeams(request, [model.team]);
      const version = await registry.resolveVersion(model.name, request.params.ref);
      const source = `for ${model.name}:${version.version}`;
      const parsed = parseDataProfile(request.body);
      if (!parsed.ok) throw kilnError('KILN_PROFILE_INVALID', { source, reason: parsed.reason });
      const unknown = unknownProfileNames(parsed.value, {
        schema: version.schema,
        featureNames: formatFeatureNames(version.formatInfo),
      });
      if (unknown !== null) throw kilnError('KILN_PROFILE_INVALID', { source, reason: unknown });
      return store.setVersionProfile(model.name, version.version, parsed.value);
    },
  );

  app.get<{ Params: { name: string; ref: string } }>(
    '/api/v1/models/:name/versions/:ref/profile',
    { schema: { params: versionParams } },
    async (request) => {
      const version = await registry.resolveVersion(request.params.name, request.params.ref);
      const stored = await store.getVersionProfile(version.model, version.version);
      if (stored === null) {
        throw kilnError('KILN_PROFILE_NOT_FOUND', {
          model: version.model,
          version: version.version,
        });
      }
      return stored;
    },
  );
}
