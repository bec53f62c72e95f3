// /api/v1/tokens (control-plane bearer tokens) and /api/v1/audit (the log of mutating
// calls): admin only. A token is shown once, in the answer that creates it.

import { pagedSinceQuery } from './schemas.ts';
import type { FastifyInstance } from 'fastify';
import type { Clock } from '../../core/clock.ts';
import { kilnError } from '../../core/errors.ts';
import { checkName } from '../../registry/names.ts';
import { tokenRoles, type TokenRecord, type TokenRole } from '../../store/access-records.ts';
import type { Store } from '../../store/store.ts';
import { adminAccess } from '../access-policy.ts';
import { issueToken } from '../control-tokens.ts';

const shortString = { type: 'string', minLength: 1, maxLength: 256 } as const;

const tokenBody = {
  type: 'object',
  required: ['name', 'role'],
  additionalProperties: false,
  properties: {
    name: shortString,
    role: { type: 'string', enum: [...tokenRoles] },
    team: shortString,
    // Up to ten years; absent = never expires.
    expiresInSeconds: { type: 'integer', minimum: 1, maximum: 315_360_000 },
  },
} as const;

const tokenListQuery = {
  type: 'object',
  additionalProperties: false,
  properties: { includeRevoked: { type: 'boolean', default: false } },
} as const;

interface TokenBody {
  name: string;
  role: TokenRole;
  team?: string;
  expiresInSeconds?: number;
}

/** What lists and answers show of a token: everything but its digest. */
export type ShownToken = Omit<TokenRecord, 'sha256'>;

function shown({ sha256: _digest, ...token }: TokenRecord): ShownToken {
  return token;
}

export function registerAccessRoutes(app: FastifyInstance, store: Store, clock: Clock): void {
  const manageTokens = adminAccess('manage tokens');

  app.post<{ Body: TokenBody }>(
    '/api/v1/tokens',
    { schema: { body: tokenBody }, config: { access: manageTokens } },
    async (request, reply) => {
      const { name, role, team, expiresInSeconds } = request.body;
      checkName('token', name);
      if (role === 'deployer' && team === undefined)
        throw kilnError('KILN_VALIDATION_FAILED', {
          reason: 'a deployer token needs a team: it deploys within that team',
        });
      if (role !== 'deployer' && team !== undefined)
        throw kilnError('KILN_VALIDATION_FAILED', {
          reason: `only deployer tokens have a team (${role} tokens act on every team)`,
        });
      if (team !== undefined) checkName('team', team);
      const { token, record } = await issueToken(store, clock, {
        name,
        role,
        team: team ?? null,
        expiresInSeconds,
      });
      return reply.code(201).send({ ...shown(record), token });
    },
  );

  app.get<{ Querystring: { includeRevoked: boolean } }>(
    '/api/v1/tokens',
    { schema: { querystring: tokenListQuery }, config: { access: adminAccess('list tokens') } },
    async (request) => ({
      items: (await store.listTokens({ includeRevoked: request.query.includeRevoked })).map(shown),
    }),
  );

  app.delete<{ Params: { id: string } }>(
    '/api/v1/tokens/:id',
    { config: { access: manageTokens } },
    async (request) => {
      const revoked = await store.revokeToken(request.params.id);
      if (revoked === null) throw kilnError('KILN_TOKEN_NOT_FOUND', { token: request.params.id });
      return shown(revoked);
    },
  );

  app.get<{ Querystring: { limit: number; pageToken?: string; since?: string } }>(
    '/api/v1/audit',
    {
      schema: { querystring: pagedSinceQuery },
      config: { access: adminAccess('read the audit log') },
    },
    async (request) => {
      const { limit, pageToken, since } = request.query;
      let sinceIso: string | undefined;
      if (since !== undefined) {
        const ms = Date.parse(since);
        if (Number.isNaN(ms))
          throw kilnError('KILN_VALIDATION_FAILED', {
            reason: `since ${JSON.stringify(since)} is not an ISO 8601 time`,
          });
        sinceIso = new Date(ms).toISOString();
      }
      return store.listAudit({ limit, pageToken, since: sinceIso });
    },
  );
}
