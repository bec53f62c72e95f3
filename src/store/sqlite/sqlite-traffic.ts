// SQLite tables for traffic management (migration 5): each endpoint's traffic record, the
// history of changes. SqliteStore delegates here; rollouts and experiments, written inside a
// change, are in sqlite-rollouts.ts; outcomes, observations and golden sets in
// sqlite-traffic-data.ts.
//
// A TrafficChange is one BEGIN IMMEDIATE transaction: every check runs with the write lock
// held, and whatever it refuses (a KilnError thrown inside) rolls back all of it, so a
// refused change writes nothing. "One active rollout per endpoint" and "one running
// experiment per endpoint" are also partial unique indexes, so they hold whichever process
// writes.

import type Database from 'better-sqlite3';
import { kilnError } from '../../core/errors.ts';
import { isoAt, type Clock } from '../../core/clock.ts';
import type { Page } from '../../registry/types.ts';
import { cursorNumber, decodePageToken, pageOf } from '../page-token.ts';
import type { PageRequest } from '../store.ts';
import type {
  EndpointTrafficRecord,
  NewTrafficEvent,
  TrafficChange,
  TrafficEvent,
  VersionRef,
} from '../traffic-records.ts';
import {
  activeStates,
  checkExpectedRevision,
  mismatch,
  trafficRowValues,
  versionsToCheck,
} from '../traffic-change.ts';
import { trafficUsersOf } from '../version-users.ts';
import {
  jsonText,
  toTrafficEvent,
  toTrafficRecord,
  type TrafficEventRow,
  type TrafficRow,
} from './sqlite-traffic-rows.ts';
import { liveVersionId } from './sqlite-traffic-data.ts';
import { canonicalTime } from '../traffic-data-checks.ts';
import type { SqliteRolloutTables } from './sqlite-rollouts.ts';

export class SqliteTrafficTables {
  constructor(
    private readonly db: Database.Database,
    private readonly clock: Clock,
    private readonly runs: SqliteRolloutTables,
  ) {}

  // ------------------------------------------------------------ traffic records

  get(endpoint: string): EndpointTrafficRecord | null {
    const row = this.db
      .prepare('SELECT * FROM endpoint_traffic WHERE endpoint = ?')
      .get(endpoint) as TrafficRow | undefined;
    return row === undefined ? null : toTrafficRecord(row);
  }

  list(): EndpointTrafficRecord[] {
    return (
      this.db.prepare('SELECT * FROM endpoint_traffic ORDER BY endpoint').all() as TrafficRow[]
    ).map(toTrafficRecord);
  }

  update(endpoint: string, change: TrafficChange): EndpointTrafficRecord {
    const write = this.db.transaction((): EndpointTrafficRecord => {
      const stable = this.db
        .prepare(
          `SELECT m.name AS model, v.version FROM endpoints e JOIN models m ON m.id = e.model_id
           JOIN model_versions v ON v.id = e.version_id WHERE e.name = ?`,
        )
        .get(endpoint) as VersionRef | undefined;
      if (stable === undefined) throw kilnError('KILN_ENDPOINT_NOT_FOUND', { endpoint });
      if (change.event.endpoint !== endpoint) mismatch('an event', endpoint, change.event.endpoint);
      const current = this.get(endpoint);
      checkExpectedRevision(endpoint, change, current?.revision ?? 0);
      this.requireNewVersions(change, current, stable);
      const now = isoAt(this.clock);
      if (change.stable !== undefined) this.moveStable(endpoint, change.stable, now);
      const rollout = change.rollout;
      if (rollout !== undefined) {
        if ('create' in rollout) this.runs.createRollout(endpoint, rollout.create, now);
        else this.runs.patchRollout(endpoint, rollout.id, rollout.patch, now);
      }
      const experiment = change.experiment;
      if (experiment !== undefined) {
        if ('create' in experiment) this.runs.createExperiment(endpoint, experiment.create, now);
        else this.runs.stopExperiment(endpoint, experiment.stop, experiment.at);
      }
      this.db
        .prepare(
          `INSERT INTO endpoint_traffic (endpoint, policy_json, previous_json, warm_json,
             staged_json, revision, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)
           ON CONFLICT (endpoint) DO UPDATE SET policy_json = excluded.policy_json,
             previous_json = excluded.previous_json, warm_json = excluded.warm_json,
             staged_json = excluded.staged_json, revision = excluded.revision,
             updated_at = excluded.updated_at`,
        )
        .run(...trafficRowValues(endpoint, change, current, now));
      this.insertEvent(change.event, now);
      const record = this.get(endpoint);
      if (record === null) throw kilnError('KILN_INTERNAL', { reason: 'traffic record vanished' });
      return record;
    });
    return write.immediate();
  }

