// SQLite tables for SLOs (issue 15, F; migration 11): SLI counts per endpoint and minute,
// each alert's state and its transitions. SqliteStore delegates here. An evaluation's state
// changes and their events are written in one BEGIN IMMEDIATE transaction, so the history
// never shows a transition the state did not make.

import type Database from 'better-sqlite3';
import { kilnError } from '../../core/errors.ts';
import { isoAt, type Clock } from '../../core/clock.ts';
import type {
  NewSloAlertEvent,
  SliMinuteRow,
  SloAlertEvent,
  SloAlertRecord,
  SloAlertState,
  SloAlertUpsert,
} from '../slo-records.ts';
import { timeMs } from './sqlite-traffic-data.ts';
import { listTimeKeyedRows, pruneTimeKeyedRows } from './time-keyed-rows.ts';

/** SLI rows are per minute: minuteStart must be an ISO time on a multiple of this. */
export const sliMinuteMs = 60_000;

export interface MinuteDbRow {
  endpoint: string;
  minute_ms: number;
  requests: number;
  server_errors: number;
  latency_total: number;
  latency_good: number;
}

export interface AlertDbRow {
  endpoint: string;
  alert: string;
  severity: string;
  state: SloAlertState;
  since: string;
  summary: string;
  detail_json: string;
  updated_at: string;
}

export interface EventDbRow extends Omit<AlertDbRow, 'since' | 'updated_at'> {
  id: number;
  at: string;
}

function invalid(reason: string): never {
  throw kilnError('KILN_VALIDATION_FAILED', { reason });
}

function isCount(n: number): boolean {
  return Number.isSafeInteger(n) && n >= 0;
}

/**
 * SLI row `index` checked (KILN_VALIDATION_FAILED naming it and the field); its minute in
 * epoch ms. Shared with the PostgreSQL store.
 */
export function checkedSliMinuteMs(row: SliMinuteRow, index: number): number {
  const what = `SLI row ${index} (endpoint ${row.endpoint}, minute ${row.minuteStart})`;
  const minuteMs = timeMs(row.minuteStart, `${what}: minuteStart`);
  if (minuteMs % sliMinuteMs !== 0) invalid(`${what}: minuteStart is not on a minute`);
  if (row.endpoint === '') invalid(`${what}: endpoint is empty`);
  for (const key of ['requests', 'serverErrors', 'latencyTotal', 'latencyGood'] as const) {
    if (!isCount(row[key])) invalid(`${what}: ${key} must be an integer >= 0`);
  }
  if (row.serverErrors > row.requests) invalid(`${what}: serverErrors > requests`);
  if (row.latencyGood > row.latencyTotal) invalid(`${what}: latencyGood > latencyTotal`);
  return minuteMs;
}

export function toMinute(row: MinuteDbRow): SliMinuteRow {
  return {
    endpoint: row.endpoint,
    minuteStart: new Date(row.minute_ms).toISOString(),
    requests: row.requests,
    serverErrors: row.server_errors,
    latencyTotal: row.latency_total,
    latencyGood: row.latency_good,
  };
}

export function toAlert(row: AlertDbRow): SloAlertRecord {
  return {
    endpoint: row.endpoint,
    alert: row.alert,
    severity: row.severity,
    state: row.state,
    since: row.since,
    summary: row.summary,
    detail: JSON.parse(row.detail_json) as unknown,
    updatedAt: row.updated_at,
  };
}

export function toEvent(row: EventDbRow): SloAlertEvent {
  return {
    id: row.id,
    endpoint: row.endpoint,
    alert: row.alert,
    severity: row.severity,
    state: row.state,
    at: row.at,
    summary: row.summary,
    detail: JSON.parse(row.detail_json) as unknown,
  };
}

export class SqliteSloTables {
  constructor(
    private readonly db: Database.Database,
    private readonly clock: Clock,
  ) {}

  /** Adds rows into the stored minutes in one transaction; one bad row refuses the call. */
  mergeSliMinutes(rows: readonly SliMinuteRow[]): void {
    const merge = this.db.transaction(() => {
      const write = this.db.prepare(
        `INSERT INTO slo_minutes (endpoint, minute_ms, requests, server_errors, latency_total,
           latency_good) VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT (endpoint, minute_ms) DO UPDATE SET
           requests = requests + excluded.requests,
           server_errors = server_errors + excluded.server_errors,
           latency_total = latency_total + excluded.latency_total,
           latency_good = latency_good + excluded.latency_good`,
      );
      for (const [i, row] of rows.entries()) {
        const minuteMs = checkedSliMinuteMs(row, i);
        write.run(
          row.endpoint,
          minuteMs,
          row.requests,
          row.serverErrors,
          row.latencyTotal,
          row.latencyGood,
        );
      }
    });
    merge.immediate();
  }

  listSliMinutes(query: {
    readonly endpoint: string;
    readonly since: string;
    readonly until?: string;
  }): SliMinuteRow[] {
    return listTimeKeyedRows<MinuteDbRow>(this.db, 'slo_minutes', 'minute_ms', query).map(toMinute);
  }

  pruneSliMinutes(before: string): number {
    return pruneTimeKeyedRows(this.db, 'slo_minutes', 'minute_ms', before);
  }

  /** Current alert states (one endpoint's, or all), by endpoint then alert. */
  listSloAlerts(endpoint?: string): SloAlertRecord[] {
    const rows =
      endpoint === undefined
        ? this.db.prepare('SELECT * FROM slo_alerts ORDER BY endpoint, alert').all()
        : this.db
            .prepare('SELECT * FROM slo_alerts WHERE endpoint = ? ORDER BY alert')
            .all(endpoint);
    return (rows as AlertDbRow[]).map(toAlert);
  }

  /** Writes one evaluation's states and transitions together. */
  applySloAlerts(upserts: readonly SloAlertUpsert[], events: readonly NewSloAlertEvent[]): void {
    const now = isoAt(this.clock);
    const apply = this.db.transaction(() => {
      const put = this.db.prepare(
        `INSERT INTO slo_alerts (endpoint, alert, severity, state, since, summary, detail_json,
           updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (endpoint, alert) DO UPDATE SET severity = excluded.severity,
           state = excluded.state, since = excluded.since, summary = excluded.summary,
           detail_json = excluded.detail_json, updated_at = excluded.updated_at`,
      );
      const add = this.db.prepare(
        `INSERT INTO slo_alert_events (endpoint, alert, severity, state, at, summary, detail_json)
         VALUES (?, ?, ?, ?, ?, ?, ?)`,
      );
      for (const u of upserts) {
        put.run(
          u.endpoint,
          u.alert,
          u.severity,
          u.state,
          u.since,
          u.summary,
          JSON.stringify(u.detail),
          now,
        );
      }
      for (const e of events) {
        add.run(
          e.endpoint,
          e.alert,
          e.severity,
          e.state,
          e.at,
          e.summary,
          JSON.stringify(e.detail),
        );
      }
    });
    apply.immediate();
  }

  /** An endpoint's alert transitions, newest first. */
  listSloAlertEvents(query: {
    readonly endpoint: string;
    readonly limit?: number;
  }): SloAlertEvent[] {
    return (
      this.db
        .prepare('SELECT * FROM slo_alert_events WHERE endpoint = ? ORDER BY id DESC LIMIT ?')
        .all(query.endpoint, query.limit ?? 100) as EventDbRow[]
    ).map(toEvent);
  }
}
