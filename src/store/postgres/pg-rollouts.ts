// PostgreSQL tables for rollouts and experiments (migration 5): the counterpart of
// sqlite-rollouts.ts. Records are created and moved inside a traffic change's transaction
// (PgTrafficTables.updateEndpointTraffic), whose write lock every control plane takes, so the
// checks here see every other writer's committed rows; the partial unique indexes back them
// against a writer that did not take the lock.
//
// PostgreSQL has no rowid: lists order by creation time, then id, in byte order (COLLATE "C")
// whatever the database's locale, so two rows created in one millisecond come in id order.

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
} from '../sqlite/sqlite-traffic-rows.ts';
import { isUniqueViolation, type PgQueryable } from './pg-database.ts';

/**
 * Runs one statement under a savepoint; when a unique index refuses it, the savepoint is
 * rolled back (the transaction stays usable) and `refuse` names the row in the way.
 */
async function refusedByUniqueIndex(
  c: PgQueryable,
  text: string,
  values: readonly unknown[],
  refuse: () => Promise<void>,
): Promise<void> {
  await c.query('SAVEPOINT kiln_unique');
  try {
    await c.query(text, values);
    await c.query('RELEASE SAVEPOINT kiln_unique');
  } catch (error) {
    if (!isUniqueViolation(error)) throw error;
    await c.query('ROLLBACK TO SAVEPOINT kiln_unique');
    await refuse();
    throw error;
  }
}

// ------------------------------------------------------------ rollouts

export async function getRollout(c: PgQueryable, id: string): Promise<RolloutRecord | null> {
  const row = (await c.query<RolloutRow>('SELECT * FROM rollouts WHERE id = $1', [id])).rows[0];
  return row === undefined ? null : toRollout(row);
}

export async function getActiveRollout(
  c: PgQueryable,
  endpoint: string,
): Promise<RolloutRecord | null> {
  const row = (
    await c.query<RolloutRow>(
      `SELECT * FROM rollouts WHERE endpoint = $1 AND state IN (${activeStates})`,
      [endpoint],
    )
  ).rows[0];
  return row === undefined ? null : toRollout(row);
}

export async function listRollouts(
  c: PgQueryable,
  query: { readonly endpoint?: string; readonly active?: boolean },
): Promise<RolloutRecord[]> {
  const where: string[] = [];
  const values: unknown[] = [];
  if (query.endpoint !== undefined) {
    values.push(query.endpoint);
    where.push(`endpoint = $${values.length}`);
  }
  if (query.active === true) where.push(`state IN (${activeStates})`);
  const rows = await c.query<RolloutRow>(
    `SELECT * FROM rollouts ${where.length === 0 ? '' : `WHERE ${where.join(' AND ')}`}
     ORDER BY created_at COLLATE "C" DESC, id COLLATE "C" DESC`,
    values,
  );
  return rows.rows.map(toRollout);
}

export async function createRollout(
  c: PgQueryable,
  endpoint: string,
  rollout: NewRollout,
  now: string,
): Promise<void> {
  if (rollout.endpoint !== endpoint) mismatch('a rollout', endpoint, rollout.endpoint);
  await refuseActiveRollout(c, endpoint);
  await refuseRunningExperiment(c, endpoint, 'a rollout cannot start while an experiment runs');
  await refusedByUniqueIndex(
    c,
    `INSERT INTO rollouts (id, endpoint, strategy, baseline_model, baseline_version,
       canary_model, canary_version, steps_json, step_index, interval_ms, thresholds_json,
       slice_key, slice_path, state, step_started_at, paused_at, reason,
       last_analysis_json, created_by, created_at, updated_at, finished_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, NULL, NULL,
       'null', $16, $17, $18, NULL)`,
    rolloutRowValues(rollout, now),
    // Only reachable if another writer slipped past the check.
    () => refuseActiveRollout(c, endpoint),
  );
}

