// How `kiln rollout …` prints a rollout: what moves where, the step, and why it waits,
// promotes or rolled back (the analysis's reasons, one line each, slices named). Pure.

import { renderKeyValues, shortTime } from '../output.ts';

interface VersionRef {
  readonly model: string;
  readonly version: number;
}

/** The API's rollout record (src/store/traffic-records.ts RolloutRecord). */
export interface Rollout {
  readonly id: string;
  readonly endpoint: string;
  readonly strategy: 'canary' | 'blue-green';
  readonly baseline: VersionRef;
  readonly canary: VersionRef;
  readonly steps: readonly number[];
  readonly stepIndex: number;
  readonly intervalMs: number;
  readonly sliceKey: string | null;
  readonly state: 'starting' | 'running' | 'paused' | 'succeeded' | 'rolled-back' | 'aborted';
  readonly stepStartedAt: string | null;
  readonly reason: string | null;
  readonly createdBy: string;
  readonly createdAt: string;
  readonly finishedAt: string | null;
}

export interface AnalysisReason {
  readonly check: string;
  readonly scope: string;
  readonly outcome: string;
  readonly message: string;
}

/** GET /api/v1/endpoints/{e}/rollout, /api/v1/rollouts/{id}. */
export interface RolloutView {
  readonly rollout: Rollout;
  readonly percent: number;
  readonly analysis: {
    readonly decision: 'promote-step' | 'wait' | 'rollback';
    readonly reasons: readonly AnalysisReason[];
  } | null;
  readonly stepRemainingMs: number | null;
  /** Where the analysis's window starts (ISO 8601); absent from platforms before it. */
  readonly analysisSince?: string | null;
}

function key(ref: VersionRef): string {
  return `${ref.model}:${ref.version}`;
}

/** 95 s → `1m 35s`. */
export function durationText(ms: number): string {
  const seconds = Math.ceil(ms / 1000);
  if (seconds < 60) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  const rest = seconds % 60;
  return rest === 0 ? `${minutes}m` : `${minutes}m ${rest}s`;
}

export function rolloutText(view: RolloutView): string {
  const { rollout } = view;
  const stepText =
    rollout.stepIndex < 0
      ? 'not yet (replicas starting)'
      : `${rollout.stepIndex + 1}/${rollout.steps.length} (${view.percent} % to ${key(rollout.canary)})`;
  const entries: [string, string | null][] = [
    ['state', rollout.state],
    ['step', rollout.strategy === 'canary' ? stepText : null],
    ['steps', rollout.strategy === 'canary' ? rollout.steps.join(', ') : null],
    [
      'next step',
      view.stepRemainingMs === null
        ? null
        : view.stepRemainingMs > 0
          ? `in ${durationText(view.stepRemainingMs)}, once the analysis passes`
          : 'once the analysis passes',
    ],
    ['slices', rollout.sliceKey],
    ['started', `${shortTime(rollout.createdAt)} by ${rollout.createdBy}`],
    ['finished', rollout.finishedAt === null ? null : shortTime(rollout.finishedAt)],
    ['reason', rollout.reason],
  ];
  let text =
    `rollout ${rollout.id} on ${rollout.endpoint} (${rollout.strategy}): ` +
    `${key(rollout.baseline)} → ${key(rollout.canary)}\n`;
  text += renderKeyValues(entries.filter(([, value]) => value !== null));
  if (view.analysis !== null) {
    // Requests of the step's first seconds count from the next 10 s bucket: say so, or a
    // status reading "0 requests" right after a burst looks like lost counts.
    const since =
      view.analysisSince === undefined || view.analysisSince === null
        ? ''
        : ` (requests since ${shortTime(view.analysisSince)})`;
    text += `analysis: ${view.analysis.decision}${since}\n`;
    for (const reason of view.analysis.reasons) text += `  ${reason.outcome}: ${reason.message}\n`;
  }
  return text;
}
