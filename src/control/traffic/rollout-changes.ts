// The traffic changes a rollout makes, as values (one store transaction each, with its
// history event): the controller decides when, these say what. Pure.
//
//   start      staged += canary                      (replicas start, no traffic)
//   step i     policy [baseline 100-p, canary p], salt = rollout id; staged -= canary
//   complete   stable = canary, previous = baseline, baseline warm, policy null, staged -= canary
//   end        policy null, staged -= canary          (rolled back or aborted: canary dropped)
//
// The canary is listed last so that it grows in place from step to step (traffic-split.ts):
// a user it already serves keeps it, and the salt stays the rollout's id throughout.

import type {
  EndpointTrafficRecord,
  NewRollout,
  RolloutPatch,
  RolloutRecord,
  TrafficAction,
  TrafficChange,
  TrafficPolicy,
  VersionRef,
  WarmVersion,
} from '../../store/traffic-records.ts';
import { versionKey } from '../../store/traffic-records.ts';

export function sameVersion(a: VersionRef, b: VersionRef): boolean {
  return a.model === b.model && a.version === b.version;
}

function ref(version: VersionRef): VersionRef {
  return { model: version.model, version: version.version };
}

/** The expected revision of the record read (absent: none existed yet). */
function expect(traffic: EndpointTrafficRecord | null): Pick<TrafficChange, 'expectRevision'> {
  return traffic === null ? {} : { expectRevision: traffic.revision };
}

function withoutVersion<T extends VersionRef>(list: readonly T[], version: VersionRef): T[] {
  return list.filter((entry) => !sameVersion(entry, version));
}

/** The policy in force at a step where the canary takes `percent`. */
export function rolloutPolicy(rollout: RolloutRecord, percent: number): TrafficPolicy {
  return {
    versions: [
      { ...ref(rollout.baseline), weight: 100 - percent },
      { ...ref(rollout.canary), weight: percent },
    ],
    shadows: [],
    salt: rollout.id,
    keyPath: null,
    sliceKey: rollout.sliceKey,
    slicePath: rollout.slicePath,
  };
}

export function startChange(
  rollout: NewRollout,
  traffic: EndpointTrafficRecord | null,
  reason: string,
): TrafficChange {
  const staged = withoutVersion(traffic?.staged ?? [], rollout.canary);
  return {
    ...expect(traffic),
    staged: [...staged, ref(rollout.canary)],
    rollout: { create: rollout },
    event: {
      endpoint: rollout.endpoint,
      actor: rollout.createdBy,
      action: rollout.strategy === 'blue-green' ? 'blue-green-stage' : 'rollout-start',
      reason,
      detail: {
        rollout: rollout.id,
        strategy: rollout.strategy,
        baseline: versionKey(rollout.baseline),
        canary: versionKey(rollout.canary),
        steps: rollout.steps,
      },
    },
  };
}

export interface Transition {
  readonly rollout: RolloutRecord;
  readonly traffic: EndpointTrafficRecord | null;
  readonly nowMs: number;
  readonly actor: string;
  readonly reason: string;
  /** The verdict that decided it (stored as the rollout's lastAnalysis). */
  readonly analysis?: unknown;
}

function patchOf(transition: Transition, patch: RolloutPatch): RolloutPatch {
  return transition.analysis === undefined
    ? patch
    : { ...patch, lastAnalysis: transition.analysis };
}

/** Moves traffic to step `index` (< the last step, which completes instead). */
export function stepChange(transition: Transition, index: number): TrafficChange {
  const { rollout, traffic, nowMs } = transition;
  const percent = rollout.steps[index] ?? 100;
  return {
    ...expect(traffic),
    policy: rolloutPolicy(rollout, percent),
    staged: withoutVersion(traffic?.staged ?? [], rollout.canary),
    rollout: {
      id: rollout.id,
      patch: patchOf(transition, {
        stepIndex: index,
        state: rollout.state === 'paused' ? 'paused' : 'running',
        stepStartedAt: new Date(nowMs).toISOString(),
        ...(rollout.state === 'paused' ? { pausedAt: new Date(nowMs).toISOString() } : {}),
        reason: null,
      }),
    },
    event: {
      endpoint: rollout.endpoint,
      actor: transition.actor,
      action: 'rollout-step',
      reason: transition.reason,
      detail: {
        rollout: rollout.id,
        step: index + 1,
        of: rollout.steps.length,
        weights: {
          [versionKey(rollout.baseline)]: 100 - percent,
          [versionKey(rollout.canary)]: percent,
        },
      },
    },
  };
}

