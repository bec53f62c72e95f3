// /api/v1/pools: shared worker pools (issue 14, docs/pools.md). A pool is N workers, each
// holding the most recently used of the models deployed on it within a memory budget. The
// reconciler runs the workers (pool-workers.ts); what each holds is asked of the workers.

import type { FastifyInstance } from 'fastify';
import { kilnError } from '../../core/errors.ts';
import { checkName } from '../../registry/names.ts';
import type { Store } from '../../store/store.ts';
import type { PoolRecord } from '../../store/scaling-records.ts';
import type { PoolWorkerStatus } from '../../protocol/pool/pool-protocol.ts';
import type { Reconciler } from '../reconciler.ts';
import { readAccess, teamAccess } from '../access-policy.ts';
import { recheckTeams } from './access-control.ts';
import { poolWorkerEndpoint } from '../pools/pool-workers.ts';

/** Most workers one pool runs (each is a process on this host). */
const maxPoolWorkers = 64;

const poolBody = {
  type: 'object',
  required: ['workers', 'memoryBudgetBytes'],
  additionalProperties: false,
  properties: {
    workers: { type: 'integer', minimum: 1, maximum: maxPoolWorkers },
    memoryBudgetBytes: { type: 'integer', minimum: 1, maximum: 2 ** 50 },
    team: { type: 'string', minLength: 1, maxLength: 256 },
  },
} as const;

interface PoolBody {
  readonly workers: number;
  readonly memoryBudgetBytes: number;
  readonly team?: string;
}

export interface PoolWorkerView {
  readonly id: string;
  readonly state: string;
  readonly url: string | null;
  readonly pid: number | null;
  readonly restarts: number;
  readonly reason: string | null;
  /** What it holds (asked of it); null when not ready or not reachable. */
  readonly status: PoolWorkerStatus | null;
}

export interface PoolView extends PoolRecord {
  /** Endpoints deployed on it. */
  readonly endpoints: readonly string[];
  readonly workerStates: readonly PoolWorkerView[];
}

export function registerPoolRoutes(
  app: FastifyInstance,
  store: Store,
  reconciler: Reconciler,
): void {
  const view = async (pool: PoolRecord, withStatus: boolean): Promise<PoolView> => {
    const endpoints = (await store.listEndpoints())
      .filter((e) => e.config.pool === pool.name)
      .map((e) => e.name);
    const replicas = reconciler.replicaStatus(poolWorkerEndpoint(pool.name));
    const statuses = withStatus
      ? new Map((await reconciler.pools.status(pool.name, replicas)).map((s) => [s.id, s.status]))
      : new Map<string, PoolWorkerStatus | null>();
    return {
      ...pool,
      endpoints,
      workerStates: replicas
        .filter((r) => r.state !== 'stopping')
        .map((r) => ({
          id: r.id,
          state: r.state,
          url: r.url,
          pid: r.pid,
          restarts: r.restarts,
          reason: r.reason,
          status: statuses.get(r.id) ?? null,
        })),
    };
  };
  const poolTeams = async (name: string, team?: string): Promise<readonly string[]> => {
    const existing = await store.getPool(name);
    return [existing?.team, team ?? existing?.team ?? 'default'].filter(
      (t): t is string => t !== undefined,
    );
  };

  app.get('/api/v1/pools', { config: { access: readAccess } }, async () => ({
    items: await Promise.all((await store.listPools()).map((p) => view(p, false))),
  }));

  app.get<{ Params: { name: string } }>(
    '/api/v1/pools/:name',
    { config: { access: readAccess } },
    async (request) => {
      const pool = await store.getPool(request.params.name);
      if (pool === null) throw kilnError('KILN_POOL_NOT_FOUND', { pool: request.params.name });
      return view(pool, true);
    },
  );

  app.put<{ Params: { name: string }; Body: PoolBody }>(
    '/api/v1/pools/:name',
    {
      schema: { body: poolBody },
      config: {
        access: teamAccess('manage worker pools', (request) =>
          poolTeams((request.params as { name: string }).name, (request.body as PoolBody).team),
        ),
      },
    },
    async (request, reply) => {
      const { name } = request.params;
      checkName('pool', name);
      const existing = await store.getPool(name);
      const team = request.body.team ?? existing?.team ?? 'default';
      checkName('team', team);
      recheckTeams(request, [team, ...(existing === null ? [] : [existing.team])]);
      if (existing !== null && existing.team !== team) {
        const onPool = (await store.listEndpoints()).filter((e) => e.config.pool === name);
        if (onPool.length > 0)
          throw kilnError('KILN_POOL_IN_USE', {
            pool: name,
            endpoints: onPool.map((e) => e.name).join(', '),
          });
      }
      const pool = await store.putPool({
        name,
        team,
        workers: request.body.workers,
        memoryBudgetBytes: request.body.memoryBudgetBytes,
      });
      await reconciler.trigger();
      return reply.code(existing === null ? 201 : 200).send(await view(pool, false));
    },
  );

  app.delete<{ Params: { name: string } }>(
    '/api/v1/pools/:name',
    {
      config: {
        access: teamAccess('manage worker pools', (request) =>
          store
            .getPool((request.params as { name: string }).name)
            .then((p) => (p === null ? [] : [p.team])),
        ),
      },
    },
    async (request) => {
      const removed = await store.deletePool(request.params.name);
      if (removed === null) throw kilnError('KILN_POOL_NOT_FOUND', { pool: request.params.name });
      await reconciler.trigger();
      return removed;
    },
  );
}
