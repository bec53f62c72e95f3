// PostgreSQL table of drift windows (migration 8), the counterpart of ../sqlite/sqlite-drift.ts.
// A merge reads each stored window and writes the merged one inside one write transaction
// (the store's write lock), so two control planes merging into the same window never lose
// each other's counts.

import { isoAt, type Clock } from '../../core/clock.ts';
import type { DriftWindowQuery, DriftWindowRecord, NewDriftWindow } from '../drift-records.ts';
import {
  driftRecordOf,
  driftSliceFilter,
  driftWindowKey,
  mergedDriftProfile,
  type DriftDbRow,
} from '../sqlite/sqlite-drift.ts';
import type { PgDatabase } from './pg-database.ts';
import { pgListTimeKeyedRows, pgPruneTimeKeyedRows } from './pg-time-keyed-rows.ts';

export class PgDriftTables {
  constructor(
    private readonly db: PgDatabase,
    private readonly clock: Clock,
  ) {}

  /** One bad row (or profile that does not merge) refuses the whole call. */
  async mergeWindows(rows: readonly NewDriftWindow[]): Promise<void> {
    // Checked before the transaction too: a malformed call never takes the write lock.
    rows.forEach(driftWindowKey);
    await this.db.write(async (c) => {
      const now = isoAt(this.clock);
      for (const [i, row] of rows.entries()) {
        const { what, startMs, slice } = driftWindowKey(row, i);
        const stored = await c.query<{ profile_json: string }>(
          `SELECT profile_json FROM drift_windows WHERE endpoint = $1 AND model = $2
             AND version = $3 AND window_start_ms = $4 AND slice = $5`,
          [row.endpoint, row.model, row.version, startMs, slice],
        );
        const profile = mergedDriftProfile(stored.rows[0]?.profile_json, row.profile, what);
        await c.query(
          `INSERT INTO drift_windows (endpoint, model, version, window_start_ms, window_ms, slice,
             rows, profile_json, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
           ON CONFLICT (endpoint, model, version, window_start_ms, slice) DO UPDATE SET
             rows = excluded.rows, profile_json = excluded.profile_json,
             updated_at = excluded.updated_at`,
          [
            row.endpoint,
            row.model,
            row.version,
            startMs,
            row.windowMs,
            slice,
            profile.rows,
            JSON.stringify(profile),
            now,
          ],
        );
      }
    });
  }

  /** Oldest window first; within a window, overall before slices, slices by value. */
  async listWindows(query: DriftWindowQuery): Promise<DriftWindowRecord[]> {
    const rows = await pgListTimeKeyedRows<DriftDbRow>(
      this.db,
      'drift_windows',
      'window_start_ms',
      query,
      {
        filter: driftSliceFilter(query),
        orderBy: 'window_start_ms, model COLLATE "C", version, slice COLLATE "C"',
      },
    );
    return rows.map(driftRecordOf);
  }

  /** Deletes windows that started before `before`; returns how many. */
  pruneWindows(before: string): Promise<number> {
    return pgPruneTimeKeyedRows(this.db, 'drift_windows', 'window_start_ms', before);
  }
}
