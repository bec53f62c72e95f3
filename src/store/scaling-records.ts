// Persisted autoscaling state (issue 14): per endpoint, the replica count the autoscaler
// applies now (so a restarted control plane carries on from it, not from the deploy's
// count), the history of scale events, the demand history the predictive scaler learns from
// (per endpoint and minute, summed over gateways), and the shared worker pools.

import type { HistogramSketchSnapshot } from '../traffic/histogram-sketch.ts';

/** The autoscaler's current count for an endpoint (endpoints without a policy have none). */
export interface EndpointScaleRecord {
  readonly endpoint: string;
  /** Replicas wanted now, what the reconciler runs (within the policy's min/max). */
  readonly replicas: number;
  /** Why (the last decision's reason). */
  readonly reason: string;
  /** When a request last arrived or was in flight at a gateway (ISO); null: never seen. */
  readonly lastDemandAt: string | null;
  readonly updatedAt: string;
}

export type ScaleEventKind =
  | 'scale-up'
  | 'scale-down'
  /** To zero after the idle period. */
  | 'to-zero'
  /** From zero, asked by a gateway holding requests. */
  | 'wake'
  /** A replica count set by hand (`kiln autoscale set`, a deploy). */
  | 'manual';

export interface ScaleEvent {
  readonly id: number;
  readonly endpoint: string;
  readonly at: string;
  readonly kind: ScaleEventKind;
  readonly from: number;
  readonly to: number;
  /** 'stable' | 'panic' | 'predictive' | 'idle' | 'wake' | 'manual'. */
  readonly mode: string;
  readonly reason: string;
}

export type NewScaleEvent = Omit<ScaleEvent, 'id' | 'at'>;

export interface ScaleChange {
  readonly endpoint: string;
  readonly replicas: number;
  readonly reason: string;
  /** Written in the same transaction; none for a change that is not an event (same count). */
  readonly event?: NewScaleEvent;
  /** Refuse (KILN_CONFLICT-style) unless the stored count is this; absent: unconditional. */
  readonly expectReplicas?: number;
  /** Updates lastDemandAt when given. */
  readonly lastDemandAt?: string;
}

/** Demand at the gateways during one minute, summed over gateways. */
export interface DemandRow {
  readonly endpoint: string;
  /** ISO time on a whole minute. */
  readonly minuteStart: string;
  readonly arrivals: number;
  /** Sum of concurrencyMean × window seconds over the reports merged (mean = / seconds). */
  readonly concurrencySeconds: number;
  /** Report-seconds merged into this row (≈ 60 × gateways for a full minute). */
  readonly seconds: number;
  /** Latency of 200 answers (ms), merged: the endpoint's measured service times. */
  readonly latencyMs: HistogramSketchSnapshot;
}

/** A shared worker pool (`kiln pools create`): N workers, each holding models within a budget. */
export interface PoolRecord {
  readonly name: string;
  readonly team: string;
  /** Pool workers to run (>= 1). */
  readonly workers: number;
  /** Model memory each worker may hold before it evicts the least recently used (bytes). */
  readonly memoryBudgetBytes: number;
  readonly createdAt: string;
  readonly updatedAt: string;
}

export type NewPool = Omit<PoolRecord, 'createdAt' | 'updatedAt'>;
