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
import { HistogramSketch, type HistogramSketchSnapshot } from '../../traffic/histogram-sketch.ts';
import type {
  DemandRow,
  EndpointScaleRecord,
  NewPool,
  NewScaleEvent,
  PoolRecord,
  ScaleChange,
  ScaleEvent,
  ScaleEventKind,
} from '../scaling-records.ts';
import { timeMs } from './sqlite-traffic-data.ts';
import { listTimeKeyedRows, pruneTimeKeyedRows } from './time-keyed-rows.ts';

/** Demand rows are per minute: minuteStart must be an ISO time on a multiple of this. */
export const demandMinuteMs = 60_000;

/** listScaleEvents returns at most this many when no limit is given. */
const defaultEventLimit = 100;

const scaleEventKinds: ReadonlySet<ScaleEventKind> = new Set<ScaleEventKind>([
  'scale-up',
  'scale-down',
  'to-zero',
  'wake',
  'manual',
]);

interface ScaleRow {
  endpoint: string;
  replicas: number;
  reason: string;
  last_demand_at: string | null;
  updated_at: string;
}

interface ScaleEventRow {
  id: number;
  endpoint: string;
  at: string;
  kind: ScaleEventKind;
  from_replicas: number;
  to_replicas: number;
  mode: string;
  reason: string;
}

interface DemandDbRow {
  endpoint: string;
  minute_ms: number;
  arrivals: number;
  concurrency_seconds: number;
  seconds: number;
  latency_json: string;
}

interface PoolRow {
  name: string;
  team: string;
  workers: number;
  memory_budget_bytes: number;
  created_at: string;
  updated_at: string;
}

function toScale(row: ScaleRow): EndpointScaleRecord {
  return {
    endpoint: row.endpoint,
    replicas: row.replicas,
    reason: row.reason,
    lastDemandAt: row.last_demand_at,
    updatedAt: row.updated_at,
  };
}

function toScaleEvent(row: ScaleEventRow): ScaleEvent {
  return {
    id: row.id,
    endpoint: row.endpoint,
    at: row.at,
    kind: row.kind,
    from: row.from_replicas,
    to: row.to_replicas,
    mode: row.mode,
    reason: row.reason,
  };
}

function toDemand(row: DemandDbRow): DemandRow {
  return {
    endpoint: row.endpoint,
    minuteStart: new Date(row.minute_ms).toISOString(),
    arrivals: row.arrivals,
    concurrencySeconds: row.concurrency_seconds,
    seconds: row.seconds,
    latencyMs: JSON.parse(row.latency_json) as HistogramSketchSnapshot,
  };
}

