// What `kiln rollback ENDPOINT` does, decided from the endpoint's state (pure; the service
// reads the state and writes the change). The first rule that applies wins:
//
//   1. a rollout in progress (canary or blue-green)  → it is rolled back: policy null, the
//      candidate unstaged (not kept warm), the rollout 'rolled-back' with the reason
//   2. a traffic policy in force (a manual split, shadows, a running experiment)
//                                                     → policy null: the stable version takes
//      100 %; a running experiment is stopped
//   3. a previous stable version                      → it becomes stable again; the current
//      one goes warm (a second rollback returns to it), previous = the current
//   4. nothing of the above                           → KILN_NOTHING_TO_ROLL_BACK
//
// Each step back is one TrafficChange (one transaction, one routing snapshot). Rules 1–2
// never move the stable version, so traffic returns to replicas that were serving all along;
// rule 3 returns to a warm version's replicas when it is still within its grace period.

import type { EndpointRecord } from '../../store/serving-records.ts';
import {
  versionKey,
  type EndpointTrafficRecord,
  type ExperimentRecord,
  type RolloutRecord,
  type TrafficChange,
  type VersionRef,
} from '../../store/traffic-records.ts';
import { keepWarm, withoutVersion } from './warm-versions.ts';

export type RollbackKind = 'rollout' | 'policy' | 'stable';

export interface RollbackSituation {
  readonly endpoint: EndpointRecord;
  readonly traffic: EndpointTrafficRecord | null;
  /** The endpoint's rollout in state starting, running or paused. */
  readonly rollout: RolloutRecord | null;
  /** The endpoint's running experiment. */
  readonly experiment: ExperimentRecord | null;
  /** Whether `traffic.previous` names a version that exists and is not deleted. */
  readonly previousServable: boolean;
  readonly nowMs: number;
  readonly warmGraceMs: number;
  readonly actor: string;
  readonly reason: string;
}

export type RollbackPlan =
  | {
      readonly ok: true;
      readonly kind: RollbackKind;
      /** One line for the caller and the history: what moved. */
      readonly summary: string;
      readonly change: TrafficChange;
    }
  | { readonly ok: false; readonly reason: string };

export function planRollback(situation: RollbackSituation): RollbackPlan {
  const { endpoint, traffic, rollout, experiment, nowMs, actor, reason } = situation;
  const stable: VersionRef = { model: endpoint.model, version: endpoint.version };
  const at = new Date(nowMs).toISOString();
  const base = traffic === null ? {} : { expectRevision: traffic.revision };
  const event = (summary: string, detail: Record<string, unknown>) => ({
    endpoint: endpoint.name,
    actor,
    action: 'rollback' as const,
    reason,
    detail: { summary, ...detail },
  });

  if (rollout !== null) {
    const summary =
      `rollout ${rollout.id} rolled back: ${versionKey(rollout.canary)} loses its traffic, ` +
      `${versionKey(stable)} takes 100%`;
    return {
      ok: true,
      kind: 'rollout',
      summary,
      change: {
        ...base,
        policy: null,
        staged: withoutVersion(traffic?.staged ?? [], rollout.canary),
        rollout: {
          id: rollout.id,
          patch: {
            state: 'rolled-back',
            // A paused rollout rolled back is finished, not paused (as the controller's ends).
            pausedAt: null,
            reason: `rolled back by ${actor}: ${reason}`,
            finishedAt: at,
          },
        },
        event: event(summary, {
          kind: 'rollout',
          rollout: rollout.id,
          canary: versionKey(rollout.canary),
          stable: versionKey(stable),
        }),
      },
    };
  }

  if (traffic?.policy != null) {
    const stopped = experiment === null ? '' : `, experiment ${experiment.id} stopped`;
    const summary = `traffic policy cleared: ${versionKey(stable)} takes 100%${stopped}`;
    return {
      ok: true,
      kind: 'policy',
      summary,
      change: {
        ...base,
        policy: null,
        ...(experiment === null ? {} : { experiment: { stop: experiment.id, at } }),
        event: event(summary, {
          kind: 'policy',
          before: traffic.policy,
          stable: versionKey(stable),
          ...(experiment === null ? {} : { experiment: experiment.id }),
        }),
      },
    };
  }

  const previous = traffic?.previous ?? null;
  if (previous === null) {
    return {
      ok: false,
      reason: `no rollout or traffic policy in force, and ${versionKey(stable)} has no previous version`,
    };
  }
  if (!situation.previousServable) {
    return {
      ok: false,
      reason: `the previous version ${versionKey(previous)} no longer exists`,
    };
  }
  const summary = `${versionKey(previous)} is stable again (was ${versionKey(stable)}, kept warm)`;
  return {
    ok: true,
    kind: 'stable',
    summary,
    change: {
      ...base,
      stable: { ...previous, ref: String(previous.version) },
      previous: stable,
      warm: keepWarm(traffic?.warm ?? [], stable, nowMs + situation.warmGraceMs, nowMs, previous),
      event: event(summary, {
        kind: 'stable',
        from: versionKey(stable),
        to: versionKey(previous),
      }),
    },
  };
}
