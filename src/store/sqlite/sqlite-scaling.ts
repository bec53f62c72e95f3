// SQLite tables for autoscaling and worker pools (migration 6): each autoscaled endpoint's
// current count, the history of scale events, the gateways' demand merged per minute (what
// the predictive scaler learns from and what `kiln simulate --endpoint` reads service times
// from), and the shared worker pools. SqliteStore delegates here.
//
// A count and its event are written in one BEGIN IMMEDIATE transaction, so the history never
// shows a change the count did not make (nor the reverse), whichever process writes.

import type Database from 'better-sqlite3';
import { kilnError } from '../../core/errors.ts';
import { isoAt, type Clock } from '../../core/clock.ts';
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
import { listTimeKeyedRows, pruneTimeKeyedRows } from './time-keyed-rows.ts';

// Callers import the minute length from here; it is the stores' shared constant now.
export { demandMinuteMs } from '../scaling-rows.ts';

export class SqliteScalingTables {
  constructor(
    private readonly db: Database.Database,
    private readonly clock: Clock,
  ) {}

  // ------------------------------------------------------------ endpoint counts

  getScale(endpoint: string): EndpointScaleRecord | null {
    const row = this.db.prepare('SELECT * FROM endpoint_scale WHERE endpoint = ?').get(endpoint) as
      ScaleRow | undefined;
    return row === undefined ? null : toScale(row);
  }

  listScales(): EndpointScaleRecord[] {
    return (
      this.db.prepare('SELECT * FROM endpoint_scale ORDER BY endpoint').all() as ScaleRow[]
    ).map(toScale);
  }

  setScale(change: ScaleChange): EndpointScaleRecord {
    const write = this.db.transaction((): EndpointScaleRecord => {
      const endpoint = change.endpoint;
      checkReplicas(change);
      if (this.db.prepare('SELECT 1 FROM endpoints WHERE name = ?').get(endpoint) === undefined) {
        throw kilnError('KILN_ENDPOINT_NOT_FOUND', { endpoint });
      }
      const lastDemandAt = checkScaleChange(change, this.getScale(endpoint));
      const now = isoAt(this.clock);
      if (change.event !== undefined) {
        this.db
          .prepare(
            `INSERT INTO scale_events (endpoint, at, kind, from_replicas, to_replicas, mode,
               reason) VALUES (?, ?, ?, ?, ?, ?, ?)`,
          )
          .run(...scaleEventValues(endpoint, change.event, now));
      }
      const row = this.db
        .prepare(
          `INSERT INTO endpoint_scale (endpoint, replicas, reason, last_demand_at, updated_at)
           VALUES (?, ?, ?, ?, ?)
           ON CONFLICT (endpoint) DO UPDATE SET replicas = excluded.replicas,
             reason = excluded.reason, last_demand_at = excluded.last_demand_at,
             updated_at = excluded.updated_at
           RETURNING *`,
        )
        .get(endpoint, change.replicas, change.reason, lastDemandAt, now) as ScaleRow;
      return toScale(row);
    });
    return write.immediate();
  }

  listEvents(query: {
    readonly endpoint?: string;
    readonly since?: string;
    readonly limit?: number;
  }): ScaleEvent[] {
    const { limit, since } = scaleEventQuery(query);
    const endpoint = query.endpoint ?? null;
    const rows = this.db
      .prepare(
        `SELECT * FROM scale_events WHERE (? IS NULL OR endpoint = ?) AND (? IS NULL OR at >= ?)
         ORDER BY id DESC LIMIT ?`,
      )
      .all(endpoint, endpoint, since, since, limit) as ScaleEventRow[];
    return rows.map(toScaleEvent);
  }

  // ------------------------------------------------------------ demand history

  /**
   * Adds rows into the stored minute rows in one transaction; a row that is not valid (a
   * minuteStart off a whole minute, a negative count, a sketch that does not parse or whose
   * accuracy differs from the stored one) refuses the whole call.
   */
  mergeDemand(rows: readonly DemandRow[]): void {
    const merge = this.db.transaction(() => {
      const read = this.db.prepare(
        'SELECT * FROM demand_history WHERE endpoint = ? AND minute_ms = ?',
      );
      const write = this.db.prepare(
        `INSERT INTO demand_history (endpoint, minute_ms, arrivals, concurrency_seconds, seconds,
           latency_json) VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT (endpoint, minute_ms) DO UPDATE SET arrivals = excluded.arrivals,
           concurrency_seconds = excluded.concurrency_seconds, seconds = excluded.seconds,
           latency_json = excluded.latency_json`,
      );
      for (const [i, row] of rows.entries()) {
        const minuteMs = demandMinute(row, i);
        const stored = read.get(row.endpoint, minuteMs) as DemandDbRow | undefined;
        write.run(...mergedDemandValues(row, i, minuteMs, stored));
      }
    });
    merge.immediate();
  }

  listDemand(query: {
    readonly endpoint: string;
    readonly since: string;
    readonly until?: string;
  }): DemandRow[] {
    return listTimeKeyedRows<DemandDbRow>(this.db, 'demand_history', 'minute_ms', query).map(
      toDemand,
    );
  }

  pruneDemand(before: string): number {
    return pruneTimeKeyedRows(this.db, 'demand_history', 'minute_ms', before);
  }

  // ------------------------------------------------------------ pools

  putPool(pool: NewPool): PoolRecord {
    checkPool(pool);
    const now = isoAt(this.clock);
    const row = this.db
      .prepare(
        `INSERT INTO pools (name, team, workers, memory_budget_bytes, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT (name) DO UPDATE SET team = excluded.team, workers = excluded.workers,
           memory_budget_bytes = excluded.memory_budget_bytes, updated_at = excluded.updated_at
         RETURNING *`,
      )
      .get(pool.name, pool.team, pool.workers, pool.memoryBudgetBytes, now, now) as PoolRow;
    return toPool(row);
  }

  getPool(name: string): PoolRecord | null {
    const row = this.db.prepare('SELECT * FROM pools WHERE name = ?').get(name) as
      PoolRow | undefined;
    return row === undefined ? null : toPool(row);
  }

  listPools(): PoolRecord[] {
    return (this.db.prepare('SELECT * FROM pools ORDER BY name').all() as PoolRow[]).map(toPool);
  }

  /** Refused while an endpoint names the pool; checked and deleted under one write lock. */
  deletePool(name: string): PoolRecord | null {
    const remove = this.db.transaction((): PoolRecord | null => {
      const pool = this.getPool(name);
      if (pool === null) return null;
      const users = (
        this.db
          .prepare(
            `SELECT name FROM endpoints WHERE json_extract(config_json, '$.pool') = ?
             ORDER BY name`,
          )
          .all(name) as { name: string }[]
      ).map((r) => r.name);
      checkPoolUnused(name, users);
      this.db.prepare('DELETE FROM pools WHERE name = ?').run(name);
      return pool;
    });
    return remove.immediate();
  }
}
