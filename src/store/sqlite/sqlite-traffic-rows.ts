// Row shapes of the traffic tables (migration 5) and their mapping to traffic-records.ts.
// Policies, thresholds, verdicts, sketches and version lists are JSON columns: they are read
// and written whole, never queried by their parts.

import type { CanaryThresholds } from '../../traffic/canary-thresholds.ts';
import type { MomentsSnapshot } from '../../traffic/running-moments.ts';
import type { SplitVersion } from '../../traffic/traffic-split.ts';
import type {
  EndpointTrafficRecord,
  ExperimentRecord,
  ExperimentState,
  GoldenCase,
  GoldenSet,
  GoldenTolerance,
  ObservationKind,
  ObservationRow,
  OutcomeAggregate,
  OutcomeKind,
  RolloutRecord,
  RolloutState,
  RolloutStrategy,
  TrafficAction,
  TrafficEvent,
  TrafficPolicy,
  VersionRef,
  WarmVersion,
} from '../traffic-records.ts';

export interface TrafficRow {
  endpoint: string;
  policy_json: string | null;
  previous_json: string | null;
  warm_json: string;
  staged_json: string;
  revision: number;
  updated_at: string;
}

export interface TrafficEventRow {
  id: number;
  endpoint: string;
  at: string;
  actor: string;
  action: string;
  reason: string;
  detail_json: string;
}

export interface RolloutRow {
  id: string;
  endpoint: string;
  strategy: string;
  baseline_model: string;
  baseline_version: number;
  canary_model: string;
  canary_version: number;
  steps_json: string;
  step_index: number;
  interval_ms: number;
  thresholds_json: string;
  slice_key: string | null;
  slice_path: string | null;
  state: string;
  step_started_at: string | null;
  paused_at: string | null;
  reason: string | null;
  last_analysis_json: string;
  created_by: string;
  created_at: string;
  updated_at: string;
  finished_at: string | null;
}

export interface ExperimentRow {
  id: string;
  endpoint: string;
  name: string;
  variants_json: string;
  salt: string;
  key_path: string | null;
  state: string;
  created_by: string;
  created_at: string;
  stopped_at: string | null;
}

export interface OutcomeRow {
  experiment_id: string;
  variant: string;
  metric: string;
  kind: string;
  moments_json: string;
  updated_at: string;
}

export interface ObservationDbRow {
  endpoint: string;
  bucket_ms: number;
  kind: string;
  model: string;
  version: number;
  slice: string;
  data_json: string;
}

export interface GoldenRow {
  model: string;
  version: number;
  tolerance_json: string;
  cases_json: string;
  created_at: string;
}

/** JSON text of a value; `undefined` (absent) is kept as null. */
export function jsonText(value: unknown): string {
  return JSON.stringify(value ?? null);
}

export function toTrafficRecord(row: TrafficRow): EndpointTrafficRecord {
  return {
    endpoint: row.endpoint,
    policy: row.policy_json === null ? null : (JSON.parse(row.policy_json) as TrafficPolicy),
    previous: row.previous_json === null ? null : (JSON.parse(row.previous_json) as VersionRef),
    warm: JSON.parse(row.warm_json) as WarmVersion[],
    staged: JSON.parse(row.staged_json) as VersionRef[],
    revision: row.revision,
    updatedAt: row.updated_at,
  };
}

export function toTrafficEvent(row: TrafficEventRow): TrafficEvent {
  return {
    id: row.id,
    endpoint: row.endpoint,
    at: row.at,
    actor: row.actor,
    action: row.action as TrafficAction,
    reason: row.reason,
    detail: JSON.parse(row.detail_json) as unknown,
  };
}

export function toRollout(row: RolloutRow): RolloutRecord {
  return {
    id: row.id,
    endpoint: row.endpoint,
    strategy: row.strategy as RolloutStrategy,
    baseline: { model: row.baseline_model, version: row.baseline_version },
    canary: { model: row.canary_model, version: row.canary_version },
    steps: JSON.parse(row.steps_json) as number[],
    stepIndex: row.step_index,
    intervalMs: row.interval_ms,
    thresholds: JSON.parse(row.thresholds_json) as CanaryThresholds,
    sliceKey: row.slice_key,
    slicePath: row.slice_path,
    state: row.state as RolloutState,
    stepStartedAt: row.step_started_at,
    pausedAt: row.paused_at,
    reason: row.reason,
    lastAnalysis: JSON.parse(row.last_analysis_json) as unknown,
    createdBy: row.created_by,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    finishedAt: row.finished_at,
  };
}

export function toExperiment(row: ExperimentRow): ExperimentRecord {
  return {
    id: row.id,
    endpoint: row.endpoint,
    name: row.name,
    variants: JSON.parse(row.variants_json) as SplitVersion[],
    salt: row.salt,
    keyPath: row.key_path,
    state: row.state as ExperimentState,
    createdBy: row.created_by,
    createdAt: row.created_at,
    stoppedAt: row.stopped_at,
  };
}

export function toOutcome(row: OutcomeRow): OutcomeAggregate {
  return {
    experimentId: row.experiment_id,
    variant: row.variant,
    metric: row.metric,
    kind: row.kind as OutcomeKind,
    moments: JSON.parse(row.moments_json) as MomentsSnapshot,
    updatedAt: row.updated_at,
  };
}

export function toObservation(row: ObservationDbRow): ObservationRow {
  return {
    endpoint: row.endpoint,
    bucketStart: new Date(row.bucket_ms).toISOString(),
    kind: row.kind as ObservationKind,
    model: row.model,
    version: row.version,
    slice: row.slice,
    data: JSON.parse(row.data_json) as unknown,
  };
}

export function toGoldenSet(row: GoldenRow): GoldenSet {
  return {
    model: row.model,
    version: row.version,
    tolerance: JSON.parse(row.tolerance_json) as GoldenTolerance,
    cases: JSON.parse(row.cases_json) as GoldenCase[],
    createdAt: row.created_at,
  };
}
