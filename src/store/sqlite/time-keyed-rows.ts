// The two queries of the store's time-keyed tables (one row per endpoint and minute or
// window: SLO minutes, demand history, drift windows): an endpoint's rows in [since, until)
// in time order, and the prune of every row before a time. Times travel as ISO 8601 and are
// kept as epoch ms. Table, column and filter are the callers' constants, never user input.

import type Database from 'better-sqlite3';
import { timeMs } from './sqlite-traffic-data.ts';

export interface TimeRangeQuery {
  readonly endpoint: string;
  /** Rows at or after this time (ISO 8601). */
  readonly since: string;
  /** Rows before this time (ISO 8601); none: no end. */
  readonly until?: string;
}

/** A query's [since, until) in epoch ms (no until: the largest safe integer). */
export function timeRangeMs(query: { readonly since: string; readonly until?: string }): {
  readonly sinceMs: number;
  readonly untilMs: number;
} {
  return {
    sinceMs: timeMs(query.since, 'since'),
    untilMs: query.until === undefined ? Number.MAX_SAFE_INTEGER : timeMs(query.until, 'until'),
  };
}

/**
 * `endpoint`'s rows of `table` whose `column` (epoch ms) lies in [since, until), ordered by
 * `orderBy` (default: the column). `filter`: a further condition, ANDed (null: none).
 */
export function listTimeKeyedRows<Row>(
  db: Database.Database,
  table: string,
  column: string,
  query: TimeRangeQuery,
  options: { readonly filter?: string | null; readonly orderBy?: string } = {},
): Row[] {
  const { sinceMs, untilMs } = timeRangeMs(query);
  const filter = options.filter == null ? '' : ` AND ${options.filter}`;
  return db
    .prepare(
      `SELECT * FROM ${table} WHERE endpoint = ? AND ${column} >= ? AND ${column} < ?${filter}
       ORDER BY ${options.orderBy ?? column}`,
    )
    .all(query.endpoint, sinceMs, untilMs) as Row[];
}

/** Deletes the rows of `table` whose `column` (epoch ms) is before `before`; how many. */
export function pruneTimeKeyedRows(
  db: Database.Database,
  table: string,
  column: string,
  before: string,
): number {
  return db.prepare(`DELETE FROM ${table} WHERE ${column} < ?`).run(timeMs(before, 'before'))
    .changes;
}