export async function patchRollout(
  c: PgQueryable,
  endpoint: string,
  id: string,
  patch: RolloutPatch,
  now: string,
): Promise<void> {
  const existing = await getRollout(c, id);
  if (existing === null || existing.endpoint !== endpoint) {
    throw kilnError('KILN_ROLLOUT_NOT_FOUND', { rollout: id });
  }
  const columns = rolloutPatchColumns(patch);
  const sets = ['updated_at = $1', ...columns.map(([column], i) => `${column} = $${i + 2}`)];
  const values = [now, ...columns.map(([, value]) => value), id];
  await refusedByUniqueIndex(
    c,
    `UPDATE rollouts SET ${sets.join(', ')} WHERE id = $${values.length}`,
    values,
    // Made active again while another rollout of the endpoint is.
    () => refuseActiveRollout(c, endpoint, id),
  );
}

/** KILN_ROLLOUT_IN_PROGRESS when the endpoint has an active rollout (other than `except`). */
export async function refuseActiveRollout(
  c: PgQueryable,
  endpoint: string,
  except?: string,
): Promise<void> {
  const active = (
    await c.query<{ id: string; state: string }>(
      `SELECT id, state FROM rollouts WHERE endpoint = $1 AND state IN (${activeStates})
         AND id IS DISTINCT FROM $2`,
      [endpoint, except ?? null],
    )
  ).rows[0];
  if (active !== undefined) throw rolloutInProgress(endpoint, active);
}

// ------------------------------------------------------------ experiments

export async function getExperiment(c: PgQueryable, id: string): Promise<ExperimentRecord | null> {
  const row = (await c.query<ExperimentRow>('SELECT * FROM experiments WHERE id = $1', [id]))
    .rows[0];
  return row === undefined ? null : toExperiment(row);
}

export async function listExperiments(
  c: PgQueryable,
  query: { readonly endpoint?: string; readonly state?: ExperimentRecord['state'] },
): Promise<ExperimentRecord[]> {
  const where: string[] = [];
  const values: unknown[] = [];
  if (query.endpoint !== undefined) {
    values.push(query.endpoint);
    where.push(`endpoint = $${values.length}`);
  }
  if (query.state !== undefined) {
    values.push(query.state);
    where.push(`state = $${values.length}`);
  }
  const rows = await c.query<ExperimentRow>(
    `SELECT * FROM experiments ${where.length === 0 ? '' : `WHERE ${where.join(' AND ')}`}
     ORDER BY created_at COLLATE "C" DESC, id COLLATE "C" DESC`,
    values,
  );
  return rows.rows.map(toExperiment);
}

export async function createExperiment(
  c: PgQueryable,
  endpoint: string,
  experiment: NewExperiment,
  now: string,
): Promise<void> {
  if (experiment.endpoint !== endpoint) mismatch('an experiment', endpoint, experiment.endpoint);
  const reason = 'one experiment at a time per endpoint';
  await refuseRunningExperiment(c, endpoint, reason);
  await refuseActiveRollout(c, endpoint);
  await refusedByUniqueIndex(
    c,
    `INSERT INTO experiments (id, endpoint, name, variants_json, salt, key_path, state,
       created_by, created_at, stopped_at)
     VALUES ($1, $2, $3, $4, $5, $6, 'running', $7, $8, NULL)`,
    experimentRowValues(experiment, now),
    () => refuseRunningExperiment(c, endpoint, reason),
  );
}

export async function stopExperiment(
  c: PgQueryable,
  endpoint: string,
  id: string,
  at: string,
): Promise<void> {
  checkExperimentStop(endpoint, id, await getExperiment(c, id));
  await c.query(`UPDATE experiments SET state = 'stopped', stopped_at = $1 WHERE id = $2`, [
    at,
    id,
  ]);
}

/** KILN_EXPERIMENT_IN_PROGRESS when the endpoint runs an experiment. */
export async function refuseRunningExperiment(
  c: PgQueryable,
  endpoint: string,
  reason: string,
): Promise<void> {
  const running = (
    await c.query<{ id: string }>(
      `SELECT id FROM experiments WHERE endpoint = $1 AND state = 'running'`,
      [endpoint],
    )
  ).rows[0];
  if (running !== undefined) throw experimentInProgress(endpoint, running.id, reason);
}
