// What a gateway counts for traffic management and reports to the control plane
// (POST /api/v1/traffic/reports, the gateway's role): per endpoint with a traffic policy,
// per served version and per slice value, requests, errors, latency and model outputs; per
// shadow version, copies offered, sent, dropped, failed, and how their answers compared with
// the primary's. The control plane merges reports of every gateway into 10-second rows
// (store: observations), which canary analysis, experiment reports and `kiln shadow report`
// read. Sketches and moments travel as their snapshots (src/traffic/).
//
// Counting rules (the gateway's, documented for every reader):
//   - a request counts for the version whose replica answered (a variant with no ready
//     replica gives its requests to another: they count there);
//   - an error is an answer with status >= 500 (a timeout 504, no replica 503 included);
//     4xx are the client's and 429s the door's: requests, not errors; a request refused
//     before it is placed in the split (413/429 before its body is in, a 429 once it is)
//     has no version and is not counted;
//   - latency is from the request's arrival to its answer, in milliseconds, for every
//     counted request;
//   - outputs: from a 200's v2 body, the first output with a numeric datatype, column 0 of
//     each row (row-major, shape[0] rows; at most `maxOutputValuesPerAnswer` values);
//   - the slice value is the `kiln-slice` header, else the value at the policy's slicePath;
//     requests without one count in `overall` only; at most `maxSliceValues` distinct values
//     per version and report, later ones count under `otherSlice`.

import type { HistogramSketchSnapshot } from '../../traffic/histogram-sketch.ts';
import type { MomentsSnapshot } from '../../traffic/running-moments.ts';

export const SLICE_HEADER = 'kiln-slice';
export const maxSliceValues = 64;
export const otherSlice = '(other)';
export const maxOutputValuesPerAnswer = 256;
/** Longest slice value kept; longer ones are cut. */
export const maxSliceValueLength = 64;

export interface TrafficReport {
  /** The reporting gateway (its process id and host), for logs. */
  readonly gateway: string;
  /** When the counts in this report were taken (ISO 8601): [windowStart, windowEnd). */
  readonly windowStart: string;
  readonly windowEnd: string;
  readonly endpoints: readonly EndpointTrafficReport[];
}

export interface EndpointTrafficReport {
  readonly endpoint: string;
  readonly versions: readonly VersionTrafficReport[];
  readonly shadows: readonly ShadowTrafficReport[];
}

export interface VersionTrafficReport {
  readonly model: string;
  readonly version: number;
  readonly overall: WindowCounts;
  /** By slice value. */
  readonly slices: Readonly<Record<string, WindowCounts>>;
}

export interface WindowCounts {
  readonly requests: number;
  /** Answers with status >= 500. */
  readonly errors: number;
  readonly latencyMs: HistogramSketchSnapshot;
  readonly outputs: HistogramSketchSnapshot;
}

export interface ShadowTrafficReport {
  readonly model: string;
  readonly version: number;
  readonly counts: ShadowCounts;
}

export interface ShadowCounts {
  /** Requests sampled for this shadow. */
  readonly offered: number;
  /** Copies sent to a shadow replica. */
  readonly sent: number;
  /** Copies dropped because the shadow queue was full (or the shadow had no replica). */
  readonly dropped: number;
  /** Copies that failed: status >= 500, a connection error, or no answer within the timeout. */
  readonly errors: number;
  /** Copies answered 200 whose primary answered 200 too: compared. */
  readonly compared: number;
  /**
   * Compared answers that agree: the same outputs (names, shapes) and every numeric element
   * within absolute 1e-6 + relative 1e-4 of the primary's, every other element equal.
   */
  readonly agreed: number;
  /** |shadow - primary| over the numeric output elements compared. */
  readonly absDiff: MomentsSnapshot;
  /** The shadow's latency (send to answer), milliseconds. */
  readonly latencyMs: HistogramSketchSnapshot;
  /** The primary's latency of the same requests, milliseconds. */
  readonly primaryLatencyMs: HistogramSketchSnapshot;
}

/** Relative accuracy of every sketch a gateway reports (merging needs one accuracy). */
export const reportSketchAccuracy = 0.01;
