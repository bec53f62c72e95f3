// PostgreSQL table for model quality (migration 9), the counterpart of
// ../sqlite/sqlite-quality.ts: predictions waiting for their outcome and the outcomes joined to
// them. A batch of outcomes is joined in one write transaction, so two callers reporting the
// same request id cannot both join it. Batches travel as arrays (unnest): one statement per
// batch, not one per row.

import type {
  JoinedPrediction,
  NewPrediction,
  OutcomeItem,
  OutcomeJoinStatus,
} from '../quality-records.ts';
import {
  joinedPredictionOf,
  planOutcomeJoin,
  type JoinedRow,
  type PredictionJoinState,
} from '../sqlite/sqlite-quality.ts';
import type { PgDatabase } from './pg-database.ts';

const joinedColumns = 'request_id, model, version, prediction, outcome, slice, at_ms, joined_at_ms';

export class PgQualityTables {
  constructor(private readonly db: PgDatabase) {}

  /** Stores predictions; one already stored (same endpoint and request id) is kept. */
  async addPredictions(rows: readonly NewPrediction[]): Promise<number> {
    if (rows.length === 0) return 0;
    return this.db.write(async (c) => {
      // In the batch's order, so of one request id twice in a batch the first is kept, as in
      // SQLite's row-by-row INSERT OR IGNORE.
      const result = await c.query(
        `INSERT INTO predictions (endpoint, request_id, model, version, prediction, slice, at_ms)
         SELECT endpoint, request_id, model, version, prediction, slice, at_ms
         FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::float8[], $6::text[],
           $7::bigint[]) WITH ORDINALITY
           AS r(endpoint, request_id, model, version, prediction, slice, at_ms, n)
         ORDER BY n
         ON CONFLICT (endpoint, request_id) DO NOTHING`,
        [
          rows.map((r) => r.endpoint),
          rows.map((r) => r.requestId),
          rows.map((r) => r.model),
          rows.map((r) => r.version),
          rows.map((r) => r.prediction),
          rows.map((r) => r.slice),
          rows.map((r) => r.atMs),
        ],
      );
      return result.rowCount ?? 0;
    });
  }

  /** Joins outcomes to predictions made at or after `windowStartMs`; one status per item. */
  joinOutcomes(
    endpoint: string,
    items: readonly OutcomeItem[],
    windowStartMs: number,
    nowMs: number,
  ): Promise<OutcomeJoinStatus[]> {
    return this.db.write(async (c) => {
      const found = await c.query<{
        request_id: string;
        at_ms: number;
        joined_at_ms: number | null;
      }>(
        `SELECT request_id, at_ms, joined_at_ms FROM predictions
         WHERE endpoint = $1 AND request_id = ANY($2::text[])`,
        [endpoint, items.map((item) => item.requestId)],
      );
      const stored = new Map<string, PredictionJoinState>(
        found.rows.map((r) => [r.request_id, { atMs: r.at_ms, joinedAtMs: r.joined_at_ms }]),
      );
      const plan = planOutcomeJoin(items, windowStartMs, (requestId) => stored.get(requestId));
      if (plan.joins.length > 0) {
        await c.query(
          `UPDATE predictions p SET outcome = o.value, joined_at_ms = $2
           FROM unnest($3::text[], $4::float8[]) AS o(request_id, value)
           WHERE p.endpoint = $1 AND p.request_id = o.request_id AND p.joined_at_ms IS NULL`,
          [
            endpoint,
            nowMs,
            plan.joins.map((item) => item.requestId),
            plan.joins.map((item) => item.value),
          ],
        );
      }
      return plan.statuses;
    });
  }

  /** Joined predictions of an endpoint made in [sinceMs, untilMs), oldest first. */
  listJoined(query: {
    readonly endpoint: string;
    readonly sinceMs: number;
    readonly untilMs?: number;
    readonly slice?: string;
  }): Promise<JoinedPrediction[]> {
    const until = query.untilMs ?? Number.MAX_SAFE_INTEGER;
    const bySlice = query.slice === undefined ? '' : ' AND slice = $4';
    const args: unknown[] = [query.endpoint, query.sinceMs, until];
    if (query.slice !== undefined) args.push(query.slice);
    return this.db.read(async (c) => {
      const result = await c.query<JoinedRow>(
        `SELECT ${joinedColumns} FROM predictions
         WHERE endpoint = $1 AND joined_at_ms IS NOT NULL AND at_ms >= $2 AND at_ms < $3${bySlice}
         ORDER BY at_ms, request_id COLLATE "C"`,
        args,
      );
      return result.rows.map(joinedPredictionOf);
    });
  }

  /**
   * Deletes an endpoint's predictions still without outcome made before `unjoinedBeforeMs`,
   * and joined ones made before `joinedBeforeMs`; returns how many.
   */
  prunePredictions(
    endpoint: string,
    unjoinedBeforeMs: number,
    joinedBeforeMs: number,
  ): Promise<number> {
    return this.db.write(async (c) => {
      const result = await c.query(
        `DELETE FROM predictions WHERE endpoint = $1 AND (
           (joined_at_ms IS NULL AND at_ms < $2) OR (joined_at_ms IS NOT NULL AND at_ms < $3))`,
        [endpoint, unjoinedBeforeMs, joinedBeforeMs],
      );
      return result.rowCount ?? 0;
    });
  }
}
