// /api/v1/teams/{team}/limits: per-team request rates, enforced by every gateway with a
// token bucket (published in the routing snapshot's `teamLimits`).

import type { FastifyInstance } from 'fastify';
import { kilnError } from '../../core/errors.ts';
import { checkName } from '../../registry/names.ts';
import type { Store } from '../../store/store.ts';
import type { Reconciler } from '../reconciler.ts';
import { adminAccess } from '../access-policy.ts';

const teamLimitBody = {
  type: 'object',
  required: ['requestsPerSecond', 'burst'],
  additionalProperties: false,
  properties: {
    requestsPerSecond: { type: 'number', exclusiveMinimum: 0, maximum: 1_000_000 },
    burst: { type: 'integer', minimum: 1, maximum: 1_000_000 },
  },
} as const;

export function registerTeamLimitRoutes(
  app: FastifyInstance,
  store: Store,
  reconciler: Reconciler,
): void {
  app.get('/api/v1/teams/limits', async () => ({ items: await store.listTeamLimits() }));
  const setLimits = adminAccess('set team rate limits');

  app.put<{ Params: { team: string }; Body: { requestsPerSecond: number; burst: number } }>(
    '/api/v1/teams/:team/limits',
    { schema: { body: teamLimitBody }, config: { access: setLimits } },
    async (request) => {
      const { team } = request.params;
      checkName('team', team);
      const { requestsPerSecond, burst } = request.body;
      const limit = await store.setTeamLimit({ team, requestsPerSecond, burst });
      await reconciler.trigger();
      return limit;
    },
  );

  app.delete<{ Params: { team: string } }>(
    '/api/v1/teams/:team/limits',
    { config: { access: setLimits } },
    async (request) => {
      const { team } = request.params;
      checkName('team', team);
      const removed = await store.deleteTeamLimit(team);
      if (removed === null) throw kilnError('KILN_TEAM_LIMIT_NOT_FOUND', { team });
      await reconciler.trigger();
      return removed;
    },
  );
}
