// Reads an endpoint's merged gateway observations over a window, in the shape the readers
// want: canary analysis (per version, overall and per slice value, as VersionObservations),
// experiment reports (the same, per variant) and `kiln shadow report` (per shadow version).
//
// Rows are 10-second buckets (observationBucketMs), attributed by the control plane's clock
// when the report arrived. The window is bucket-aligned: `sinceMs` includes the whole bucket it
// falls in (up to 10 s before it), so a step that just started reads every request of its
// first seconds; the counts are per version, so what leaks in from before is still the
// right version's. Readers that cannot accept that (a fresh canary after a rolled-back one)
// start their window at the next bucket: `nextBucketStart(ms)`.

import { HistogramSketch } from '../../traffic/histogram-sketch.ts';
import type { CanaryWindow, VersionObservations } from '../../traffic/canary-analysis.ts';
import type { ShadowCounts, WindowCounts } from '../../protocol/traffic/traffic-report.ts';
import { reportSketchAccuracy } from '../../protocol/traffic/traffic-report.ts';
import type { Store } from '../../store/store.ts';
import { observationBucketMs, type ObservationRow } from '../../store/traffic-records.ts';
import { mergeShadowCounts } from './observation-merge.ts';

/** Everything observed on one endpoint over a window, by `model:version`. */
export interface EndpointObservations {
  /** Versions that answered requests: overall, and per slice value (not '(other)'-merged). */
  readonly primary: Map<string, VersionObservations>;
  /** Shadow versions: their copies' counts, merged over the window. */
  readonly shadows: Map<string, ShadowCounts>;
}

/** The start (ms since the epoch) of the bucket `ms` falls in. */
export function bucketStartOf(ms: number): number {
  return Math.floor(ms / observationBucketMs) * observationBucketMs;
}

/** The first bucket boundary at or after `ms`: a window that starts there holds nothing earlier. */
export function nextBucketStart(ms: number): number {
  return Math.ceil(ms / observationBucketMs) * observationBucketMs;
}

/**
 * The endpoint's observations from the bucket holding `sinceMs` up to (not including) the
 * bucket holding `untilMs` (absent: up to now). Empty maps when nothing was reported.
 */
export async function observationsSince(
  store: Store,
  endpoint: string,
  sinceMs: number,
  untilMs?: number,
): Promise<EndpointObservations> {
  const rows = await store.listObservations({
    endpoint,
    since: new Date(bucketStartOf(sinceMs)).toISOString(),
    ...(untilMs === undefined ? {} : { until: new Date(bucketStartOf(untilMs)).toISOString() }),
  });
  return observationsFromRows(rows);
}

/** Mutable while rows are folded in; handed out as CanaryWindow. */
interface WindowAccumulator {
  requests: number;
  errors: number;
  readonly latencyMs: HistogramSketch;
  readonly outputs: HistogramSketch;
}

interface VersionAccumulator {
  readonly overall: WindowAccumulator;
  readonly slices: Map<string, WindowAccumulator>;
}

/** Folds rows (any order, any buckets) into per-version observations. Pure. */
export function observationsFromRows(rows: readonly ObservationRow[]): EndpointObservations {
  const versions = new Map<string, VersionAccumulator>();
  const shadows = new Map<string, ShadowCounts>();
  for (const row of rows) {
    const key = `${row.model}:${row.version}`;
    if (row.kind === 'shadow') {
      const counts = row.data as ShadowCounts;
      const known = shadows.get(key);
      shadows.set(key, known === undefined ? counts : mergeShadowCounts(known, counts));
      continue;
    }
    let version = versions.get(key);
    if (version === undefined) {
      version = { overall: emptyWindow(), slices: new Map() };
      versions.set(key, version);
    }
    let target = version.overall;
    if (row.slice !== '') {
      const slice = version.slices.get(row.slice) ?? emptyWindow();
      version.slices.set(row.slice, slice);
      target = slice;
    }
    addWindow(target, row.data as WindowCounts);
  }
  const primary = new Map<string, VersionObservations>();
  for (const [key, version] of versions) {
    const slices: Record<string, CanaryWindow> = {};
    for (const value of [...version.slices.keys()].sort()) {
      slices[value] = version.slices.get(value) as CanaryWindow;
    }
    primary.set(key, { overall: version.overall, slices });
  }
  return { primary, shadows };
}

/** A version with nothing observed (what a reader uses for a version absent from the map). */
export function emptyVersionObservations(): VersionObservations {
  return { overall: emptyWindow(), slices: {} };
}

function emptyWindow(): WindowAccumulator {
  return {
    requests: 0,
    errors: 0,
    latencyMs: new HistogramSketch(reportSketchAccuracy),
    outputs: new HistogramSketch(reportSketchAccuracy),
  };
}

function addWindow(target: WindowAccumulator, counts: WindowCounts): void {
  const latency = HistogramSketch.fromSnapshot(counts.latencyMs);
  const outputs = HistogramSketch.fromSnapshot(counts.outputs);
  // Rows are written only from checked reports; one that does not read back (a sketch of
  // another accuracy from an older Kiln) is left out whole rather than half-counted.
  if (!latency.ok || !outputs.ok) return;
  const accuracy = target.latencyMs.relativeAccuracy;
  if (latency.sketch.relativeAccuracy !== accuracy || outputs.sketch.relativeAccuracy !== accuracy)
    return;
  target.requests += counts.requests;
  target.errors += counts.errors;
  target.latencyMs.merge(latency.sketch);
  target.outputs.merge(outputs.sketch);
}
