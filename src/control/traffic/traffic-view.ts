// What the API shows of an endpoint's traffic (`kiln traffic show`) and of its shadows
// (`kiln shadow report`): pure builders over the stored records and merged observations.

import type { ShadowCounts } from '../../protocol/traffic/traffic-report.ts';
import { HistogramSketch } from '../../traffic/histogram-sketch.ts';
import type { SplitVersion } from '../../traffic/traffic-split.ts';
import type { EndpointRecord } from '../../store/serving-records.ts';
import {
  versionKey,
  type EndpointTrafficRecord,
  type ExperimentRecord,
  type RolloutRecord,
  type TrafficPolicy,
  type VersionRef,
  type WarmVersion,
} from '../../store/traffic-records.ts';
import { liveWarm } from './warm-versions.ts';

export interface TrafficView {
  readonly endpoint: string;
  /** What deploy set (and rollback, a completed rollout or blue-green moved). */
  readonly stable: VersionRef & { readonly ref: string };
  /** The split in force: the policy's versions, or the stable version at 100 %. */
  readonly split: readonly SplitVersion[];
  readonly policy: TrafficPolicy | null;
  /** What `kiln rollback` returns to when no rollout or policy is in force. */
  readonly previous: VersionRef | null;
  /** Running without traffic until their time (expired ones left out). */
  readonly warm: readonly WarmVersion[];
  readonly staged: readonly VersionRef[];
  readonly rollout: {
    readonly id: string;
    readonly strategy: RolloutRecord['strategy'];
    readonly state: RolloutRecord['state'];
    readonly canary: VersionRef;
    readonly stepIndex: number;
    readonly steps: readonly number[];
  } | null;
  readonly experiment: { readonly id: string; readonly name: string } | null;
  /** 0 before the endpoint's first traffic change. */
  readonly revision: number;
  readonly updatedAt: string | null;
  /** How long a version leaving the stable position stays warm. */
  readonly warmGraceMs: number;
}

export function trafficView(input: {
  readonly endpoint: EndpointRecord;
  readonly traffic: EndpointTrafficRecord | null;
  readonly rollout: RolloutRecord | null;
  readonly experiment: ExperimentRecord | null;
  readonly nowMs: number;
  readonly warmGraceMs: number;
}): TrafficView {
  const { endpoint, traffic, rollout, experiment } = input;
  const policy = traffic?.policy ?? null;
  return {
    endpoint: endpoint.name,
    stable: { model: endpoint.model, version: endpoint.version, ref: endpoint.ref },
    split: policy?.versions ?? [{ model: endpoint.model, version: endpoint.version, weight: 100 }],
    policy,
    previous: traffic?.previous ?? null,
    warm: liveWarm(traffic?.warm ?? [], input.nowMs),
    staged: traffic?.staged ?? [],
    rollout:
      rollout === null
        ? null
        : {
            id: rollout.id,
            strategy: rollout.strategy,
            state: rollout.state,
            canary: rollout.canary,
            stepIndex: rollout.stepIndex,
            steps: rollout.steps,
          },
    experiment: experiment === null ? null : { id: experiment.id, name: experiment.name },
    revision: traffic?.revision ?? 0,
    updatedAt: traffic?.updatedAt ?? null,
    warmGraceMs: input.warmGraceMs,
  };
}

/** Quantiles of a latency sketch, in milliseconds; null with no observation. */
export interface LatencySummary {
  readonly count: number;
  readonly p50: number;
  readonly p99: number;
}

export interface ShadowReportEntry {
  readonly model: string;
  readonly version: number;
  /** Its sample rate in the policy in force; null: no longer shadowed (counts from before). */
  readonly sampleRate: number | null;
  readonly offered: number;
  readonly sent: number;
  readonly dropped: number;
  readonly errors: number;
  readonly compared: number;
  readonly agreed: number;
  /** agreed / compared; null when nothing was compared. */
  readonly agreementRate: number | null;
  /** |shadow − primary| over the numeric output elements compared. */
  readonly absDiff: {
    readonly count: number;
    readonly mean: number | null;
    readonly max: number | null;
  };
  readonly latencyMs: LatencySummary | null;
  readonly primaryLatencyMs: LatencySummary | null;
}

export interface ShadowReport {
  readonly endpoint: string;
  /** The window read: from the bucket holding `since` to now. */
  readonly since: string;
  readonly until: string;
  readonly shadows: readonly ShadowReportEntry[];
}

export function shadowReport(input: {
  readonly endpoint: string;
  readonly policy: TrafficPolicy | null;
  readonly counts: ReadonlyMap<string, ShadowCounts>;
  readonly since: string;
  readonly until: string;
}): ShadowReport {
  const current = new Map(
    (input.policy?.shadows ?? []).map((shadow) => [versionKey(shadow), shadow.sampleRate]),
  );
  const keys = [...new Set([...current.keys(), ...input.counts.keys()])].sort();
  const shadows = keys.map((key): ShadowReportEntry => {
    const counts = input.counts.get(key);
    const split = key.lastIndexOf(':');
    const model = key.slice(0, split);
    const version = Number(key.slice(split + 1));
    return {
      model,
      version,
      sampleRate: current.get(key) ?? null,
      offered: counts?.offered ?? 0,
      sent: counts?.sent ?? 0,
      dropped: counts?.dropped ?? 0,
      errors: counts?.errors ?? 0,
      compared: counts?.compared ?? 0,
      agreed: counts?.agreed ?? 0,
      agreementRate:
        counts === undefined || counts.compared === 0 ? null : counts.agreed / counts.compared,
      absDiff: {
        count: counts?.absDiff.count ?? 0,
        mean: counts === undefined || counts.absDiff.count === 0 ? null : counts.absDiff.mean,
        max: counts?.absDiff.max ?? null,
      },
      latencyMs: counts === undefined ? null : latencySummary(counts.latencyMs),
      primaryLatencyMs: counts === undefined ? null : latencySummary(counts.primaryLatencyMs),
    };
  });
  return { endpoint: input.endpoint, since: input.since, until: input.until, shadows };
}

function latencySummary(snapshot: ShadowCounts['latencyMs']): LatencySummary | null {
  const read = HistogramSketch.fromSnapshot(snapshot);
  if (!read.ok || read.sketch.count === 0) return null;
  return {
    count: read.sketch.count,
    p50: read.sketch.quantile(0.5) ?? 0,
    p99: read.sketch.quantile(0.99) ?? 0,
  };
}
