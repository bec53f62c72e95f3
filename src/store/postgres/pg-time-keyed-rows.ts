// The two queries of the store's time-keyed tables on PostgreSQL (one row per endpoint and
// minute or window: demand history, SLO minutes, drift windows), as time-keyed-rows.ts runs
// them on SQLite: an endpoint's rows in [since, until) in time order, and the prune of every
// row before a time. Times travel as ISO 8601 and are kept as epoch ms. Table, column, filter
// and order are the callers' constants, never user input; an order on text columns says
// COLLATE "C" so rows come in byte order, as SQLite gives them, whatever the database locale.

import { timeMs } from '../sqlite/sqlite-traffic-data.ts';
import { timeRangeMs, type TimeRangeQuery } from '../sqlite/time-keyed-rows.ts';
import type { PgDatabase } from './pg-database.ts';

/**
 * `endpoint`'s rows of `table` whose `column` (epoch ms) lies in [since, until), ordered by
 * `orderBy` (default: the column). `filter`: a further condition, ANDed (null: none).
 */
export async function pgListTimeKeyedRows<Row extends object>(
  db: PgDatabase,
  table: string,
  column: string,
  query: TimeRangeQuery,
  options: { readonly filter?: string | null; readonly orderBy?: string } = {},
): Promise<Row[]> {
  const { sinceMs, untilMs } = timeRangeMs(query);
  const filter = options.filter == null ? '' : ` AND ${options.filter}`;
  const result = await db.read((c) =>
    c.query<Row & Record<string, unknown>>(
      `SELECT * FROM ${table} WHERE endpoint = $1 AND ${column} >= $2 AND ${column} < $3${filter}
       ORDER BY ${options.orderBy ?? column}`,
      [query.endpoint, sinceMs, untilMs],
    ),
  );
  return result.rows;
}

/** Deletes the rows of `table` whose `column` (epoch ms) is before `before`; how many. */
export async function pgPruneTimeKeyedRows(
  db: PgDatabase,
  table: string,
  column: string,
  before: string,
): Promise<number> {
  const beforeMs = timeMs(before, 'before');
  const result = await db.write((c) =>
    c.query(`DELETE FROM ${table} WHERE ${column} < $1`, [beforeMs]),
  );
  return result.rowCount ?? 0;
}
