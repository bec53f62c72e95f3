// How two partial counts of the same observation row (endpoint, 10-second bucket, kind,
// version, slice) become one: what the store's mergeObservations applies when several
// gateways, or several reports of one gateway, land in the same row. Both operands are
// snapshots as they travel (protocol/traffic/traffic-report.ts); the result is one too.
//
//   WindowCounts  requests, errors: added; latencyMs, outputs: sketch buckets added
//   ShadowCounts  offered … agreed: added; absDiff: moments merged (Chan et al.);
//                 latencyMs, primaryLatencyMs: sketch buckets added
//
// Sketch merge is exact (merge of parts == sketch of the whole) because every gateway
// reports at one accuracy (reportSketchAccuracy), which ingestion checks.

import type { HistogramSketchSnapshot } from '../../traffic/histogram-sketch.ts';
import { RunningMoments, type MomentsSnapshot } from '../../traffic/running-moments.ts';
import type { ShadowCounts, WindowCounts } from '../../protocol/traffic/traffic-report.ts';

type Buckets = readonly (readonly [number, number])[];

/** Adds two sketches' counts; both must have the same accuracy (ingestion checks it). */
export function mergeSketchSnapshots(
  a: HistogramSketchSnapshot,
  b: HistogramSketchSnapshot,
): HistogramSketchSnapshot {
  return {
    relativeAccuracy: a.relativeAccuracy,
    zeroCount: a.zeroCount + b.zeroCount,
    positive: mergeBuckets(a.positive, b.positive),
    negative: mergeBuckets(a.negative, b.negative),
  };
}

/** Two ascending [index, count] lists into one (a sorted merge, counts of equal indexes added). */
function mergeBuckets(a: Buckets, b: Buckets): [number, number][] {
  const out: [number, number][] = [];
  let i = 0;
  let j = 0;
  for (;;) {
    const left = a[i];
    const right = b[j];
    if (left === undefined && right === undefined) return out;
    if (right === undefined || (left !== undefined && left[0] < right[0])) {
      const [index, count] = left as readonly [number, number];
      out.push([index, count]);
      i += 1;
    } else if (left === undefined || right[0] < left[0]) {
      out.push([right[0], right[1]]);
      j += 1;
    } else {
      out.push([left[0], left[1] + right[1]]);
      i += 1;
      j += 1;
    }
  }
}

export function mergeMomentsSnapshots(a: MomentsSnapshot, b: MomentsSnapshot): MomentsSnapshot {
  const left = RunningMoments.fromSnapshot(a);
  const right = RunningMoments.fromSnapshot(b);
  // Both were checked on the way in; a bad one here is a stored row from a bug: keep the other.
  if (!left.ok) return b;
  if (!right.ok) return a;
  return left.moments.merge(right.moments).snapshot();
}

export function mergeWindowCounts(a: WindowCounts, b: WindowCounts): WindowCounts {
  return {
    requests: a.requests + b.requests,
    errors: a.errors + b.errors,
    latencyMs: mergeSketchSnapshots(a.latencyMs, b.latencyMs),
    outputs: mergeSketchSnapshots(a.outputs, b.outputs),
  };
}

export function mergeShadowCounts(a: ShadowCounts, b: ShadowCounts): ShadowCounts {
  return {
    offered: a.offered + b.offered,
    sent: a.sent + b.sent,
    dropped: a.dropped + b.dropped,
    errors: a.errors + b.errors,
    compared: a.compared + b.compared,
    agreed: a.agreed + b.agreed,
    absDiff: mergeMomentsSnapshots(a.absDiff, b.absDiff),
    latencyMs: mergeSketchSnapshots(a.latencyMs, b.latencyMs),
    primaryLatencyMs: mergeSketchSnapshots(a.primaryLatencyMs, b.primaryLatencyMs),
  };
}

/** A shadow row's data (its counts start with `offered`); a primary row's has `requests`. */
export function isShadowCounts(data: unknown): data is ShadowCounts {
  return typeof data === 'object' && data !== null && 'offered' in data;
}

/**
 * The merge the store applies to a row (`existing` null: the row is new). A row's kind never
 * changes, so both sides have the same shape.
 */
export function mergeObservationData(existing: unknown, delta: unknown): unknown {
  if (existing === null || existing === undefined) return delta;
  if (isShadowCounts(delta)) return mergeShadowCounts(existing as ShadowCounts, delta);
  return mergeWindowCounts(existing as WindowCounts, delta as WindowCounts);
}
