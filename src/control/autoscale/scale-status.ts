// What `GET /api/v1/endpoints/{e}/scale` answers (and `kiln autoscale show` prints): the
// policy, the count, the autoscaler's last decision and the sample it saw, the start-up time,
// recent events, and the latency the gateways measured — the demand rows' sketches merged,
// which is what `kiln simulate --endpoint` draws service times from.

import type { AutoscalePolicy } from '../../autoscale/autoscale-policy.ts';
import type { ScaleSample } from '../../autoscale/scale-signals.ts';
import type { DemandRow, ScaleEvent } from '../../store/scaling-records.ts';
import { HistogramSketch, type HistogramSketchSnapshot } from '../../traffic/histogram-sketch.ts';

export interface LatencySummary {
  /** ISO: the demand rows merged start here. */
  readonly since: string;
  readonly count: number;
  readonly p50: number | null;
  readonly p90: number | null;
  readonly p95: number | null;
  readonly p99: number | null;
  /** The merged sketch (ms), for `kiln simulate --endpoint` to draw service times from. */
  readonly sketch: HistogramSketchSnapshot;
}

/** GET /api/v1/endpoints/{e}/scale. */
export interface ScaleStatus {
  readonly endpoint: string;
  /** The policy in force; null: the endpoint runs its deployed count. */
  readonly autoscale: AutoscalePolicy | null;
  /** Replicas wanted now (the stored count, or the deployed one without a policy). */
  readonly replicas: number;
  readonly readyReplicas: number;
  readonly startingReplicas: number;
  readonly mode: 'stable' | 'panic' | 'fixed';
  readonly reason: string | null;
  readonly lastDemandAt: string | null;
  readonly lastDecision: {
    readonly at: string;
    readonly replicas: number;
    readonly reactive: number;
    readonly predictive: number;
    readonly mode: 'stable' | 'panic';
    readonly reason: string;
  } | null;
  /** The last sample the autoscaler saw (gateway demand and worker load). */
  readonly signals: ScaleSample | null;
  readonly startup: {
    /** p90 of the recent replica starts measured (ms); null: none yet. */
    readonly measuredP90Ms: number | null;
    readonly samples: number;
    /** What the predictive part uses (the policy's, else measured, else 30 s). */
    readonly usedMs: number;
  };
  readonly events: readonly ScaleEvent[];
  readonly latencyMs: LatencySummary;
}

/** The q-quantile of a list of numbers (nearest rank); null when empty. */
export function quantileOf(values: readonly number[], q: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? null;
}

/** The latency of 200 answers over the rows, merged (their sketches add exactly). */
export function latencySummary(rows: readonly DemandRow[], since: string): LatencySummary {
  const merged = new HistogramSketch();
  for (const row of rows) {
    const parsed = HistogramSketch.fromSnapshot(row.latencyMs);
    if (parsed.ok) merged.merge(parsed.sketch);
  }
  return {
    since,
    count: merged.count,
    p50: merged.quantile(0.5),
    p90: merged.quantile(0.9),
    p95: merged.quantile(0.95),
    p99: merged.quantile(0.99),
    sketch: merged.snapshot(),
  };
}
