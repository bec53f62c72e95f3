// Persisted traffic management state (issue 13): per endpoint, the traffic policy in force
// (versions with weights, shadows, sticky and slice keys), the version a rollback returns to,
// versions kept warm or staged without traffic; canary rollouts, A/B experiments and their
// caller-reported outcomes, golden sets registered with versions, the gateways' merged
// observations, and the history of every traffic change (who, when, why).
//
// Everything here survives a control-plane restart: controllers keep no state of their own
// that is not also written here.

import type { CanaryThresholds } from '../traffic/canary-thresholds.ts';
import type { MomentsSnapshot } from '../traffic/running-moments.ts';
import type { ShadowVersion, SplitVersion } from '../traffic/traffic-split.ts';

/** One model version, as traffic is split over them (`model:version` in text). */
export interface VersionRef {
  readonly model: string;
  readonly version: number;
}

/** `iris:3`: how versions are named in policies, reports, CLI flags and messages. */
export function versionKey(ref: VersionRef): string {
  return `${ref.model}:${ref.version}`;
}

/**
 * The split in force. Weights are whole percent over `versions` (sum 100, the endpoint's
 * stable version normally among them); shadows get copies and never answer.
 */
export interface TrafficPolicy {
  readonly versions: readonly SplitVersion[];
  readonly shadows: readonly ShadowVersion[];
  /**
   * What the sticky hash is salted with (besides the endpoint): the same salt keeps every
   * user on its variant (all steps of one rollout, an experiment's whole run); a new salt
   * reshuffles them.
   */
  readonly salt: string;
  /** Where the caller key is in the JSON body (caller-key.ts syntax); the `kiln-user` header wins. */
  readonly keyPath: string | null;
  /** The slice key's name for reports (`country`); null: no slices are counted. */
  readonly sliceKey: string | null;
  /** Where the slice value is in the JSON body (caller-key.ts syntax); the `kiln-slice` header wins. */
  readonly slicePath: string | null;
}

/** A version kept running without traffic until `until` (ISO 8601): what makes rollback instant. */
export interface WarmVersion extends VersionRef {
  readonly until: string;
}

export interface EndpointTrafficRecord {
  readonly endpoint: string;
  /** null: the endpoint's stable version (EndpointRecord.model/version) takes all traffic. */
  readonly policy: TrafficPolicy | null;
  /** The stable version before the last change of it: what `kiln rollback` returns to. */
  readonly previous: VersionRef | null;
  /** Kept running, no traffic, until their time (the reconciler stops them after). */
  readonly warm: readonly WarmVersion[];
  /**
   * Started and kept running with no traffic and no expiry: a blue-green candidate being
   * checked, a canary starting before its first step.
   */
  readonly staged: readonly VersionRef[];
  /** Increases with every write: optimistic concurrency for read-modify-write callers. */
  readonly revision: number;
  readonly updatedAt: string;
}

export type TrafficAction =
  | 'deploy'
  | 'delete'
  | 'policy'
  | 'rollback'
  | 'warm-expired'
  | 'rollout-start'
  | 'rollout-step'
  | 'rollout-pause'
  | 'rollout-resume'
  | 'rollout-promote'
  | 'rollout-abort'
  | 'rollout-rollback'
  | 'rollout-complete'
  | 'blue-green-stage'
  | 'blue-green-switch'
  | 'blue-green-fail'
  | 'experiment-start'
  | 'experiment-stop'
  | 'shadow';

/** One traffic change: who, when, what and why (`kiln endpoints history`). */
export interface TrafficEvent {
  readonly id: number;
  readonly endpoint: string;
  /** ISO 8601. */
  readonly at: string;
  /** A token's name (`token "ci" (deployer, team risk)`) or a controller (`rollout-controller`). */
  readonly actor: string;
  readonly action: TrafficAction;
  /** Why, in words: the user's `--reason`, or the analysis's verdict. */
  readonly reason: string;
  /** What changed (versions, weights, the rollout id …); JSON. */
  readonly detail: unknown;
}

export type NewTrafficEvent = Omit<TrafficEvent, 'id' | 'at'>;

// --- rollouts -----------------------------------------------------------------------------

export type RolloutState =
  | 'starting' // the canary's replicas start; no traffic yet
  | 'running'
  | 'paused'
  | 'succeeded'
  | 'rolled-back'
  | 'aborted';

export const activeRolloutStates: readonly RolloutState[] = ['starting', 'running', 'paused'];

/**
 * canary: steps of traffic, each judged against the baseline. blue-green: the candidate
 * starts alongside with no traffic, passes health checks and its golden set, then takes 100%
 * at once (steps [100]).
 */
export type RolloutStrategy = 'canary' | 'blue-green';

