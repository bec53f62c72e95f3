// SQLite tables for traffic management (migration 5): each endpoint's traffic record, the
// history of changes, rollouts and experiments. SqliteStore delegates here; outcomes,
// observations and golden sets are in sqlite-traffic-data.ts.
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
import {
  activeRolloutStates,
  versionKey,
  type EndpointTrafficRecord,
  type ExperimentRecord,
  type NewExperiment,
  type NewRollout,
  type NewTrafficEvent,
  type RolloutPatch,
  type RolloutRecord,
  type TrafficChange,
  type TrafficEvent,
  type VersionRef,
} from '../traffic-records.ts';
import {
  jsonText,
  toExperiment,
  toRollout,
  toTrafficEvent,
  toTrafficRecord,
  type ExperimentRow,
  type RolloutRow,
  type TrafficEventRow,
  type TrafficRow,
} from './sqlite-traffic-rows.ts';
import { liveVersionId } from './sqlite-traffic-data.ts';

const activeStates = activeRolloutStates.map((s) => `'${s}'`).join(', ');

/** Rollout patch fields and their columns; lastAnalysis is a JSON column. */
const patchColumns: Readonly<Record<keyof RolloutPatch, string>> = {
  stepIndex: 'step_index',
  state: 'state',
  stepStartedAt: 'step_started_at',
  pausedAt: 'paused_at',
  reason: 'reason',
  lastAnalysis: 'last_analysis_json',
  finishedAt: 'finished_at',
};

function isUniqueViolation(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === 'SQLITE_CONSTRAINT_UNIQUE';
}

function mismatch(what: string, endpoint: string, named: string): never {
  throw kilnError('KILN_INTERNAL', {
    reason: `a traffic change of endpoint ${endpoint} carries ${what} of endpoint ${named}`,
  });
}

