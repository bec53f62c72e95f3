// SQLite table of drift windows (migration 8, issue 15): the workers' sketches merged per
// endpoint, version, window and slice (overall under slice ''). SqliteStore delegates here.
// A merge reads the stored profile and writes the merged one in one BEGIN IMMEDIATE
// transaction, so two writers never lose each other's counts.

import type Database from 'better-sqlite3';
import { kilnError } from '../../core/errors.ts';
import { isoAt, type Clock } from '../../core/clock.ts';
import type { DataProfile } from '../../observability/profile/data-profile.ts';
import { mergeDataProfiles } from '../../observability/profile/merge-feature-sketches.ts';
import type { DriftWindowQuery, DriftWindowRecord, NewDriftWindow } from '../drift-records.ts';
import { timeMs } from './sqlite-traffic-data.ts';
import { listTimeKeyedRows, pruneTimeKeyedRows } from './time-keyed-rows.ts';

export interface DriftDbRow {
  endpoint: string;
  model: string;
  version: number;
  window_start_ms: number;
  window_ms: number;
  slice: string;
  rows: number;
  profile_json: string;
  updated_at: string;
}

function invalid(reason: string): never {
  throw kilnError('KILN_VALIDATION_FAILED', { reason });
}

/** A stored row as the Store returns it (shared with the PostgreSQL store). */
export function driftRecordOf(row: DriftDbRow): DriftWindowRecord {
  return {
    endpoint: row.endpoint,
    model: row.model,
    version: row.version,
    windowStart: new Date(row.window_start_ms).toISOString(),
    windowMs: row.window_ms,
    slice: row.slice === '' ? null : row.slice,
    profile: JSON.parse(row.profile_json) as DataProfile,
    updatedAt: row.updated_at,
  };
}

/**
 * Row `index` of a merge checked (KILN_VALIDATION_FAILED naming it: a window start off its
 * length, an empty slice) and its key as stored: start in epoch ms, '' for overall.
 */
export function driftWindowKey(
  row: NewDriftWindow,
  index: number,
): { readonly what: string; readonly startMs: number; readonly slice: string } {
  const what = `drift window ${index} (endpoint ${row.endpoint}, ${row.model}:${row.version}, ${row.windowStart})`;
  const startMs = timeMs(row.windowStart, `${what}: windowStart`);
  if (!(Number.isSafeInteger(row.windowMs) && row.windowMs > 0))
    invalid(`${what}: windowMs must be a positive integer`);
  if (startMs % row.windowMs !== 0) invalid(`${what}: windowStart is not on a window`);
  if (row.slice === '') invalid(`${what}: slice is empty (null is overall)`);
  return { what, startMs, slice: row.slice ?? '' };
}

/** The profile to store: `profile` merged into the stored one (none: as it is). */
export function mergedDriftProfile(
  storedJson: string | undefined,
  profile: DataProfile,
  what: string,
): DataProfile {
  if (storedJson === undefined) return profile;
  const merged = mergeDataProfiles(JSON.parse(storedJson) as DataProfile, profile);
  if (!merged.ok) invalid(`${what}: ${merged.message}`);
  return merged.profile;
}

/** The SQL condition on `slice` a query's `slices` asks for (null: every row). */
export function driftSliceFilter(query: DriftWindowQuery): string | null {
  const which = query.slices ?? 'overall';
  return which === 'overall' ? "slice = ''" : which === 'slices' ? "slice <> ''" : null;
}

export class SqliteDriftTables {
  constructor(
    private readonly db: Database.Database,
    private readonly clock: Clock,
  ) {}

  /**
   * Adds each profile into its stored window (created when new) in one transaction; a row that
   * is not valid (a window start off its length, an empty slice, a profile that does not merge
   * with the stored one) refuses the whole call.
   */
  mergeWindows(rows: readonly NewDriftWindow[]): void {
    const merge = this.db.transaction(() => {
      const read = this.db.prepare(
        `SELECT * FROM drift_windows WHERE endpoint = ? AND model = ? AND version = ?
           AND window_start_ms = ? AND slice = ?`,
      );
      const write = this.db.prepare(
        `INSERT INTO drift_windows (endpoint, model, version, window_start_ms, window_ms, slice,
           rows, profile_json, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (endpoint, model, version, window_start_ms, slice) DO UPDATE SET
           rows = excluded.rows, profile_json = excluded.profile_json,
           updated_at = excluded.updated_at`,
      );
      const now = isoAt(this.clock);
      for (const [i, row] of rows.entries()) {
        const { what, startMs, slice } = driftWindowKey(row, i);
        const stored = read.get(row.endpoint, row.model, row.version, startMs, slice) as
          DriftDbRow | undefined;
        const profile = mergedDriftProfile(stored?.profile_json, row.profile, what);
        write.run(
          row.endpoint,
          row.model,
          row.version,
          startMs,
          row.windowMs,
          slice,
          profile.rows,
          JSON.stringify(profile),
          now,
        );
      }
    });
    merge.immediate();
  }

  /** Oldest window first; within a window, overall before slices, slices by value. */
  listWindows(query: DriftWindowQuery): DriftWindowRecord[] {
    const rows = listTimeKeyedRows<DriftDbRow>(this.db, 'drift_windows', 'window_start_ms', query, {
      filter: driftSliceFilter(query),
      orderBy: 'window_start_ms, model, version, slice',
    });
    return rows.map(driftRecordOf);
  }

  /** Deletes windows that started before `before`; returns how many. */
  pruneWindows(before: string): number {
    return pruneTimeKeyedRows(this.db, 'drift_windows', 'window_start_ms', before);
  }
}