/**
 * The canary becomes the stable version; the baseline stays warm until `warmUntilMs` so a
 * rollback is instant. For a blue-green switch too (action 'blue-green-switch').
 */
export function completeChange(
  transition: Transition,
  warmUntilMs: number,
  action: Extract<TrafficAction, 'rollout-complete' | 'blue-green-switch'>,
): TrafficChange {
  const { rollout, traffic, nowMs } = transition;
  const warm: WarmVersion[] = withoutVersion(
    withoutVersion(traffic?.warm ?? [], rollout.baseline),
    rollout.canary,
  );
  warm.push({ ...ref(rollout.baseline), until: new Date(warmUntilMs).toISOString() });
  return {
    ...expect(traffic),
    policy: null,
    stable: { ...ref(rollout.canary), ref: String(rollout.canary.version) },
    previous: ref(rollout.baseline),
    warm,
    staged: withoutVersion(traffic?.staged ?? [], rollout.canary),
    rollout: {
      id: rollout.id,
      patch: patchOf(transition, {
        state: 'succeeded',
        stepIndex: rollout.steps.length - 1,
        stepStartedAt: new Date(nowMs).toISOString(),
        pausedAt: null,
        reason: transition.reason,
        finishedAt: new Date(nowMs).toISOString(),
      }),
    },
    event: {
      endpoint: rollout.endpoint,
      actor: transition.actor,
      action,
      reason: transition.reason,
      detail: {
        rollout: rollout.id,
        stable: versionKey(rollout.canary),
        previous: versionKey(rollout.baseline),
        warmUntil: new Date(warmUntilMs).toISOString(),
      },
    },
  };
}

/** Traffic back to the baseline alone; the canary is dropped (not kept warm). */
export function endChange(
  transition: Transition,
  state: 'rolled-back' | 'aborted',
  action: Extract<TrafficAction, 'rollout-rollback' | 'rollout-abort' | 'blue-green-fail'>,
): TrafficChange {
  const { rollout, traffic, nowMs } = transition;
  return {
    ...expect(traffic),
    // A policy that is not this rollout's (none should be: starting one replaces it) stays.
    ...(traffic?.policy?.salt === rollout.id || traffic?.policy === undefined
      ? { policy: null }
      : {}),
    staged: withoutVersion(traffic?.staged ?? [], rollout.canary),
    rollout: {
      id: rollout.id,
      patch: patchOf(transition, {
        state,
        pausedAt: null,
        reason: transition.reason,
        finishedAt: new Date(nowMs).toISOString(),
      }),
    },
    event: {
      endpoint: rollout.endpoint,
      actor: transition.actor,
      action,
      reason: transition.reason,
      detail: {
        rollout: rollout.id,
        canary: versionKey(rollout.canary),
        stable: versionKey(rollout.baseline),
      },
    },
  };
}

/** Pause or resume: no traffic moves; the record and the event say so. */
export function holdChange(
  transition: Transition,
  action: Extract<TrafficAction, 'rollout-pause' | 'rollout-resume'>,
  patch: RolloutPatch,
): TrafficChange {
  const { rollout, traffic } = transition;
  return {
    ...expect(traffic),
    rollout: { id: rollout.id, patch },
    event: {
      endpoint: rollout.endpoint,
      actor: transition.actor,
      action,
      reason: transition.reason,
      detail: { rollout: rollout.id, step: rollout.stepIndex + 1, of: rollout.steps.length },
    },
  };
}
