// SQLite tables for model quality (issue 15, D; migration 9): predictions the gateways
// reported, waiting for their outcome for the endpoint's join window, and the outcomes
// joined to them. SqliteStore delegates here. A batch of outcomes is joined in one
// transaction, so two callers reporting the same request id cannot both join it.

import type Database from 'better-sqlite3';
import type {
  JoinedPrediction,
  NewPrediction,
  OutcomeItem,
  OutcomeJoinStatus,
} from '../quality-records.ts';

export interface JoinedRow {
  request_id: string;
  model: string;
  version: number;
  prediction: number;
  outcome: number;
  slice: string | null;
  at_ms: number;
  joined_at_ms: number;
}

/** A stored joined row as the Store returns it (shared with the PostgreSQL store). */
export function joinedPredictionOf(r: JoinedRow): JoinedPrediction {
  return {
    requestId: r.request_id,
    model: r.model,
    version: r.version,
    prediction: r.prediction,
    outcome: r.outcome,
    slice: r.slice,
    atMs: r.at_ms,
    joinedAtMs: r.joined_at_ms,
  };
}

/** What the join reads of a stored prediction. */
export interface PredictionJoinState {
  readonly atMs: number;
  readonly joinedAtMs: number | null;
}

/**
 * One status per outcome, in order, and the outcomes to write: `find` reads an endpoint's
 * prediction by request id (undefined: none). An id twice in one batch joins once.
 */
export function planOutcomeJoin(
  items: readonly OutcomeItem[],
  windowStartMs: number,
  find: (requestId: string) => PredictionJoinState | undefined,
): { readonly statuses: OutcomeJoinStatus[]; readonly joins: OutcomeItem[] } {
  const seen = new Set<string>();
  const joins: OutcomeItem[] = [];
  const statuses = items.map((item): OutcomeJoinStatus => {
    if (seen.has(item.requestId)) return 'duplicate';
    seen.add(item.requestId);
    const row = find(item.requestId);
    if (row === undefined) return 'unknown';
    if (row.joinedAtMs !== null) return 'duplicate';
    if (row.atMs < windowStartMs) return 'expired';
    joins.push(item);
    return 'joined';
  });
  return { statuses, joins };
}

export class SqliteQualityTables {
  constructor(private readonly db: Database.Database) {}

  /** Stores predictions; one already stored (same endpoint and request id) is kept. */
  addPredictions(rows: readonly NewPrediction[]): number {
    const insert = this.db.prepare(
      `INSERT OR IGNORE INTO predictions
         (endpoint, request_id, model, version, prediction, slice, at_ms)
       VALUES (?, ?, ?, ?, ?, ?, ?)`,
    );
    const add = this.db.transaction(() => {
      let added = 0;
      for (const r of rows) {
        added += insert.run(
          r.endpoint,
          r.requestId,
          r.model,
          r.version,
          r.prediction,
          r.slice,
          r.atMs,
        ).changes;
      }
      return added;
    });
    return add.immediate();
  }

  /** Joins outcomes to predictions made at or after `windowStartMs`; one status per item. */
  joinOutcomes(
    endpoint: string,
    items: readonly OutcomeItem[],
    windowStartMs: number,
    nowMs: number,
  ): OutcomeJoinStatus[] {
    const find = this.db.prepare(
      'SELECT at_ms, joined_at_ms FROM predictions WHERE endpoint = ? AND request_id = ?',
    );
    const join = this.db.prepare(
      `UPDATE predictions SET outcome = ?, joined_at_ms = ?
       WHERE endpoint = ? AND request_id = ? AND joined_at_ms IS NULL`,
    );
    const run = this.db.transaction(() => {
      const plan = planOutcomeJoin(items, windowStartMs, (requestId) => {
        const row = find.get(endpoint, requestId) as
          { at_ms: number; joined_at_ms: number | null } | undefined;
        return row === undefined ? undefined : { atMs: row.at_ms, joinedAtMs: row.joined_at_ms };
      });
      for (const item of plan.joins) join.run(item.value, nowMs, endpoint, item.requestId);
      return plan.statuses;
    });
    return run.immediate();
  }

  /** Joined predictions of an endpoint made in [sinceMs, untilMs), oldest first. */
  listJoined(query: {
    readonly endpoint: string;
    readonly sinceMs: number;
    readonly untilMs?: number;
    readonly slice?: string;
  }): JoinedPrediction[] {
    const until = query.untilMs ?? Number.MAX_SAFE_INTEGER;
    const rows = (
      query.slice === undefined
        ? this.db
            .prepare(
              `SELECT request_id, model, version, prediction, outcome, slice, at_ms, joined_at_ms
               FROM predictions
               WHERE endpoint = ? AND joined_at_ms IS NOT NULL AND at_ms >= ? AND at_ms < ?
               ORDER BY at_ms, request_id`,
            )
            .all(query.endpoint, query.sinceMs, until)
        : this.db
            .prepare(
              `SELECT request_id, model, version, prediction, outcome, slice, at_ms, joined_at_ms
               FROM predictions
               WHERE endpoint = ? AND joined_at_ms IS NOT NULL AND at_ms >= ? AND at_ms < ?
                 AND slice = ?
               ORDER BY at_ms, request_id`,
            )
            .all(query.endpoint, query.sinceMs, until, query.slice)
    ) as JoinedRow[];
    return rows.map(joinedPredictionOf);
  }

  /**
   * Deletes an endpoint's predictions still without outcome made before `unjoinedBeforeMs`,
   * and joined ones made before `joinedBeforeMs`; returns how many.
   */
  prunePredictions(endpoint: string, unjoinedBeforeMs: number, joinedBeforeMs: number): number {
    const unjoined = this.db
      .prepare('DELETE FROM predictions WHERE endpoint = ? AND joined_at_ms IS NULL AND at_ms < ?')
      .run(endpoint, unjoinedBeforeMs).changes;
    const joined = this.db
      .prepare(
        'DELETE FROM predictions WHERE endpoint = ? AND joined_at_ms IS NOT NULL AND at_ms < ?',
      )
      .run(endpoint, joinedBeforeMs).changes;
    return unjoined + joined;
  }
}
