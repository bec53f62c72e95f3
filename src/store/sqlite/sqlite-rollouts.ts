// SQLite tables for rollouts and experiments (migration 5). Their records are created and
// moved inside a traffic change's transaction (SqliteTrafficTables.update), never alone: a
// rollout's step and the split it sets are one write. The checks here run under that
// transaction's write lock; the partial unique indexes back them across processes.

import type Database from 'better-sqlite3';
import { kilnError } from '../../core/errors.ts';
import {
  activeRolloutStates,
  type ExperimentRecord,
  type NewExperiment,
  type NewRollout,
  type RolloutPatch,
  type RolloutRecord,
} from '../traffic-records.ts';
import {
  jsonText,
  toExperiment,
  toRollout,
  type ExperimentRow,
  type RolloutRow,
} from './sqlite-traffic-rows.ts';

export const activeStates = activeRolloutStates.map((s) => `'${s}'`).join(', ');

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

/** A record of another endpoint inside a change: a caller's bug, not a user's mistake. */
export function mismatch(what: string, endpoint: string, named: string): never {
  throw kilnError('KILN_INTERNAL', {
    reason: `a traffic change of endpoint ${endpoint} carries ${what} of endpoint ${named}`,
  });
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

  patchRollout(endpoint: string, id: string, patch: RolloutPatch, now: string): void {
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

  stopExperiment(endpoint: string, id: string, at: string): void {
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
