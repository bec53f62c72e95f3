// What keeps a model version from being deleted, beside its aliases and the endpoints whose
// stable version it is: the traffic of an endpoint running it, an active rollout or a
// running experiment naming it. Pure over the records both stores read, so SQLite and
// PostgreSQL refuse the same deletes with the same list of users.

import {
  versionKey,
  type EndpointTrafficRecord,
  type ExperimentRecord,
  type RolloutRecord,
  type VersionRef,
} from './traffic-records.ts';

/** What a traffic record keeps running: policy versions, shadows, staged, warm not yet expired. */
export function runningRefs(record: EndpointTrafficRecord, nowMs: number): VersionRef[] {
  return [
    ...(record.policy?.versions ?? []),
    ...(record.policy?.shadows ?? []),
    ...record.staged,
    ...record.warm.filter((w) => Date.parse(w.until) > nowMs),
  ];
}

/**
 * Names the users of `ref` among traffic records, active rollouts and running experiments
 * (each list in the order the store reads it), as KILN_VERSION_IN_USE reports them.
 */
export function trafficUsersOf(
  ref: VersionRef,
  state: {
    readonly traffic: readonly EndpointTrafficRecord[];
    readonly activeRollouts: readonly RolloutRecord[];
    readonly runningExperiments: readonly ExperimentRecord[];
  },
  nowMs: number,
): string[] {
  const key = versionKey(ref);
  const users: string[] = [];
  for (const record of state.traffic) {
    if (runningRefs(record, nowMs).some((r) => versionKey(r) === key)) {
      users.push(`traffic of endpoint ${record.endpoint}`);
    }
  }
  for (const rollout of state.activeRollouts) {
    if (versionKey(rollout.baseline) === key || versionKey(rollout.canary) === key) {
      users.push(`rollout ${rollout.id}`);
    }
  }
  for (const experiment of state.runningExperiments) {
    if (experiment.variants.some((v) => versionKey(v) === key)) {
      users.push(`experiment ${experiment.id}`);
    }
  }
  return users;
}
