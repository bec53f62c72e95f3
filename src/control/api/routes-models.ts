// /api/v1/models…: models, versions, aliases, lineage.

import type { FastifyInstance, FastifyRequest } from 'fastify';
import { kilnError } from '../../core/errors.ts';
import type { Registry, RegisterVersionRequest } from '../../registry/registry.ts';
import type { Store } from '../../store/store.ts';
import { teamAccess } from '../access-policy.ts';
import type { Model } from '../../registry/types.ts';
import { recheckTeams } from './access-control.ts';
import {
  aliasBody,
  createModelBody,
  lineageQuery,
  modelNameParams,
  pageQuery,
  registerVersionBody,
} from './schemas.ts';

interface PageQuery {
  limit: number;
  pageToken?: string;
  team?: string;
  includeDeleted: boolean;
}

interface LineageQueryString {
  limit: number;
  pageToken?: string;
  dataset?: string;
  datasetVersion?: string;
  run?: string;
  experiment?: string;
}

const versionParams = {
  type: 'object',
  required: ['name', 'ref'],
  properties: { name: { type: 'string', maxLength: 256 }, ref: { type: 'string', maxLength: 256 } },
} as const;

const aliasParams = {
  type: 'object',
  required: ['name', 'alias'],
  properties: {
    name: { type: 'string', maxLength: 256 },
    alias: { type: 'string', maxLength: 256 },
  },
} as const;

function versionNumber(ref: string, model: string): number {
  if (!/^\d{1,9}$/.test(ref) || Number(ref) < 1) {
    throw kilnError('KILN_VERSION_NOT_FOUND', { model, version: ref });
  }
  return Number(ref);
}

/** The team of the model the call names (none when there is no such model: 404 follows). */
async function modelTeams(store: Store, request: FastifyRequest): Promise<readonly string[]> {
  const model = await store.getModel((request.params as { name: string }).name);
  return model === null ? [] : [model.team];
}

