// PostgreSQL store, scaling tables (migration 6): the counterpart of sqlite-scaling.ts — each
// autoscaled endpoint's current count, the history of scale events, the gateways' demand
// merged per minute, and the shared worker pools. Same semantics, same errors (the checks and
// row mapping are scaling-rows.ts, shared with SQLite); the contract suite runs on both.
//
// A count and its event are written in one write transaction, so the history never shows a
// change the count did not make (nor the reverse), whichever control plane writes.

import { kilnError } from '../../core/errors.ts';
import { isoAt, type Clock } from '../../core/clock.ts';
import type { Store } from '../store.ts';
import type {
  DemandRow,
  EndpointScaleRecord,
  NewPool,
  PoolRecord,
  ScaleChange,
  ScaleEvent,
} from '../scaling-records.ts';
import {
  checkPool,
  checkPoolUnused,
  checkReplicas,
  checkScaleChange,
  demandMinute,
  mergedDemandValues,
  scaleEventQuery,
  scaleEventValues,
  toDemand,
  toPool,
  toScale,
  toScaleEvent,
  type DemandDbRow,
  type PoolRow,
  type ScaleEventRow,
  type ScaleRow,
} from '../scaling-rows.ts';
import type { PgDatabase, PgQueryable } from './pg-database.ts';
import { pgListTimeKeyedRows, pgPruneTimeKeyedRows } from './pg-time-keyed-rows.ts';

export type ScalingTablesMethods = Pick<
  Store,
  | 'getEndpointScale'
  | 'listEndpointScales'
  | 'setEndpointScale'
  | 'listScaleEvents'
  | 'mergeDemand'
  | 'listDemand'
  | 'pruneDemand'
  | 'putPool'
  | 'getPool'
  | 'listPools'
  | 'deletePool'
>;

async function scaleOf(c: PgQueryable, endpoint: string): Promise<EndpointScaleRecord | null> {
  const row = (
    await c.query<ScaleRow>('SELECT * FROM endpoint_scale WHERE endpoint = $1', [endpoint])
  ).rows[0];
  return row === undefined ? null : toScale(row);
}

async function poolOf(c: PgQueryable, name: string): Promise<PoolRecord | null> {
  const row = (await c.query<PoolRow>('SELECT * FROM pools WHERE name = $1', [name])).rows[0];
  return row === undefined ? null : toPool(row);
}

export class PgScalingTables implements ScalingTablesMethods {
  constructor(
    readonly db: PgDatabase,
    readonly clock: Clock,
  ) {}

  // ------------------------------------------------------------ endpoint counts

  getEndpointScale(endpoint: string): Promise<EndpointScaleRecord | null> {
    return this.db.read((c) => scaleOf(c, endpoint));
  }

  async listEndpointScales(): Promise<readonly EndpointScaleRecord[]> {
    const rows = await this.db.read((c) =>
      c.query<ScaleRow>('SELECT * FROM endpoint_scale ORDER BY endpoint COLLATE "C"'),
    );
    return rows.rows.map(toScale);
  }