export interface RolloutRecord {
  readonly id: string;
  readonly endpoint: string;
  readonly strategy: RolloutStrategy;
  readonly baseline: VersionRef;
  readonly canary: VersionRef;
  /** The canary's percent at each step, ascending, ending at 100. */
  readonly steps: readonly number[];
  /** Index into `steps` of the step in force; -1 while starting. */
  readonly stepIndex: number;
  readonly intervalMs: number;
  readonly thresholds: CanaryThresholds;
  readonly sliceKey: string | null;
  readonly slicePath: string | null;
  readonly state: RolloutState;
  /** When the current step took effect (ISO 8601); null while starting. */
  readonly stepStartedAt: string | null;
  /** Paused: when; the step's clock stops meanwhile. */
  readonly pausedAt: string | null;
  /** Why it ended (rollback reasons, abort reason) or why it waits; null otherwise. */
  readonly reason: string | null;
  /** The last CanaryVerdict (canary-reason.ts) computed for the current step; JSON. */
  readonly lastAnalysis: unknown;
  readonly createdBy: string;
  readonly createdAt: string;
  readonly updatedAt: string;
  readonly finishedAt: string | null;
}

export type NewRollout = Omit<
  RolloutRecord,
  'createdAt' | 'updatedAt' | 'finishedAt' | 'lastAnalysis' | 'pausedAt' | 'reason'
>;

export type RolloutPatch = Partial<
  Pick<
    RolloutRecord,
    'stepIndex' | 'state' | 'stepStartedAt' | 'pausedAt' | 'reason' | 'lastAnalysis' | 'finishedAt'
  >
>;

// --- experiments --------------------------------------------------------------------------

export type ExperimentState = 'running' | 'stopped';

export interface ExperimentRecord {
  readonly id: string;
  readonly endpoint: string;
  readonly name: string;
  /** Fixed split; the first variant is the control the others are compared with. */
  readonly variants: readonly SplitVersion[];
  /** The sticky salt (the experiment's id): users keep their variant for its whole run. */
  readonly salt: string;
  readonly keyPath: string | null;
  readonly state: ExperimentState;
  readonly createdBy: string;
  readonly createdAt: string;
  readonly stoppedAt: string | null;
}

export type NewExperiment = Omit<ExperimentRecord, 'createdAt' | 'stoppedAt' | 'state'>;

/**
 * Caller-reported outcomes of one variant and metric, merged: a `rate` metric's values are 0
 * or 1 (converted or not: mean = rate), a `mean` metric's any finite number.
 */
export type OutcomeKind = 'rate' | 'mean';

export interface OutcomeAggregate {
  readonly experimentId: string;
  /** `model:version` of the variant. */
  readonly variant: string;
  readonly metric: string;
  readonly kind: OutcomeKind;
  readonly moments: MomentsSnapshot;
  readonly updatedAt: string;
}

export interface OutcomeEntry {
  readonly variant: string;
  readonly metric: string;
  readonly kind: OutcomeKind;
  readonly value: number;
}

// --- observations (gateway reports, merged) -----------------------------------------------

/** Observation rows cover this many milliseconds each, aligned on the epoch. */
export const observationBucketMs = 10_000;

export type ObservationKind = 'primary' | 'shadow';

/** One row: an endpoint's version in one slice ('' = all traffic) over one bucket. */
export interface ObservationRow {
  readonly endpoint: string;
  /** ISO 8601, a multiple of observationBucketMs. */
  readonly bucketStart: string;
  readonly kind: ObservationKind;
  readonly model: string;
  readonly version: number;
  readonly slice: string;
  /** The merged counts (protocol/traffic/traffic-report.ts: WindowCounts or ShadowCounts). */
  readonly data: unknown;
}

export type ObservationDelta = ObservationRow;

export interface ObservationQuery {
  readonly endpoint: string;
  /** ISO 8601: rows whose bucketStart >= since. */
  readonly since: string;
  /** ISO 8601: rows whose bucketStart < until (absent: all). */
  readonly until?: string;
  readonly kind?: ObservationKind;
}

// --- golden sets --------------------------------------------------------------------------

/** Input/output pairs registered with a version, reproduced before it takes traffic. */
export interface GoldenSet {
  readonly model: string;
  readonly version: number;
  readonly tolerance: GoldenTolerance;
  readonly cases: readonly GoldenCase[];
  readonly createdAt: string;
}

/** |got - want| <= absolute + relative * |want|, element by element. */
export interface GoldenTolerance {
  readonly absolute: number;
  readonly relative: number;
}

export interface GoldenCase {
  /** A v2 infer request body, as a client would send it. */
  readonly request: unknown;
  /** The outputs expected (by name), as a v2 response lists them. */
  readonly outputs: readonly { readonly name: string; readonly data: readonly unknown[] }[];
}

// --- one write, many records --------------------------------------------------------------

/**
 * A change of an endpoint's traffic, written in one transaction with the history event and,
 * where given, the endpoint's stable version and a rollout's or experiment's record. Fields
 * left undefined are unchanged. A record is created on the first change of an endpoint.
 */
export interface TrafficChange {
  /** The revision the caller read; another one now → KILN_TRAFFIC_CONFLICT (409). */
  readonly expectRevision?: number;
  readonly policy?: TrafficPolicy | null;
  readonly previous?: VersionRef | null;
  readonly warm?: readonly WarmVersion[];
  readonly staged?: readonly VersionRef[];
  /** Moves the endpoint's stable version (rollback, a rollout or blue-green that completes). */
  readonly stable?: VersionRef & { readonly ref: string };
  readonly rollout?:
    { readonly create: NewRollout } | { readonly id: string; readonly patch: RolloutPatch };
  readonly experiment?:
    { readonly create: NewExperiment } | { readonly stop: string; readonly at: string };
  readonly event: NewTrafficEvent;
}
