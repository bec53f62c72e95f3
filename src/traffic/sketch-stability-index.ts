// PSI between two histogram sketches of model outputs (canary vs baseline): bins cut at the
// baseline sketch's quantiles (deciles by default), both sketches' bucket counts placed into
// those bins by each bucket's representative value, then populationStabilityIndex. Within the
// sketch's relative accuracy this is the PSI of the raw values; a value within that accuracy
// of an edge may land in the neighbouring bin.

import {
  populationStabilityIndex,
  defaultPsiEpsilon,
  type StabilityIndex,
} from './population-stability-index.ts';
import type { HistogramSketch } from './histogram-sketch.ts';
import { invalidInput, type StatisticResult } from './statistic-result.ts';

export function sketchStabilityIndex(
  baseline: HistogramSketch,
  current: HistogramSketch,
  numBins = 10,
  epsilon = defaultPsiEpsilon,
): StatisticResult<StabilityIndex & { readonly edges: readonly number[] }> {
  if (!(Number.isInteger(numBins) && numBins >= 2)) {
    return invalidInput('invalid-parameter', `numBins ${numBins} must be an integer >= 2`);
  }
  if (baseline.relativeAccuracy !== current.relativeAccuracy) {
    return invalidInput('bins-mismatch', 'the two sketches have different relative accuracy');
  }
  if (baseline.count === 0) return invalidInput('empty-group', 'baseline has no observations');
  if (current.count === 0) return invalidInput('empty-group', 'current has no observations');
  const edges: number[] = [];
  for (let k = 1; k < numBins; k++) {
    const edge = baseline.quantile(k / numBins) ?? 0;
    if (edges.length === 0 || edge > (edges[edges.length - 1] ?? -Infinity)) edges.push(edge);
  }
  const result = populationStabilityIndex(
    baseline.countsInBins(edges),
    current.countsInBins(edges),
    epsilon,
  );
  return result.ok ? { ...result, edges } : result;
}
