// The two queries of the store's time-keyed tables on PostgreSQL (the counterpart of
// ../sqlite/time-keyed-rows.ts): an endpoint's rows in [since, until) in time order, and the
// prune of every row before a time. Table, column, filter and order are the callers'
// constants, never user input; an order on text columns says COLLATE "C" so rows come in
// byte order, as SQLite gives them, whatever the database's locale.

import { timeMs } from '../sqlite/sqlite-traffic-data.ts';
import { timeRangeMs, type TimeRangeQuery } from '../sqlite/time-keyed-rows.ts';
import type { PgQueryable } from './pg-database.ts';

/**
 * `endpoint`'s rows of `table` whose `column` (epoch ms) lies in [since, until), ordered by
 * `orderBy` (default: the column). `filter`: a further condition, ANDed (null: none).
 */
export async function listPgTimeKeyedRows<Row>(
  db: PgQueryable,
  table: string,
  column: string,
  query: TimeRangeQuery,
  options: { readonly filter?: string | null; readonly orderBy?: string } = {},
): Promise<Row[]> {
  const { sinceMs, untilMs } = timeRangeMs(query);
  const filter = options.filter == null ? '' : ` AND ${options.filter}`;
  const result = await db.query(
    `SELECT * FROM ${table} WHERE endpoint = $1 AND ${column} >= $2 AND ${column} < $3${filter}
     ORDER BY ${options.orderBy ?? column}`,
    [query.endpoint, sinceMs, untilMs],
  );
  return result.rows as Row[];
}

/** Deletes the rows of `table` whose `column` (epoch ms) is before `before`; how many. */
export async function prunePgTimeKeyedRows(
  db: PgQueryable,
  table: string,
  column: string,
  before: string,
): Promise<number> {
  const result = await db.query(`DELETE FROM ${table} WHERE ${column} < $1`, [
    timeMs(before, 'before'),
  ]);
  return result.rowCount ?? 0;
}