  setEndpointScale(change: ScaleChange): Promise<EndpointScaleRecord> {
    return this.db.write(async (c) => {
      const endpoint = change.endpoint;
      checkReplicas(change);
      const exists = await c.query('SELECT 1 FROM endpoints WHERE name = $1', [endpoint]);
      if (exists.rows.length === 0) throw kilnError('KILN_ENDPOINT_NOT_FOUND', { endpoint });
      const lastDemandAt = checkScaleChange(change, await scaleOf(c, endpoint));
      const now = isoAt(this.clock);
      if (change.event !== undefined) {
        await c.query(
          `INSERT INTO scale_events (endpoint, at, kind, from_replicas, to_replicas, mode,
             reason) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
          scaleEventValues(endpoint, change.event, now),
        );
      }
      const row = (
        await c.query<ScaleRow>(
          `INSERT INTO endpoint_scale (endpoint, replicas, reason, last_demand_at, updated_at)
           VALUES ($1, $2, $3, $4, $5)
           ON CONFLICT (endpoint) DO UPDATE SET replicas = EXCLUDED.replicas,
             reason = EXCLUDED.reason, last_demand_at = EXCLUDED.last_demand_at,
             updated_at = EXCLUDED.updated_at
           RETURNING *`,
          [endpoint, change.replicas, change.reason, lastDemandAt, now],
        )
      ).rows[0];
      if (row === undefined) throw kilnError('KILN_INTERNAL', { reason: 'scale row not written' });
      return toScale(row);
    });
  }

  async listScaleEvents(query: {
    readonly endpoint?: string;
    readonly since?: string;
    readonly limit?: number;
  }): Promise<readonly ScaleEvent[]> {
    const { limit, since } = scaleEventQuery(query);
    const where: string[] = [];
    const values: unknown[] = [];
    if (query.endpoint !== undefined) {
      values.push(query.endpoint);
      where.push(`endpoint = $${values.length}`);
    }
    if (since !== null) {
      values.push(since);
      where.push(`at COLLATE "C" >= $${values.length}`);
    }
    values.push(limit);
    const rows = await this.db.read((c) =>
      c.query<ScaleEventRow>(
        `SELECT * FROM scale_events ${where.length === 0 ? '' : `WHERE ${where.join(' AND ')}`}
         ORDER BY id DESC LIMIT $${values.length}`,
        values,
      ),
    );
    return rows.rows.map(toScaleEvent);
  }

  // ------------------------------------------------------------ demand history

  /**
   * Adds rows into the stored minute rows in one transaction; a row that is not valid (a
   * minuteStart off a whole minute, a negative count, a sketch that does not parse or whose
   * accuracy differs from the stored one) refuses the whole call.
   */
  async mergeDemand(rows: readonly DemandRow[]): Promise<void> {
    await this.db.write(async (c) => {
      for (const [i, row] of rows.entries()) {
        const minuteMs = demandMinute(row, i);
        const stored = (
          await c.query<DemandDbRow>(
            'SELECT * FROM demand_history WHERE endpoint = $1 AND minute_ms = $2',
            [row.endpoint, minuteMs],
          )
        ).rows[0];
        await c.query(
          `INSERT INTO demand_history (endpoint, minute_ms, arrivals, concurrency_seconds,
             seconds, latency_json) VALUES ($1, $2, $3, $4, $5, $6)
           ON CONFLICT (endpoint, minute_ms) DO UPDATE SET arrivals = EXCLUDED.arrivals,
             concurrency_seconds = EXCLUDED.concurrency_seconds, seconds = EXCLUDED.seconds,
             latency_json = EXCLUDED.latency_json`,
          mergedDemandValues(row, i, minuteMs, stored),
        );
      }
    });
  }

  async listDemand(query: {
    readonly endpoint: string;
    readonly since: string;
    readonly until?: string;
  }): Promise<readonly DemandRow[]> {
    const rows = await pgListTimeKeyedRows<DemandDbRow>(
      this.db,
      'demand_history',
      'minute_ms',
      query,
    );
    return rows.map(toDemand);
  }

  pruneDemand(before: string): Promise<number> {
    return pgPruneTimeKeyedRows(this.db, 'demand_history', 'minute_ms', before);
  }

  // ------------------------------------------------------------ pools

  async putPool(pool: NewPool): Promise<PoolRecord> {
    checkPool(pool);
    const now = isoAt(this.clock);
    const row = await this.db.write(
      async (c) =>
        (
          await c.query<PoolRow>(
            `INSERT INTO pools (name, team, workers, memory_budget_bytes, created_at, updated_at)
             VALUES ($1, $2, $3, $4, $5, $6)
             ON CONFLICT (name) DO UPDATE SET team = EXCLUDED.team, workers = EXCLUDED.workers,
               memory_budget_bytes = EXCLUDED.memory_budget_bytes,
               updated_at = EXCLUDED.updated_at
             RETURNING *`,
            [pool.name, pool.team, pool.workers, pool.memoryBudgetBytes, now, now],
          )
        ).rows[0],
    );
    if (row === undefined) throw kilnError('KILN_INTERNAL', { reason: 'pool not written' });
    return toPool(row);
  }

  getPool(name: string): Promise<PoolRecord | null> {
    return this.db.read((c) => poolOf(c, name));
  }

  async listPools(): Promise<readonly PoolRecord[]> {
    const rows = await this.db.read((c) =>
      c.query<PoolRow>('SELECT * FROM pools ORDER BY name COLLATE "C"'),
    );
    return rows.rows.map(toPool);
  }

  /** Refused while an endpoint names the pool; checked and deleted under one write lock. */
  deletePool(name: string): Promise<PoolRecord | null> {
    return this.db.write(async (c) => {
      const pool = await poolOf(c, name);
      if (pool === null) return null;
      // config_json is JSON text (JSON.stringify of the endpoint's config): `->>` reads the
      // pool name as text, as json_extract does on SQLite.
      const users = await c.query<{ name: string }>(
        `SELECT name FROM endpoints WHERE config_json::jsonb ->> 'pool' = $1
         ORDER BY name COLLATE "C"`,
        [name],
      );
      checkPoolUnused(
        name,
        users.rows.map((r) => r.name),
      );
      await c.query('DELETE FROM pools WHERE name = $1', [name]);
      return pool;
    });
  }
}
