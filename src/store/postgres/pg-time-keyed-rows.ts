// The two queries of the store's time-keyed tables on PostgreSQL (one row per endpoint and
// minute or window: demand history, SLO minutes, drift windows), as time-keyed-rows.ts runs
// them on SQLite: an endpoint's rows in [since, until) in time order, and the prune of every
// row before a time. Times travel as ISO 8601 and are kept as epoch ms. Table, column and
// order are the callers' constants, never user input.

import { timeMs } from '../traffic-data-checks.ts';
import type { TimeRangeQuery } from '../sqlite/time-keyed-rows.ts';
import type { PgDatabase } from './pg-database.ts';

/** `endpoint`'s rows of `table` whose `column` (epoch ms) lies in [since, until), in order. */
export async function pgListTimeKeyedRows<Row extends object>(
  db: PgDatabase,
  table: string,
  column: string,
  query: TimeRangeQuery,
  options: { readonly orderBy?: string } = {},
): Promise<Row[]> {
  const since = timeMs(query.since, 'since');
  const until = query.until === undefined ? Number.MAX_SAFE_INTEGER : timeMs(query.until, 'until');
  const rows = await db.read((c) =>
    c.query<Row & Record<string, unknown>>(
      `SELECT * FROM ${table} WHERE endpoint = $1 AND ${column} >= $2 AND ${column} < $3
       ORDER BY ${options.orderBy ?? column}`,
      [query.endpoint, since, until],
    ),
  );
  return rows.rows;
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