function toPool(row: PoolRow): PoolRecord {
  return {
    name: row.name,
    team: row.team,
    workers: row.workers,
    memoryBudgetBytes: row.memory_budget_bytes,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

function invalid(reason: string): never {
  throw kilnError('KILN_VALIDATION_FAILED', { reason });
}

function isCount(n: number): boolean {
  return Number.isSafeInteger(n) && n >= 0;
}

function isAmount(n: number): boolean {
  return Number.isFinite(n) && n >= 0;
}

/** The same text order as time order: stored times are toISOString()'s. */
function canonicalTime(iso: string, what: string): string {
  return new Date(timeMs(iso, what)).toISOString();
}

function sketchOf(snapshot: HistogramSketchSnapshot, what: string): HistogramSketch {
  const parsed = HistogramSketch.fromSnapshot(snapshot);
  if (!parsed.ok) invalid(`${what}: ${parsed.message}`);
  return parsed.sketch;
}

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
      if (!isCount(change.replicas)) {
        invalid(`replicas ${change.replicas} must be an integer >= 0`);
      }
      if (this.db.prepare('SELECT 1 FROM endpoints WHERE name = ?').get(endpoint) === undefined) {
        throw kilnError('KILN_ENDPOINT_NOT_FOUND', { endpoint });
      }
      const current = this.getScale(endpoint);
      if (change.expectReplicas !== undefined && change.expectReplicas !== current?.replicas) {
        const stored = current === null ? 'it has no count yet' : `it is at ${current.replicas}`;
        throw kilnError(
          'KILN_SCALE_CONFLICT',
          { endpoint, reason: `expected ${change.expectReplicas} replicas, ${stored}` },
          { expectedReplicas: change.expectReplicas, replicas: current?.replicas ?? null },
        );
      }
      const lastDemandAt =
        change.lastDemandAt === undefined
          ? (current?.lastDemandAt ?? null)
          : canonicalTime(change.lastDemandAt, 'lastDemandAt');
      const now = isoAt(this.clock);
      if (change.event !== undefined) this.insertEvent(endpoint, change.event, now);
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

  private insertEvent(endpoint: string, event: NewScaleEvent, at: string): void {
    if (event.endpoint !== endpoint) {
      invalid(`an event for endpoint ${event.endpoint} was written with endpoint ${endpoint}`);
    }
    if (!scaleEventKinds.has(event.kind)) invalid(`unknown scale event kind ${event.kind}`);
    if (!isCount(event.from) || !isCount(event.to)) {
      invalid(`a scale event's counts must be integers >= 0 (from ${event.from}, to ${event.to})`);
    }
    this.db
      .prepare(
        `INSERT INTO scale_events (endpoint, at, kind, from_replicas, to_replicas, mode, reason)
         VALUES (?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(endpoint, at, event.kind, event.from, event.to, event.mode, event.reason);
  }

  listEvents(query: {
    readonly endpoint?: string;
    readonly since?: string;
    readonly limit?: number;
  }): ScaleEvent[] {
    const limit = query.limit ?? defaultEventLimit;
    if (!Number.isSafeInteger(limit) || limit < 1) {
      invalid(`limit ${limit} must be an integer >= 1`);
    }
    const since = query.since === undefined ? null : canonicalTime(query.since, 'since');
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
        const what = `demand row ${i} (endpoint ${row.endpoint}, minute ${row.minuteStart})`;
        const minuteMs = timeMs(row.minuteStart, `${what}: minuteStart`);
        if (minuteMs % demandMinuteMs !== 0) invalid(`${what}: minuteStart is not on a minute`);
        if (row.endpoint === '') invalid(`${what}: endpoint is empty`);
        if (!isCount(row.arrivals)) invalid(`${what}: arrivals must be an integer >= 0`);
        if (!isAmount(row.concurrencySeconds)) {
          invalid(`${what}: concurrencySeconds must be a finite number >= 0`);
        }
        if (!isAmount(row.seconds)) invalid(`${what}: seconds must be a finite number >= 0`);
        const latency = sketchOf(row.latencyMs, `${what}: latencyMs`);
        const stored = read.get(row.endpoint, minuteMs) as DemandDbRow | undefined;
        if (stored !== undefined) {
          const result = latency.merge(
            sketchOf(
              JSON.parse(stored.latency_json) as HistogramSketchSnapshot,
              `${what}: the stored latency`,
            ),
          );
          if (!result.ok) invalid(`${what}: latencyMs: ${result.message}`);
        }
        write.run(
          row.endpoint,
          minuteMs,
          row.arrivals + (stored?.arrivals ?? 0),
          row.concurrencySeconds + (stored?.concurrency_seconds ?? 0),
          row.seconds + (stored?.seconds ?? 0),
          JSON.stringify(latency.snapshot()),
        );
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
    if (pool.name === '') invalid('a pool needs a name');
    if (!Number.isSafeInteger(pool.workers) || pool.workers < 1) {
      invalid(`pool ${pool.name}: workers ${pool.workers} must be an integer >= 1`);
    }
    if (!Number.isSafeInteger(pool.memoryBudgetBytes) || pool.memoryBudgetBytes <= 0) {
      invalid(
        `pool ${pool.name}: memoryBudgetBytes ${pool.memoryBudgetBytes} must be an integer > 0`,
      );
    }
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
      if (users.length > 0) {
        throw kilnError(
          'KILN_POOL_IN_USE',
          { pool: name, endpoints: users.join(', ') },
          { endpoints: users },
        );
      }
      this.db.prepare('DELETE FROM pools WHERE name = ?').run(name);
      return pool;
    });
    return remove.immediate();
  }
}