export class SqliteTrafficTables {
  constructor(
    private readonly db: Database.Database,
    private readonly clock: Clock,
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
      const revision = current?.revision ?? 0;
      if (change.expectRevision !== undefined && change.expectRevision !== revision) {
        throw kilnError(
          'KILN_TRAFFIC_CONFLICT',
          {
            endpoint,
            reason: `expected revision ${change.expectRevision}, it is at revision ${revision}`,
          },
          { expectedRevision: change.expectRevision, revision },
        );
      }
      this.requireNewVersions(change, current, stable);
      const now = isoAt(this.clock);
      if (change.stable !== undefined) this.moveStable(endpoint, change.stable, now);
      const rollout = change.rollout;
      if (rollout !== undefined) {
        if ('create' in rollout) this.createRollout(endpoint, rollout.create, now);
        else this.patchRollout(endpoint, rollout.id, rollout.patch, now);
      }
      const experiment = change.experiment;
      if (experiment !== undefined) {
        if ('create' in experiment) this.createExperiment(endpoint, experiment.create, now);
        else this.stopExperiment(endpoint, experiment.stop, experiment.at);
      }
      const policy = change.policy !== undefined ? change.policy : (current?.policy ?? null);
      const previous =
        change.previous !== undefined ? change.previous : (current?.previous ?? null);
      this.db
        .prepare(
          `INSERT INTO endpoint_traffic (endpoint, policy_json, previous_json, warm_json,
             staged_json, revision, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)
           ON CONFLICT (endpoint) DO UPDATE SET policy_json = excluded.policy_json,
             previous_json = excluded.previous_json, warm_json = excluded.warm_json,
             staged_json = excluded.staged_json, revision = excluded.revision,
             updated_at = excluded.updated_at`,
        )
        .run(
          endpoint,
          policy === null ? null : JSON.stringify(policy),
          previous === null ? null : JSON.stringify(previous),
          JSON.stringify(change.warm ?? current?.warm ?? []),
          JSON.stringify(change.staged ?? current?.staged ?? []),
          revision + 1,
          now,
        );
      this.insertEvent(change.event, now);
      const record = this.get(endpoint);
      if (record === null) throw kilnError('KILN_INTERNAL', { reason: 'traffic record vanished' });
      return record;
    });
    return write.immediate();
  }

  /**
   * Every version a change starts naming must exist and not be deleted. Versions the endpoint
   * already runs (its stable, policy, shadow, staged and unexpired warm ones) are the ones a
   * version delete refuses to remove (`versionUsers`), so they need no second look; a stable
   * move is always checked (moveStable), since `previous` is not protected.
   */
  private requireNewVersions(
    change: TrafficChange,
    current: EndpointTrafficRecord | null,
    stable: VersionRef,
  ): void {
    const known = new Set<string>([versionKey(stable)]);
    if (current !== null) {
      for (const ref of this.runningRefs(current)) known.add(versionKey(ref));
    }
    const named: VersionRef[] = [
      ...(change.policy?.versions ?? []),
      ...(change.policy?.shadows ?? []),
      ...(change.staged ?? []),
      ...(change.warm ?? []),
      ...(change.previous === undefined || change.previous === null ? [] : [change.previous]),
    ];
    const rollout = change.rollout;
    if (rollout !== undefined && 'create' in rollout) {
      named.push(rollout.create.baseline, rollout.create.canary);
    }
    const experiment = change.experiment;
    if (experiment !== undefined && 'create' in experiment) {
      named.push(...experiment.create.variants);
    }
    for (const ref of named) {
      if (known.has(versionKey(ref))) continue;
      if (liveVersionId(this.db, ref.model, ref.version) === null) {
        throw kilnError('KILN_VERSION_NOT_FOUND', { model: ref.model, version: ref.version });
      }
      known.add(versionKey(ref));
    }
  }

  /** What a record keeps running: policy versions, shadows, staged, warm not yet expired. */
  private runningRefs(record: EndpointTrafficRecord): VersionRef[] {
    const now = this.clock.now();
    return [
      ...(record.policy?.versions ?? []),
      ...(record.policy?.shadows ?? []),
      ...record.staged,
      ...record.warm.filter((w) => Date.parse(w.until) > now),
    ];
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
    const key = versionKey({ model, version });
    const users: string[] = [];
    for (const record of this.list()) {
      if (this.runningRefs(record).some((ref) => versionKey(ref) === key)) {
        users.push(`traffic of endpoint ${record.endpoint}`);
      }
    }
    for (const rollout of this.listRollouts({ active: true })) {
      if (versionKey(rollout.baseline) === key || versionKey(rollout.canary) === key) {
        users.push(`rollout ${rollout.id}`);
      }
    }
    for (const experiment of this.listExperiments({ state: 'running' })) {
      if (experiment.variants.some((v) => versionKey(v) === key)) {
        users.push(`experiment ${experiment.id}`);
      }
    }
    return users;
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
    const rows = this.db
      .prepare(
        `SELECT * FROM traffic_events WHERE endpoint = ? AND id < ? AND (? IS NULL OR at >= ?)
         ORDER BY id DESC LIMIT ?`,
      )
      .all(
        endpoint,
        before,
        request.since ?? null,
        request.since ?? null,
        request.limit + 1,
      ) as TrafficEventRow[];
    return pageOf(rows, request.limit, toTrafficEvent, (r) => ({ before: r.id }));
  }

  // ------------------------------------------------------------ rollouts

  getRollout(id: string): RolloutRecord | null {
    const row = this.db.prepare('SELECT * FROM rollouts WHERE id = ?').get(id) as
      RolloutRow | undefined;
    return row === undefined ? null : toRollout(row);
  }

  getActiveRollout(endpoint: string): RolloutRecord | null {
    const row = this.db
      .prepare(`SELECT * FROM rollouts WHERE endpoint = ? AND state IN (${activeStates})`)
      .get(endpoint) as RolloutRow | undefined;
    return row === undefined ? null : toRollout(row);
  }

  listRollouts(query: { readonly endpoint?: string; readonly active?: boolean }): RolloutRecord[] {
    const rows = this.db
      .prepare(
        `SELECT * FROM rollouts WHERE (? IS NULL OR endpoint = ?)
           AND (? = 0 OR state IN (${activeStates}))
         ORDER BY created_at DESC, rowid DESC`,
      )
      .all(
        query.endpoint ?? null,
        query.endpoint ?? null,
        query.active === true ? 1 : 0,
      ) as RolloutRow[];
    return rows.map(toRollout);
  }

  private createRollout(endpoint: string, rollout: NewRollout, now: string): void {
    if (rollout.endpoint !== endpoint) mismatch('a rollout', endpoint, rollout.endpoint);
    this.refuseActiveRollout(endpoint);
    this.refuseRunningExperiment(endpoint, 'a rollout cannot start while an experiment runs');
    try {
      this.db
        .prepare(
          `INSERT INTO rollouts (id, endpoint, strategy, baseline_model, baseline_version,
             canary_model, canary_version, steps_json, step_index, interval_ms, thresholds_json,
             slice_key, slice_path, state, step_started_at, paused_at, reason,
             last_analysis_json, created_by, created_at, updated_at, finished_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL, 'null', ?, ?, ?, NULL)`,
        )
        .run(
          rollout.id,
          endpoint,
          rollout.strategy,
          rollout.baseline.model,
          rollout.baseline.version,
          rollout.canary.model,
          rollout.canary.version,
          JSON.stringify(rollout.steps),
          rollout.stepIndex,
          rollout.intervalMs,
          JSON.stringify(rollout.thresholds),
          rollout.sliceKey,
          rollout.slicePath,
          rollout.state,
          rollout.stepStartedAt,
          rollout.createdBy,
          now,
          now,
        );
    } catch (error) {
      // The partial unique index: only reachable if another writer slipped past the check.
      if (isUniqueViolation(error)) this.refuseActiveRollout(endpoint);
      throw error;
    }
  }

  private patchRollout(endpoint: string, id: string, patch: RolloutPatch, now: string): void {
    const existing = this.getRollout(id);
    if (existing === null || existing.endpoint !== endpoint) {
      throw kilnError('KILN_ROLLOUT_NOT_FOUND', { rollout: id });
    }
    const sets: string[] = ['updated_at = ?'];
    const values: unknown[] = [now];
    for (const [field, column] of Object.entries(patchColumns) as [keyof RolloutPatch, string][]) {
      const value = patch[field];
      if (value === undefined) continue;
      sets.push(`${column} = ?`);
      values.push(field === 'lastAnalysis' ? jsonText(value) : value);
    }
    try {
      this.db.prepare(`UPDATE rollouts SET ${sets.join(', ')} WHERE id = ?`).run(...values, id);
    } catch (error) {
      // Made active again while another rollout of the endpoint is.
      if (isUniqueViolation(error)) this.refuseActiveRollout(endpoint, id);
      throw error;
    }
  }

  private refuseActiveRollout(endpoint: string, except?: string): void {
    const active = this.db
      .prepare(
        `SELECT id, state FROM rollouts WHERE endpoint = ? AND state IN (${activeStates})
           AND id IS NOT ?`,
      )
      .get(endpoint, except ?? null) as { id: string; state: string } | undefined;
    if (active !== undefined) {
      throw kilnError('KILN_ROLLOUT_IN_PROGRESS', {
        endpoint,
        rollout: active.id,
        state: active.state,
      });
    }
  }

  // ------------------------------------------------------------ experiments

  getExperiment(id: string): ExperimentRecord | null {
    const row = this.db.prepare('SELECT * FROM experiments WHERE id = ?').get(id) as
      ExperimentRow | undefined;
    return row === undefined ? null : toExperiment(row);
  }

  listExperiments(query: {
    readonly endpoint?: string;
    readonly state?: ExperimentRecord['state'];
  }): ExperimentRecord[] {
    const rows = this.db
      .prepare(
        `SELECT * FROM experiments WHERE (? IS NULL OR endpoint = ?) AND (? IS NULL OR state = ?)
         ORDER BY created_at DESC, rowid DESC`,
      )
      .all(
        query.endpoint ?? null,
        query.endpoint ?? null,
        query.state ?? null,
        query.state ?? null,
      ) as ExperimentRow[];
    return rows.map(toExperiment);
  }

  private createExperiment(endpoint: string, experiment: NewExperiment, now: string): void {
    if (experiment.endpoint !== endpoint) mismatch('an experiment', endpoint, experiment.endpoint);
    this.refuseRunningExperiment(endpoint, 'one experiment at a time per endpoint');
    this.refuseActiveRollout(endpoint);
    try {
      this.db
        .prepare(
          `INSERT INTO experiments (id, endpoint, name, variants_json, salt, key_path, state,
             created_by, created_at, stopped_at) VALUES (?, ?, ?, ?, ?, ?, 'running', ?, ?, NULL)`,
        )
        .run(
          experiment.id,
          endpoint,
          experiment.name,
          JSON.stringify(experiment.variants),
          experiment.salt,
          experiment.keyPath,
          experiment.createdBy,
          now,
        );
    } catch (error) {
      if (isUniqueViolation(error)) {
        this.refuseRunningExperiment(endpoint, 'one experiment at a time per endpoint');
      }
      throw error;
    }
  }

  private stopExperiment(endpoint: string, id: string, at: string): void {
    const existing = this.getExperiment(id);
    if (existing === null || existing.endpoint !== endpoint) {
      throw kilnError('KILN_EXPERIMENT_NOT_FOUND', { experiment: id });
    }
    if (existing.state === 'stopped') {
      throw kilnError('KILN_EXPERIMENT_STOPPED', {
        experiment: id,
        reason: `it was stopped at ${existing.stoppedAt ?? 'an unknown time'}`,
      });
    }
    this.db
      .prepare(`UPDATE experiments SET state = 'stopped', stopped_at = ? WHERE id = ?`)
      .run(at, id);
  }

  private refuseRunningExperiment(endpoint: string, reason: string): void {
    const running = this.db
      .prepare(`SELECT id FROM experiments WHERE endpoint = ? AND state = 'running'`)
      .get(endpoint) as { id: string } | undefined;
    if (running !== undefined) {
      throw kilnError('KILN_EXPERIMENT_IN_PROGRESS', {
        endpoint,
        experiment: running.id,
        reason,
      });
    }
  }
}
