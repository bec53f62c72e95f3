// Merging sketches of disjoint data: worker windows into an endpoint window, CSV chunks into
// one profile. Numeric sketches merge exactly (bucket counts add; moments by Chan et al.), so
// the merge of parts equals the sketch of the whole up to float rounding of mean and m2.
// Categorical sketches add counts; when the union holds more than maxCategories names the most
// frequent are kept (ties by name) and the rest move to `other` — exact while under the cap.

import { HistogramSketch } from '../../traffic/histogram-sketch.ts';
import { RunningMoments } from '../../traffic/running-moments.ts';
import { invalidInput, type StatisticResult } from '../../traffic/statistic-result.ts';
import type {
  CategoricalSketch,
  DataProfile,
  FeatureSketch,
  NumericSketch,
} from './data-profile.ts';

export function mergeFeatureSketches(
  a: FeatureSketch,
  b: FeatureSketch,
): StatisticResult<{ sketch: FeatureSketch }> {
  if (a.kind === 'numeric' && b.kind === 'numeric') return mergeNumeric(a, b);
  if (a.kind === 'categorical' && b.kind === 'categorical') {
    return { ok: true, sketch: mergeCategorical(a, b) };
  }
  return invalidInput('bins-mismatch', `cannot merge a ${a.kind} sketch with a ${b.kind} sketch`);
}

function mergeNumeric(
  a: NumericSketch,
  b: NumericSketch,
): StatisticResult<{ sketch: FeatureSketch }> {
  const left = HistogramSketch.fromSnapshot(a.histogram);
  if (!left.ok) return left;
  const right = HistogramSketch.fromSnapshot(b.histogram);
  if (!right.ok) return right;
  const merged = left.sketch.merge(right.sketch);
  if (!merged.ok) return merged;
  const leftMoments = RunningMoments.fromSnapshot(a.moments);
  if (!leftMoments.ok) return leftMoments;
  const rightMoments = RunningMoments.fromSnapshot(b.moments);
  if (!rightMoments.ok) return rightMoments;
  return {
    ok: true,
    sketch: {
      kind: 'numeric',
      missing: a.missing + b.missing,
      moments: leftMoments.moments.merge(rightMoments.moments).snapshot(),
      histogram: left.sketch.snapshot(),
    },
  };
}

function mergeCategorical(a: CategoricalSketch, b: CategoricalSketch): CategoricalSketch {
  const maxCategories = Math.min(a.maxCategories, b.maxCategories);
  const counts = new Map<string, number>(Object.entries(a.categories));
  for (const [name, count] of Object.entries(b.categories)) {
    counts.set(name, (counts.get(name) ?? 0) + count);
  }
  const ranked = [...counts.entries()].sort((x, y) => y[1] - x[1] || compareNames(x[0], y[0]));
  const kept = ranked.slice(0, maxCategories).sort((x, y) => compareNames(x[0], y[0]));
  const dropped = ranked.slice(maxCategories).reduce((sum, [, count]) => sum + count, 0);
  return {
    kind: 'categorical',
    missing: a.missing + b.missing,
    count: a.count + b.count,
    maxCategories,
    categories: Object.fromEntries(kept),
    other: a.other + b.other + dropped,
  };
}

function compareNames(x: string, y: string): number {
  return x < y ? -1 : x > y ? 1 : 0;
}

/**
 * Merges two profiles of disjoint rows: each name present in both is merged, a name present in
 * one only is kept as it is (a feature first seen in a later window).
 */
export function mergeDataProfiles(
  a: DataProfile,
  b: DataProfile,
): StatisticResult<{ profile: DataProfile }> {
  const features = mergeNamed(a.features, b.features, 'feature');
  if (!features.ok) return features;
  const outputs = mergeNamed(a.outputs, b.outputs, 'output');
  if (!outputs.ok) return outputs;
  return {
    ok: true,
    profile: {
      formatVersion: a.formatVersion,
      rows: a.rows + b.rows,
      features: features.sketches,
      outputs: outputs.sketches,
      createdAt: a.createdAt > b.createdAt ? a.createdAt : b.createdAt,
    },
  };
}

function mergeNamed(
  a: Readonly<Record<string, FeatureSketch>>,
  b: Readonly<Record<string, FeatureSketch>>,
  what: string,
): StatisticResult<{ sketches: Record<string, FeatureSketch> }> {
  const merged = new Map<string, FeatureSketch>(Object.entries(a));
  for (const [name, sketch] of Object.entries(b)) {
    const existing = merged.get(name);
    if (existing === undefined) {
      merged.set(name, sketch);
      continue;
    }
    const result = mergeFeatureSketches(existing, sketch);
    if (!result.ok) return invalidInput(result.reason, `${what} ${name}: ${result.message}`);
    merged.set(name, result.sketch);
  }
  return { ok: true, sketches: Object.fromEntries(merged) };
}