export function registerModelRoutes(app: FastifyInstance, registry: Registry): void {
  const store = registry.store;
  const ofModel = (request: FastifyRequest): Promise<readonly string[]> =>
    modelTeams(store, request);
  // The model the call acts on, with a deployer's team checked again on this read: preHandler
  // found no model (so allowed the call, to answer 404), but another team may have created it
  // since. A model is never deleted and its team never changes, so once read it stays so.
  const requireOwnModel = async (request: FastifyRequest, name: string): Promise<Model> => {
    const model = await registry.requireModel(name);
    recheckTeams(request, [model.team]);
    return model;
  };

  app.post<{ Body: { name: string; team?: string; description?: string } }>(
    '/api/v1/models',
    {
      schema: { body: createModelBody },
      config: {
        access: teamAccess('create models', (request) =>
          Promise.resolve([(request.body as { team?: string }).team ?? 'default']),
        ),
      },
    },
    async (request, reply) => {
      const { name, team, description } = request.body;
      const model = await registry.createModel(name, team, description);
      return reply.code(201).send(model);
    },
  );

  app.get<{ Querystring: PageQuery }>(
    '/api/v1/models',
    { schema: { querystring: pageQuery } },
    async (request) =>
      store.listModels({
        limit: request.query.limit,
        pageToken: request.query.pageToken,
        team: request.query.team,
      }),
  );

  app.get<{ Params: { name: string } }>(
    '/api/v1/models/:name',
    { schema: { params: modelNameParams } },
    async (request) => registry.requireModel(request.params.name),
  );

  app.post<{ Params: { name: string }; Body: RegisterVersionRequest }>(
    '/api/v1/models/:name/versions',
    {
      schema: { params: modelNameParams, body: registerVersionBody },
      config: {
        // An existing model's team; else the team it would be created in.
        access: teamAccess('register versions', async (request) => {
          const existing = await ofModel(request);
          const create = (request.body as RegisterVersionRequest).createModel;
          if (existing.length > 0 || create === undefined) return existing;
          return [create.team ?? 'default'];
        }),
      },
    },
    async (request, reply) => {
      // The model as registration reads it, checked again (see requireOwnModel); one it
      // creates is the team preHandler checked, or refused by the store (KILN_MODEL_EXISTS).
      const version = await registry.registerVersion(request.params.name, request.body, {
        checkModel: (model) => recheckTeams(request, [model.team]),
      });
      request.log.info({ model: version.model, version: version.version }, 'version registered');
      return reply.code(201).send(version);
    },
  );

  app.get<{ Params: { name: string }; Querystring: PageQuery }>(
    '/api/v1/models/:name/versions',
    { schema: { params: modelNameParams, querystring: pageQuery } },
    async (request) => {
      await registry.requireModel(request.params.name);
      return store.listVersions(request.params.name, {
        limit: request.query.limit,
        pageToken: request.query.pageToken,
        includeDeleted: request.query.includeDeleted,
      });
    },
  );

  app.get<{ Params: { name: string; ref: string } }>(
    '/api/v1/models/:name/versions/:ref',
    { schema: { params: versionParams } },
    async (request) => registry.resolveVersion(request.params.name, request.params.ref),
  );

  app.delete<{ Params: { name: string; ref: string } }>(
    '/api/v1/models/:name/versions/:ref',
    {
      schema: { params: versionParams },
      config: { access: teamAccess('delete versions', ofModel) },
    },
    async (request) => {
      await requireOwnModel(request, request.params.name);
      return store.deleteVersion(
        request.params.name,
        versionNumber(request.params.ref, request.params.name),
      );
    },
  );

  app.post<{ Params: { name: string; ref: string } }>(
    '/api/v1/models/:name/versions/:ref/verify',
    {
      schema: { params: versionParams },
      config: { access: teamAccess('verify versions', ofModel) },
    },
    async (request) => {
      await requireOwnModel(request, request.params.name);
      return registry.verifyVersion(request.params.name, request.params.ref);
    },
  );

  app.get<{ Params: { name: string } }>(
    '/api/v1/models/:name/aliases',
    { schema: { params: modelNameParams } },
    async (request) => {
      await registry.requireModel(request.params.name);
      return { items: await store.listAliases(request.params.name) };
    },
  );

  app.put<{ Params: { name: string; alias: string }; Body: { version: number } }>(
    '/api/v1/models/:name/aliases/:alias',
    {
      schema: { params: aliasParams, body: aliasBody },
      config: { access: teamAccess('move aliases', ofModel) },
    },
    async (request) => {
      const { name, alias } = request.params;
      await requireOwnModel(request, name);
      const { previousVersion } = await registry.setAlias(name, alias, request.body.version);
      return { alias, version: request.body.version, previousVersion };
    },
  );

  app.delete<{ Params: { name: string; alias: string } }>(
    '/api/v1/models/:name/aliases/:alias',
    { schema: { params: aliasParams }, config: { access: teamAccess('move aliases', ofModel) } },
    async (request) => {
      const { name, alias } = request.params;
      await requireOwnModel(request, name);
      const removed = await store.deleteAlias(name, alias);
      if (removed === null) throw kilnError('KILN_ALIAS_NOT_FOUND', { model: name, alias });
      return { alias: removed.alias, version: removed.version };
    },
  );

  app.get<{ Querystring: LineageQueryString }>(
    '/api/v1/lineage',
    { schema: { querystring: lineageQuery } },
    async (request) => {
      const q = request.query;
      if (q.dataset === undefined && q.run === undefined && q.experiment === undefined) {
        throw kilnError('KILN_VALIDATION_FAILED', {
          reason: 'give at least one of the query parameters dataset, run or experiment',
        });
      }
      return store.findByLineage(
        {
          datasetUri: q.dataset,
          datasetVersion: q.datasetVersion,
          run: q.run,
          experiment: q.experiment,
        },
        { limit: q.limit, pageToken: q.pageToken },
      );
    },
  );
}
