// Health, signing keys and policy, garbage collection.

import type { FastifyInstance } from 'fastify';
import { kilnError } from '../../core/errors.ts';
import type { Registry } from '../../registry/registry.ts';
import { checkName } from '../../registry/names.ts';
import { gcBody, signingPolicyBody, trustKeyBody } from './schemas.ts';
import { adminAccess, openAccess } from '../access-policy.ts';

export interface SystemInfo {
  readonly version: string;
  readonly home: string;
  /** The data plane's base URL ('' while the gateway is not running). */
  readonly gatewayUrl: () => string;
}

export function registerSystemRoutes(
  app: FastifyInstance,
  registry: Registry,
  info: SystemInfo,
): void {
  const store = registry.store;

  // Open, so liveness probes need no token; where the home is, only for a known caller.
  app.get('/api/v1/health', { config: { access: openAccess } }, (request) => ({
    status: 'ok',
    version: info.version,
    store: store.kind,
    ...(request.principal === null ? {} : { home: info.home }),
    gatewayUrl: info.gatewayUrl(),
  }));
  const manageKeys = adminAccess('manage trusted keys');

  app.get('/api/v1/trusted-keys', async () => ({ items: await store.listTrustedKeys() }));

  app.post<{ Body: { name: string; publicKey: string; team?: string } }>(
    '/api/v1/trusted-keys',
    { schema: { body: trustKeyBody }, config: { access: manageKeys } },
    async (request, reply) => {
      const { name, publicKey, team } = request.body;
      return reply.code(201).send(await registry.trustKey(name, publicKey, team ?? null));
    },
  );

  app.delete<{ Params: { keyId: string } }>(
    '/api/v1/trusted-keys/:keyId',
    { config: { access: manageKeys } },
    async (request) => {
      const removed = await store.removeTrustedKey(request.params.keyId);
      if (removed === null) throw kilnError('KILN_KEY_NOT_FOUND', { key: request.params.keyId });
      return removed;
    },
  );

  app.get('/api/v1/policy', async () => ({ signing: await store.getSigningPolicy() }));

  app.put<{ Body: { requireSignature: boolean; team?: string } }>(
    '/api/v1/policy/signing',
    {
      schema: { body: signingPolicyBody },
      config: { access: adminAccess('set the signing policy') },
    },
    async (request) => {
      const { requireSignature, team } = request.body;
      if (team !== undefined) checkName('team', team);
      return { signing: await store.setSigningPolicy(team ?? null, requireSignature) };
    },
  );

  app.post<{ Body: { dryRun: boolean; graceSeconds: number } | undefined }>(
    '/api/v1/gc',
    { schema: { body: gcBody }, config: { access: adminAccess('collect garbage') } },
    async (request) =>
      registry.collectGarbage({
        dryRun: request.body?.dryRun ?? false,
        graceSeconds: request.body?.graceSeconds ?? 3600,
      }),
  );
}
