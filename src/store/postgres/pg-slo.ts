// PostgreSQL tables for SLOs (migration 11), the counterpart of ../sqlite/sqlite-slo.ts: SLI
// counts per endpoint and minute, each alert's state and its transitions. An evaluation's
// state changes and their events are written in one write transaction, so the history never
// shows a transition the state did not make.

import { isoAt, type Clock } from '../../core/clock.ts';
import type {
  NewSloAlertEvent,
  SliMinuteRow,
  SloAlertEvent,
  SloAlertRecord,
  SloAlertUpsert,
} from '../slo-records.ts';
import {
  checkedSliMinuteMs,
  toAlert,
  toEvent,
  toMinute,
  type AlertDbRow,
  type EventDbRow,
  type MinuteDbRow,
} from '../sqlite/sqlite-slo.ts';
import type { PgDatabase } from './pg-database.ts';
import { pgListTimeKeyedRows, pgPruneTimeKeyedRows } from './pg-time-keyed-rows.ts';

export class PgSloTables {
  constructor(
    private readonly db: PgDatabase,
    private readonly clock: Clock,
  ) {}

  /** Adds rows into the stored minutes in one transaction; one bad row refuses the call. */
  async mergeSliMinutes(rows: readonly SliMinuteRow[]): Promise<void> {
    const minutes = rows.map(checkedSliMinuteMs);
    await this.db.write(async (c) => {
      for (const [i, row] of rows.entries()) {
        await c.query(
          `INSERT INTO slo_minutes (endpoint, minute_ms, requests, server_errors, latency_total,
             latency_good) VALUES ($1, $2, $3, $4, $5, $6)
           ON CONFLICT (endpoint, minute_ms) DO UPDATE SET
             requests = slo_minutes.requests + excluded.requests,
             server_errors = slo_minutes.server_errors + excluded.server_errors,
             latency_total = slo_minutes.latency_total + excluded.latency_total,
             latency_good = slo_minutes.latency_good + excluded.latency_good`,
          [
            row.endpoint,
            minutes[i],
            row.requests,
            row.serverErrors,
            row.latencyTotal,
            row.latencyGood,
          ],
        );
      }
    });
  }

  async listSliMinutes(query: {
    readonly endpoint: string;
    readonly since: string;
    readonly until?: string;
  }): Promise<SliMinuteRow[]> {
    const rows = await pgListTimeKeyedRows<MinuteDbRow>(this.db, 'slo_minutes', 'minute_ms', query);
    return rows.map(toMinute);
  }

  pruneSliMinutes(before: string): Promise<number> {
    return pgPruneTimeKeyedRows(this.db, 'slo_minutes', 'minute_ms', before);
  }

  /** Current alert states (one endpoint's, or all), by endpoint then alert. */
  async listSloAlerts(endpoint?: string): Promise<SloAlertRecord[]> {
    const result = await this.db.read((c) =>
      endpoint === undefined
        ? c.query<AlertDbRow>(
            'SELECT * FROM slo_alerts ORDER BY endpoint COLLATE "C", alert COLLATE "C"',
          )
        : c.query<AlertDbRow>(
            'SELECT * FROM slo_alerts WHERE endpoint = $1 ORDER BY alert COLLATE "C"',
            [endpoint],
          ),
    );
    return result.rows.map(toAlert);
  }

  /** Writes one evaluation's states and transitions together. */
  async applySloAlerts(
    upserts: readonly SloAlertUpsert[],
    events: readonly NewSloAlertEvent[],
  ): Promise<void> {
    const now = isoAt(this.clock);
    await this.db.write(async (c) => {
      for (const u of upserts) {
        await c.query(
          `INSERT INTO slo_alerts (endpoint, alert, severity, state, since, summary, detail_json,
             updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
           ON CONFLICT (endpoint, alert) DO UPDATE SET severity = excluded.severity,
             state = excluded.state, since = excluded.since, summary = excluded.summary,
             detail_json = excluded.detail_json, updated_at = excluded.updated_at`,
          [
            u.endpoint,
            u.alert,
            u.severity,
            u.state,
            u.since,
            u.summary,
            JSON.stringify(u.detail),
            now,
          ],
        );
      }
      for (const e of events) {
        await c.query(
          `INSERT INTO slo_alert_events (endpoint, alert, severity, state, at, summary, detail_json)
           VALUES ($1, $2, $3, $4, $5, $6, $7)`,
          [e.endpoint, e.alert, e.severity, e.state, e.at, e.summary, JSON.stringify(e.detail)],
        );
      }
    });
  }

  /** An endpoint's alert transitions, newest first. */
  async listSloAlertEvents(query: {
    readonly endpoint: string;
    readonly limit?: number;
  }): Promise<SloAlertEvent[]> {
    const result = await this.db.read((c) =>
      c.query<EventDbRow>(
        'SELECT * FROM slo_alert_events WHERE endpoint = $1 ORDER BY id DESC LIMIT $2',
        [query.endpoint, query.limit ?? 100],
      ),
    );
    return result.rows.map(toEvent);
  }
}
