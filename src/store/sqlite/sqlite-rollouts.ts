// SQLite tables for rollouts and experiments (migration 5). Their records are created and
// moved inside a traffic change's transaction (SqliteTrafficTables.update), never alone: a
// rollout's step and the split it sets are one write. The checks here run under that
// transaction's write lock; the partial unique indexes back them across processes.

import type Database from 'better-sqlite3';
import { kilnError } from '../../core/errors.ts';
import type {
  ExperimentRecord,
  NewExperiment,
  NewRollout,
  RolloutPatch,
  RolloutRecord,
} from '../traffic-records.ts';
import {
  activeStates,
  checkExperimentStop,
  experimentInProgress,
  experimentRowValues,
  mismatch,
  rolloutInProgress,
  rolloutPatchColumns,
  rolloutRowValues,
} from '../traffic-change.ts';
import {
  toExperiment,
  toRollout,
  type ExperimentRow,
  type RolloutRow,
} from './sqlite-traffic-rows.ts';

function isUniqueViolation(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === 'SQLITE_CONSTRAINT_UNIQUE';
}

export class SqliteRolloutTables {
  constructor(private readonly db: Database.Database) {}

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

  createRollout(endpoint: string, rollout: NewRollout, now: string): void {
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
        .run(...rolloutRowValues(rollout, now));
    } catch (error) {
      // The partial unique index: only reachable if another writer slipped past the check.
      if (isUniqueViolation(error)) this.refuseActiveRollout(endpoint);
      throw error;
    }
  }

  patchRollout(endpoint: string, id: string, patch: RolloutPatch, now: string): void {
    const existing = this.getRollout(id);
    if (existing === null || existing.endpoint !== endpoint) {
      throw kilnError('KILN_ROLLOUT_NOT_FOUND', { rollout: id });
    }
    const columns = rolloutPatchColumns(patch);
    const sets = ['updated_at = ?', ...columns.map(([column]) => `${column} = ?`)];
    const values = [now, ...columns.map(([, value]) => value)];
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
    if (active !== undefined) throw rolloutInProgress(endpoint, active);
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

  createExperiment(endpoint: string, experiment: NewExperiment, now: string): void {
    if (experiment.endpoint !== endpoint) mismatch('an experiment', endpoint, experiment.endpoint);
    this.refuseRunningExperiment(endpoint, 'one experiment at a time per endpoint');
    this.refuseActiveRollout(endpoint);
    try {
      this.db
        .prepare(
          `INSERT INTO experiments (id, endpoint, name, variants_json, salt, key_path, state,
             created_by, created_at, stopped_at) VALUES (?, ?, ?, ?, ?, ?, 'running', ?, ?, NULL)`,
        )
        .run(...experimentRowValues(experiment, now));
    } catch (error) {
      if (isUniqueViolation(error)) {
        this.refuseRunningExperiment(endpoint, 'one experiment at a time per endpoint');
      }
      throw error;
    }
  }

  stopExperiment(endpoint: string, id: string, at: string): void {
    checkExperimentStop(endpoint, id, this.getExperiment(id));
    this.db
      .prepare(`UPDATE experiments SET state = 'stopped', stopped_at = ? WHERE id = ?`)
      .run(at, id);
  }

  private refuseRunningExperiment(endpoint: string, reason: string): void {
    const running = this.db
      .prepare(`SELECT id FROM experiments WHERE endpoint = ? AND state = 'running'`)
      .get(endpoint) as { id: string } | undefined;
    if (running !== undefined) throw experimentInProgress(endpoint, running.id, reason);
  }
}
