// The reference profile of a model version's data (issue 15): per feature and per output a
// mergeable sketch, as plain JSON so it crosses the wire (API, CLI, worker → control plane) and
// sits in the store as it is. Workers keep the same sketches of what they serve (drift, C), so
// a serving window and the training sample compare over the same bucket grid.
//
//   numeric      count/mean/m2/min/max (RunningMoments) + a DDSketch-style histogram
//                (HistogramSketch: log-spaced buckets, relative accuracy a) + missing count.
//                The sketch's buckets are the histogram; PSI cuts them at the reference's
//                deciles when two sketches are compared (sketch-psi.ts).
//   categorical  counts per category up to maxCategories, the rest summed in `other`, missing.
//
// "Missing" is a value that is absent, null, an empty CSV cell or not a finite number (for a
// numeric feature): counted, never folded into the distribution.

import type { HistogramSketchSnapshot } from '../../traffic/histogram-sketch.ts';
import type { MomentsSnapshot } from '../../traffic/running-moments.ts';

export const profileFormatVersion = 1;

/** Quantiles within 1% of a true value: ~115 buckets per decade of magnitude. */
export const defaultRelativeAccuracy = 0.01;

/** Categories kept by name; the rest are counted together as `other`. */
export const defaultMaxCategories = 100;

export interface NumericSketch {
  readonly kind: 'numeric';
  /** Values absent, null or not finite. */
  readonly missing: number;
  /** Count, mean, sum of squared deviations, min, max of the present values. */
  readonly moments: MomentsSnapshot;
  /** The distribution of the present values (its total equals moments.count). */
  readonly histogram: HistogramSketchSnapshot;
}

export interface CategoricalSketch {
  readonly kind: 'categorical';
  readonly missing: number;
  /** Present values (categories + other). */
  readonly count: number;
  readonly maxCategories: number;
  /** Count per category, at most maxCategories entries. */
  readonly categories: Readonly<Record<string, number>>;
  /** Present values whose category was not kept. */
  readonly other: number;
}

export type FeatureSketch = NumericSketch | CategoricalSketch;

export type SketchKind = FeatureSketch['kind'];

export interface DataProfile {
  readonly formatVersion: typeof profileFormatVersion;
  /** Rows (requests) sketched. */
  readonly rows: number;
  /** Input features by the name the workers see (V2 input naming). */
  readonly features: Readonly<Record<string, FeatureSketch>>;
  /** Model outputs by output name. */
  readonly outputs: Readonly<Record<string, FeatureSketch>>;
  /** ISO 8601. */
  readonly createdAt: string;
}

/** Present (non-missing) values of a sketch. */
export function presentCount(sketch: FeatureSketch): number {
  return sketch.kind === 'numeric' ? sketch.moments.count : sketch.count;
}
