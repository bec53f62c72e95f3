// What a traffic change decides without its database: the checks and values both stores
// (sqlite-traffic.ts, postgres/pg-traffic.ts) run inside their write transactions, so the two
// refuse the same changes with the same errors and write the same rows.

import { kilnError, type KilnError } from '../core/errors.ts';
import {
  activeRolloutStates,
  versionKey,
  type EndpointTrafficRecord,
  type ExperimentRecord,
  type NewExperiment,
  type NewRollout,
  type RolloutPatch,
  type TrafficChange,
  type VersionRef,
} from './traffic-records.ts';
import { runningRefs } from './version-users.ts';

/** The active rollout states as an SQL list: `'starting', 'running', 'paused'`. */
export const activeStates = activeRolloutStates.map((s) => `'${s}'`).join(', ');

/** A record of another endpoint inside a change: a caller's bug, not a user's mistake. */
export function mismatch(what: string, endpoint: string, named: string): never {
  throw kilnError('KILN_INTERNAL', {
    reason: `a traffic change of endpoint ${endpoint} carries ${what} of endpoint ${named}`,
  });
}

/** Refuses a change whose `expectRevision` is not the stored revision (0: no record yet). */
export function checkExpectedRevision(
  endpoint: string,
  change: TrafficChange,
  revision: number,
): void {
  if (change.expectRevision === undefined || change.expectRevision === revision) return;
  throw kilnError(
    'KILN_TRAFFIC_CONFLICT',
    {
      endpoint,
      reason: `expected revision ${change.expectRevision}, it is at revision ${revision}`,
    },
    { expectedRevision: change.expectRevision, revision },
  );
}

/**
 * The versions a change starts naming that must be checked to exist and not be deleted, each
 * once. Versions the endpoint already runs (its stable, policy, shadow, staged and unexpired
 * warm ones) are the ones a version delete refuses to remove (`versionUsers`), so they need
 * no second look; a stable move is always checked where it is written, since `previous` is
 * not protected.
 */
export function versionsToCheck(
  change: TrafficChange,
  current: EndpointTrafficRecord | null,
  stable: VersionRef,
  nowMs: number,
): VersionRef[] {
  const known = new Set<string>([versionKey(stable)]);
  if (current !== null) {
    for (const ref of runningRefs(current, nowMs)) known.add(versionKey(ref));
  }
  const named: VersionRef[] = [
    ...(change.policy?.versions ?? []),
    ...(change.policy?.shadows ?? []),
    ...(change.staged ?? []),
    // A warm entry whose time is up runs nothing: its version may be gone meanwhile.
    ...(change.warm ?? []).filter((w) => Date.parse(w.until) > nowMs),
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
  const toCheck: VersionRef[] = [];
  for (const ref of named) {
    if (known.has(versionKey(ref))) continue;
    known.add(versionKey(ref));
    toCheck.push(ref);
  }
  return toCheck;
}

/**
 * The traffic record's row after the change (fields the change leaves undefined are kept):
 * endpoint, policy_json, previous_json, warm_json, staged_json, revision, updated_at.
 */
export function trafficRowValues(
  endpoint: string,
  change: TrafficChange,
  current: EndpointTrafficRecord | null,
  now: string,
): unknown[] {
  const policy = change.policy !== undefined ? change.policy : (current?.policy ?? null);
  const previous = change.previous !== undefined ? change.previous : (current?.previous ?? null);
  return [
    endpoint,
    policy === null ? null : JSON.stringify(policy),
    previous === null ? null : JSON.stringify(previous),
    JSON.stringify(change.warm ?? current?.warm ?? []),
    JSON.stringify(change.staged ?? current?.staged ?? []),
    (current?.revision ?? 0) + 1,
    now,
  ];
}

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

/** The columns a patch sets and their values, in a fixed order (absent fields are left). */
export function rolloutPatchColumns(patch: RolloutPatch): [column: string, value: unknown][] {
  const sets: [string, unknown][] = [];
  for (const [field, column] of Object.entries(patchColumns) as [keyof RolloutPatch, string][]) {
    const value = patch[field];
    if (value === undefined) continue;
    sets.push([column, field === 'lastAnalysis' ? JSON.stringify(value ?? null) : value]);
  }
  return sets;
}

/**
 * A new rollout's row values, in the column order: id, endpoint, strategy, baseline_model,
 * baseline_version, canary_model, canary_version, steps_json, step_index, interval_ms,
 * thresholds_json, slice_key, slice_path, state, step_started_at, created_by, created_at,
 * updated_at (paused_at, reason, finished_at start NULL and last_analysis_json 'null').
 */
export function rolloutRowValues(rollout: NewRollout, now: string): unknown[] {
  return [
    rollout.id,
    rollout.endpoint,
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
  ];
}

/**
 * A new experiment's row values, in the column order: id, endpoint, name, variants_json,
 * salt, key_path, created_by, created_at (state starts 'running', stopped_at NULL).
 */
export function experimentRowValues(experiment: NewExperiment, now: string): unknown[] {
  return [
    experiment.id,
    experiment.endpoint,
    experiment.name,
    JSON.stringify(experiment.variants),
    experiment.salt,
    experiment.keyPath,
    experiment.createdBy,
    now,
  ];
}

export function rolloutInProgress(
  endpoint: string,
  active: { readonly id: string; readonly state: string },
): KilnError {
  return kilnError('KILN_ROLLOUT_IN_PROGRESS', {
    endpoint,
    rollout: active.id,
    state: active.state,
  });
}

export function experimentInProgress(endpoint: string, id: string, reason: string): KilnError {
  return kilnError('KILN_EXPERIMENT_IN_PROGRESS', { endpoint, experiment: id, reason });
}

/** A stop names a running experiment of this endpoint; refused otherwise. */
export function checkExperimentStop(
  endpoint: string,
  id: string,
  existing: ExperimentRecord | null,
): void {
  if (existing === null || existing.endpoint !== endpoint) {
    throw kilnError('KILN_EXPERIMENT_NOT_FOUND', { experiment: id });
  }
  if (existing.state === 'stopped') {
    throw kilnError('KILN_EXPERIMENT_STOPPED', {
      experiment: id,
      reason: `it was stopped at ${existing.stoppedAt ?? 'an unknown time'}`,
    });
  }
}