  /** Every version a change starts naming must exist and not be deleted (versionsToCheck). */
  private requireNewVersions(
    change: TrafficChange,
    current: EndpointTrafficRecord | null,
    stable: VersionRef,
  ): void {
    for (const ref of versionsToCheck(change, current, stable, this.clock.now())) {
      if (liveVersionId(this.db, ref.model, ref.version) === null) {
        throw kilnError('KILN_VERSION_NOT_FOUND', { model: ref.model, version: ref.version });
      }
    }
  }

  private moveStable(endpoint: string, stable: VersionRef & { ref: string }, now: string): void {
    const row = this.db
      .prepare(
        `SELECT m.id AS model_id, v.id AS version_id FROM models m
         JOIN model_versions v ON v.model_id = m.id
         WHERE m.name = ? AND v.version = ? AND v.deleted_at IS NULL`,
      )
      .get(stable.model, stable.version) as { model_id: number; version_id: number } | undefined;
    if (row === undefined) {
      throw kilnError('KILN_VERSION_NOT_FOUND', { model: stable.model, version: stable.version });
    }
    this.db
      .prepare(
        'UPDATE endpoints SET model_id = ?, version_id = ?, ref = ?, updated_at = ? WHERE name = ?',
      )
      .run(row.model_id, row.version_id, stable.ref, now, endpoint);
  }

  /**
   * Names what keeps a version from being deleted: endpoints whose traffic runs it, active
   * rollouts and running experiments that name it.
   */
  versionUsers(model: string, version: number): string[] {
    return trafficUsersOf(
      { model, version },
      {
        traffic: this.list(),
        activeRollouts: this.runs.listRollouts({ active: true }),
        runningExperiments: this.runs.listExperiments({ state: 'running' }),
      },
      this.clock.now(),
    );
  }

  /**
   * An endpoint is deleted (inside its delete's transaction): its traffic record goes (the
   * foreign key cascades too), its active rollout is aborted and its running experiment
   * stopped, so a new endpoint of the same name starts clean. History stays.
   */
  endpointDeleted(endpoint: string): void {
    const now = isoAt(this.clock);
    this.db.prepare('DELETE FROM endpoint_traffic WHERE endpoint = ?').run(endpoint);
    this.db
      .prepare(
        `UPDATE rollouts SET state = 'aborted', reason = 'the endpoint was deleted',
           finished_at = ?, updated_at = ? WHERE endpoint = ? AND state IN (${activeStates})`,
      )
      .run(now, now, endpoint);
    this.db
      .prepare(
        `UPDATE experiments SET state = 'stopped', stopped_at = ?
         WHERE endpoint = ? AND state = 'running'`,
      )
      .run(now, endpoint);
  }

  // ------------------------------------------------------------ history

  appendEvent(event: NewTrafficEvent): TrafficEvent {
    return this.insertEvent(event, isoAt(this.clock));
  }

  private insertEvent(event: NewTrafficEvent, at: string): TrafficEvent {
    const row = this.db
      .prepare(
        `INSERT INTO traffic_events (endpoint, at, actor, action, reason, detail_json)
         VALUES (?, ?, ?, ?, ?, ?) RETURNING *`,
      )
      .get(
        event.endpoint,
        at,
        event.actor,
        event.action,
        event.reason,
        jsonText(event.detail),
      ) as TrafficEventRow;
    return toTrafficEvent(row);
  }

  listEvents(
    endpoint: string,
    request: PageRequest & { readonly since?: string | undefined },
  ): Page<TrafficEvent> {
    const before =
      request.pageToken === undefined
        ? Number.MAX_SAFE_INTEGER
        : cursorNumber(decodePageToken(request.pageToken), 'before');
    // Stored times are toISOString()'s; `since` is made the same so text order is time order
    // ('…:03Z' would sort after '…:03.000Z').
    const since = request.since === undefined ? null : canonicalTime(request.since, 'since');
    const rows = this.db
      .prepare(
        `SELECT * FROM traffic_events WHERE endpoint = ? AND id < ? AND (? IS NULL OR at >= ?)
         ORDER BY id DESC LIMIT ?`,
      )
      .all(endpoint, before, since, since, request.limit + 1) as TrafficEventRow[];
    return pageOf(rows, request.limit, toTrafficEvent, (r) => ({ before: r.id }));
  }
}
