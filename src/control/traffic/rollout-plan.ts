// What one tick does with one rollout, decided from what was read (the record, the canary's
// replicas, the step's analysis, a golden outcome) and the time: pure, so every branch is a
// plain function call in tests. The controller reads, asks here, and writes what it is told
// (rollout-changes.ts says how each decision changes the traffic).
//
//   starting:   replicas not all ready ─► hold, or end once readyTimeoutMs has passed
//               all ready ─► canary: advance to step 0 │ blue-green: check-golden ─► decideGolden
//   running:    no canary replica ready and one failed ─► end (decideCanaryDown)
//               analysis rollback ─► end (at once, whatever the interval)
//               promote-step and the interval passed ─► advance │ otherwise hold
//   paused:     analysis rollback ─► end │ otherwise hold

import type { RolloutRecord, TrafficAction } from '../../store/traffic-records.ts';
import { versionKey } from '../../store/traffic-records.ts';
import type { CanaryVerdict } from '../../traffic/canary-reason.ts';
import type { ReplicaStatus } from '../reconciler.ts';
import type { GoldenOutcome } from './golden-check.ts';
import { sameVersion } from './rollout-changes.ts';

export const rolloutActor = 'rollout-controller';
export const blueGreenActor = 'blue-green';

export type RolloutDecision =
  | { readonly kind: 'hold' }
  | {
      readonly kind: 'end';
      readonly action: Extract<TrafficAction, 'rollout-rollback' | 'blue-green-fail'>;
      readonly actor: string;
      readonly reason: string;
      readonly analysis?: unknown;
    }
  /** To step `index`, or completion when that is the 100 % step (see advanceTo). */
  | {
      readonly kind: 'step' | 'complete';
      readonly index: number;
      readonly actor: string;
      readonly reason: string;
      readonly analysis?: unknown;
    }
  /** Blue-green: all replicas ready; run the golden set against `url`, then decideGolden. */
  | { readonly kind: 'check-golden'; readonly url: string; readonly readyReplicas: number };

const hold: RolloutDecision = { kind: 'hold' };

export type ReplicaView = Pick<ReplicaStatus, 'model' | 'version' | 'state' | 'url' | 'reason'>;

/**
 * Step `index` of the rollout, or its completion: the 100 % step is never run as a step (the
 * baseline would get nothing to be compared with), so reaching it completes the rollout.
 */
export function advanceTo(
  rollout: RolloutRecord,
  index: number,
  actor: string,
  reason: string,
  analysis?: unknown,
): RolloutDecision {
  const last = rollout.steps.length - 1;
  const complete = index >= last || (rollout.steps[index] ?? 100) >= 100;
  return {
    kind: complete ? 'complete' : 'step',
    index: complete ? last : index,
    actor,
    reason,
    ...(analysis === undefined ? {} : { analysis }),
  };
}

/** A rollout starting: its canary's replicas (of every version: filtered here) decide. */
export function decideStarting(
  rollout: RolloutRecord,
  replicas: readonly ReplicaView[],
  wantedReplicas: number,
  nowMs: number,
  readyTimeoutMs: number,
): RolloutDecision {
  const own = replicas.filter((replica) => sameVersion(replica, rollout.canary));
  const ready = own.filter((replica) => replica.state === 'ready' && replica.url !== null);
  const wanted = Math.max(1, wantedReplicas);
  const blueGreen = rollout.strategy === 'blue-green';
  const actor = blueGreen ? blueGreenActor : rolloutActor;
  if (ready.length < wanted) {
    if (nowMs - Date.parse(rollout.createdAt) < readyTimeoutMs) return hold;
    const why = own.find((replica) => replica.reason !== null)?.reason;
    return {
      kind: 'end',
      action: blueGreen ? 'blue-green-fail' : 'rollout-rollback',
      actor,
      reason:
        `${versionKey(rollout.canary)}: ${ready.length}/${wanted} replicas ready after ` +
        `${Math.round(readyTimeoutMs / 1000)} s${why === undefined || why === null ? '' : ` (${why})`}`,
    };
  }
  if (blueGreen)
    return { kind: 'check-golden', url: ready[0]?.url ?? '', readyReplicas: ready.length };
  return advanceTo(
    rollout,
    0,
    actor,
    `${versionKey(rollout.canary)} ready (${ready.length} replicas)`,
  );
}

/** Blue-green after its golden run (null: the version has no golden set). */
export function decideGolden(
  rollout: RolloutRecord,
  outcome: GoldenOutcome | null,
  readyReplicas: number,
): RolloutDecision {
  if (outcome !== null && !outcome.ok)
    return {
      kind: 'end',
      action: 'blue-green-fail',
      actor: blueGreenActor,
      reason: `golden set of ${versionKey(rollout.canary)} not reproduced: ${outcome.reason}`,
      analysis: outcome,
    };
  const checked =
    outcome === null
      ? 'no golden set registered: health checks only'
      : `golden set reproduced (${outcome.cases} cases)`;
  return advanceTo(
    rollout,
    rollout.steps.length - 1,
    blueGreenActor,
    `${versionKey(rollout.canary)} ready (${readyReplicas} replicas), ${checked}`,
    outcome ?? undefined,
  );
}

/**
 * A running or paused rollout whose canary has no ready replica and a failed one: it crashed
 * while serving its share. The gateway gives a variant without replicas to the baseline, so the
 * canary would show no requests and the analysis wait for ever: a crash is a verdict of its
 * own. null: the canary runs (or merely restarts without a failure), the analysis decides.
 */
export function decideCanaryDown(
  rollout: RolloutRecord,
  replicas: readonly ReplicaView[],
): RolloutDecision | null {
  const own = replicas.filter((replica) => sameVersion(replica, rollout.canary));
  if (own.some((replica) => replica.state === 'ready')) return null;
  const failed = own.find((replica) => replica.state === 'failed' && replica.reason !== null);
  if (failed === undefined) return null;
  return {
    kind: 'end',
    action: 'rollout-rollback',
    actor: rolloutActor,
    reason:
      `rolled back at step ${rollout.stepIndex + 1}/${rollout.steps.length}: ` +
      `${versionKey(rollout.canary)} has no ready replica (${failed.reason ?? 'failed'})`,
  };
}

/** A running or paused rollout, given its current step's analysis. */
export function decideStep(
  rollout: RolloutRecord,
  verdict: CanaryVerdict,
  nowMs: number,
): RolloutDecision {
  const at = `step ${rollout.stepIndex + 1}/${rollout.steps.length}`;
  if (verdict.decision === 'rollback')
    return {
      kind: 'end',
      action: 'rollout-rollback',
      actor: rolloutActor,
      reason: `rolled back at ${at}: ${verdict.reasons.map((r) => r.message).join('; ')}`,
      analysis: verdict,
    };
  if (rollout.state !== 'running' || verdict.decision !== 'promote-step') return hold;
  if (rollout.stepStartedAt === null) return hold;
  if (nowMs - Date.parse(rollout.stepStartedAt) < rollout.intervalMs) return hold;
  const percent = rollout.steps[rollout.stepIndex] ?? 0;
  return advanceTo(
    rollout,
    rollout.stepIndex + 1,
    rolloutActor,
    `${at} (${percent} %) passed its analysis`,
    verdict,
  );
}
