// How long one request holds a replica's slot, drawn per request (issue 14 simulator). The
// measured kinds come from the platform: a latency HistogramSketch snapshot (the gateways'
// sketch of 200 answers, merged in the demand rows) or quantiles (`GET .../scale`), or raw
// samples; the closed-form kinds (exponential, constant) are for what-if models and for
// checking the queueing model against M/M/c formulas.
//
// A gateway's latency is arrival → answer, so at load it includes queueing at the worker;
// measured at low load it is the service time. The simulator takes it as the service time.

import type { HistogramSketchSnapshot } from '../traffic/histogram-sketch.ts';
import type { Random } from '../core/random.ts';

export type ServiceTimeSpec =
  | { readonly kind: 'exponential'; readonly meanMs: number }
  | { readonly kind: 'constant'; readonly ms: number }
  /** Drawn uniformly from these values. */
  | { readonly kind: 'samples'; readonly ms: readonly number[] }
  /** Drawn from the sketch: a bucket by its count, then uniform inside the bucket. */
  | { readonly kind: 'sketch'; readonly sketch: HistogramSketchSnapshot }
  /** Inverse CDF through these points, linear between them (q in [0, 1], ascending). */
  | { readonly kind: 'quantiles'; readonly points: readonly QuantilePoint[] };

export interface QuantilePoint {
  readonly q: number;
  readonly ms: number;
}

export interface ServiceTimeSampler {
  /** One service time, ms (> 0). */
  readonly draw: (random: Random) => number;
  /** The distribution's mean, ms (for capacity on the plot and in reports). */
  readonly meanMs: number;
}

export type ServiceTimeCheck =
  | { readonly ok: true; readonly sampler: ServiceTimeSampler }
  | { readonly ok: false; readonly reason: string };

/** The smallest service time drawn (ms): a zero would make a replica's capacity infinite. */
const minimumMs = 0.001;

export function serviceTimeSampler(spec: ServiceTimeSpec): ServiceTimeCheck {
  switch (spec.kind) {
    case 'exponential': {
      if (!(spec.meanMs > 0 && Number.isFinite(spec.meanMs))) {
        return { ok: false, reason: `exponential meanMs must be > 0, got ${spec.meanMs}` };
      }
      const mean = spec.meanMs;
      // 1 - next() is in (0, 1], so the log is finite.
      return sampler((random) => -mean * Math.log(1 - random.next()), mean);
    }
    case 'constant':
      if (!(spec.ms > 0 && Number.isFinite(spec.ms))) {
        return { ok: false, reason: `constant ms must be > 0, got ${spec.ms}` };
      }
      return sampler(() => spec.ms, spec.ms);
    case 'samples': {
      const values = spec.ms.filter((v) => Number.isFinite(v) && v > 0);
      if (values.length === 0 || values.length !== spec.ms.length) {
        return { ok: false, reason: 'samples must be a non-empty list of times > 0 (ms)' };
      }
      const mean = values.reduce((a, b) => a + b, 0) / values.length;
      return sampler((random) => values[random.int(values.length)] ?? mean, mean);
    }
    case 'sketch':
      return sketchSampler(spec.sketch);
    case 'quantiles':
      return quantileSampler(spec.points);
  }
}

function sampler(draw: (random: Random) => number, meanMs: number): ServiceTimeCheck {
  return { ok: true, sampler: { draw: (random) => Math.max(minimumMs, draw(random)), meanMs } };
}

/**
 * A DDSketch bucket i holds (gamma^(i-1), gamma^i]; values are latencies, so only the
 * positive buckets count (zeros and negatives cannot be service times and are skipped).
 */
function sketchSampler(sketch: HistogramSketchSnapshot): ServiceTimeCheck {
  const accuracy = sketch.relativeAccuracy;
  if (!(accuracy > 0 && accuracy < 1)) {
    return { ok: false, reason: `sketch relativeAccuracy must lie in (0, 1), got ${accuracy}` };
  }
  const gamma = (1 + accuracy) / (1 - accuracy);
  const lows: number[] = [];
  const highs: number[] = [];
  const cumulative: number[] = [];
  let total = 0;
  let weightedSum = 0;
  for (const [index, count] of sketch.positive) {
    if (!Number.isInteger(index) || !(Number.isInteger(count) && count >= 0)) {
      return { ok: false, reason: `sketch bucket [${index}, ${count}] is not valid` };
    }
    if (count === 0) continue;
    const high = Math.pow(gamma, index);
    const low = high / gamma;
    lows.push(low);
    highs.push(high);
    total += count;
    cumulative.push(total);
    weightedSum += count * ((low + high) / 2);
  }
  if (total === 0) return { ok: false, reason: 'the latency sketch holds no positive values' };
  return sampler((random) => {
    const rank = random.next() * total;
    let low = 0;
    let high = cumulative.length - 1;
    while (low < high) {
      const middle = (low + high) >> 1;
      if ((cumulative[middle] ?? 0) > rank) high = middle;
      else low = middle + 1;
    }
    const from = lows[low] ?? 0;
    return from + random.next() * ((highs[low] ?? from) - from);
  }, weightedSum / total);
}

function quantileSampler(points: readonly QuantilePoint[]): ServiceTimeCheck {
  if (points.length < 2) return { ok: false, reason: 'quantiles need at least 2 points' };
  for (let i = 0; i < points.length; i++) {
    const point = points[i];
    const previous = points[i - 1];
    if (point === undefined) continue;
    if (!(point.q >= 0 && point.q <= 1) || !(point.ms > 0 && Number.isFinite(point.ms))) {
      return { ok: false, reason: `quantile point ${i}: q in [0, 1] and ms > 0 required` };
    }
    if (previous !== undefined && !(point.q > previous.q && point.ms >= previous.ms)) {
      return { ok: false, reason: `quantile point ${i}: q and ms must ascend` };
    }
  }
  // Below the first q: the first point's value; above the last: the last's (no tails invented).
  const inverse = (u: number): number => {
    const first = points[0];
    const last = points[points.length - 1];
    if (first === undefined || last === undefined) return minimumMs;
    if (u <= first.q) return first.ms;
    if (u >= last.q) return last.ms;
    for (let i = 1; i < points.length; i++) {
      const a = points[i - 1];
      const b = points[i];
      if (a === undefined || b === undefined) continue;
      if (u <= b.q) return a.ms + ((u - a.q) / (b.q - a.q)) * (b.ms - a.ms);
    }
    return last.ms;
  };
  let mean = 0;
  const steps = 1000;
  for (let i = 0; i < steps; i++) mean += inverse((i + 0.5) / steps) / steps;
  return sampler((random) => inverse(random.next()), mean);
}
