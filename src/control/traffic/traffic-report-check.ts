// Checks a gateway's traffic report (POST /api/v1/traffic/reports) field by field and turns
// it into observation deltas, one per (endpoint, kind, version, slice), for one bucket.
//
// The report crosses the wire, so nothing in it is trusted: counts must be whole and >= 0,
// errors <= requests, agreed <= compared, every sketch at the one accuracy gateways report
// with (otherwise rows could not be merged exactly), bounded sizes everywhere. A report with
// any problem is refused whole (400 listing every problem), so a half-merged report never
// skews a canary's figures.

import {
  maxSliceValueLength,
  maxSliceValues,
  reportSketchAccuracy,
  type ShadowCounts,
  type TrafficReport,
  type WindowCounts,
} from '../../protocol/traffic/traffic-report.ts';
import type { HistogramSketchSnapshot } from '../../traffic/histogram-sketch.ts';
import type { MomentsSnapshot } from '../../traffic/running-moments.ts';
import type { ObservationDelta } from '../../store/traffic-records.ts';

/** Bounds that keep one report's merge small (a gateway reports every second). */
export const reportLimits = {
  endpoints: 4096,
  versionsPerEndpoint: 64,
  shadowsPerEndpoint: 64,
  /** Per side of a sketch; 1% accuracy spans 1e-9..1e9 in ~2 100 buckets. */
  sketchBuckets: 4096,
} as const;

export type ReportCheck =
  | { readonly ok: true; readonly report: TrafficReport }
  | { readonly ok: false; readonly problems: readonly string[] };

type Fields = Readonly<Record<string, unknown>>;

/** Every problem of `body` as a traffic report (field path and what is wrong), or the report. */
export function checkTrafficReport(body: unknown): ReportCheck {
  const problems: string[] = [];
  const problem = (field: string, message: string): void => {
    // A report broken everywhere names its first problems, not thousands.
    if (problems.length < 50) problems.push(`${field} ${message}`);
  };
  const report = objectAt(body, 'report', problem);
  if (report === null) return { ok: false, problems };
  if (typeof report['gateway'] !== 'string' || report['gateway'].length > 256) {
    problem('gateway', 'must be a string of at most 256 characters');
  }
  const start = timeAt(report['windowStart'], 'windowStart', problem);
  const end = timeAt(report['windowEnd'], 'windowEnd', problem);
  if (start !== null && end !== null && end < start) {
    problem('windowEnd', 'must not be before windowStart');
  }
  const endpoints = listAt(report['endpoints'], 'endpoints', reportLimits.endpoints, problem);
  const seen = new Set<string>();
  endpoints?.forEach((entry, e) => {
    const field = `endpoints[${e}]`;
    const endpoint = objectAt(entry, field, problem);
    if (endpoint === null) return;
    const name = endpoint['endpoint'];
    if (typeof name !== 'string' || name === '' || name.length > 256) {
      problem(`${field}.endpoint`, 'must be a non-empty string');
    } else if (seen.has(name)) {
      problem(`${field}.endpoint`, `${name} is listed more than once`);
    } else {
      seen.add(name);
    }
    const versions = listAt(
      endpoint['versions'],
      `${field}.versions`,
      reportLimits.versionsPerEndpoint,
      problem,
    );
    const versionIds = new Set<string>();
    versions?.forEach((entry, v) => {
      const at = `${field}.versions[${v}]`;
      const version = objectAt(entry, at, problem);
      if (version === null) return;
      checkIdentity(version, at, versionIds, problem);
      checkWindowCounts(version['overall'], `${at}.overall`, problem);
      const slices = objectAt(version['slices'], `${at}.slices`, problem);
      if (slices === null) return;
      const values = Object.keys(slices);
      if (values.length > maxSliceValues + 1) {
        problem(`${at}.slices`, `must have at most ${maxSliceValues + 1} values`);
        return;
      }
      for (const value of values) {
        if (value === '' || value.length > maxSliceValueLength) {
          problem(`${at}.slices`, `has a slice value of length ${value.length} (1..64)`);
          continue;
        }
        checkWindowCounts(slices[value], `${at}.slices[${JSON.stringify(value)}]`, problem);
      }
    });
    const shadows = listAt(
      endpoint['shadows'],
      `${field}.shadows`,
      reportLimits.shadowsPerEndpoint,
      problem,
    );
    const shadowIds = new Set<string>();
    shadows?.forEach((entry, s) => {
      const at = `${field}.shadows[${s}]`;
      const shadow = objectAt(entry, at, problem);
      if (shadow === null) return;
      checkIdentity(shadow, at, shadowIds, problem);
      checkShadowCounts(shadow['counts'], `${at}.counts`, problem);
    });
  });
  if (problems.length > 0) return { ok: false, problems };
  return { ok: true, report: body as TrafficReport };
}

/**
 * The rows a checked report adds to, all in the bucket starting at `bucketStart` (ISO 8601);
 * a version's `overall` goes to slice '' and each slice value to its own row.
 */
export function reportDeltas(report: TrafficReport, bucketStart: string): ObservationDelta[] {
  const deltas: ObservationDelta[] = [];
  for (const endpoint of report.endpoints) {
    for (const version of endpoint.versions) {
      const row = {
        endpoint: endpoint.endpoint,
        bucketStart,
        kind: 'primary' as const,
        model: version.model,
        version: version.version,
      };
      if (!isEmptyWindow(version.overall))
        deltas.push({ ...row, slice: '', data: version.overall });
      for (const [slice, counts] of Object.entries(version.slices)) {
        if (!isEmptyWindow(counts)) deltas.push({ ...row, slice, data: counts });
      }
    }
    for (const shadow of endpoint.shadows) {
      if (shadow.counts.offered === 0 && shadow.counts.sent === 0) continue;
      deltas.push({
        endpoint: endpoint.endpoint,
        bucketStart,
        kind: 'shadow',
        model: shadow.model,
        version: shadow.version,
        slice: '',
        data: shadow.counts,
      });
    }
  }
  return deltas;
}

/** Nothing to add: a window's sketches only hold values of its requests. */
function isEmptyWindow(counts: WindowCounts): boolean {
  return counts.requests === 0;
}

type Problem = (field: string, message: string) => void;

function objectAt(value: unknown, field: string, problem: Problem): Fields | null {
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) return value as Fields;
  problem(field, 'must be an object');
  return null;
}

function listAt(
  value: unknown,
  field: string,
  max: number,
  problem: Problem,
): readonly unknown[] | null {
  if (!Array.isArray(value)) {
    problem(field, 'must be a list');
    return null;
  }
  if (value.length > max) {
    problem(field, `must have at most ${max} entries, got ${value.length}`);
    return null;
  }
  return value as readonly unknown[];
}

function timeAt(value: unknown, field: string, problem: Problem): number | null {
  const ms = typeof value === 'string' ? Date.parse(value) : Number.NaN;
  if (Number.isNaN(ms)) {
    problem(field, 'must be an ISO 8601 time');
    return null;
  }
  return ms;
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

function checkIdentity(fields: Fields, at: string, seen: Set<string>, problem: Problem): void {
  const model = fields['model'];
  const version = fields['version'];
  if (typeof model !== 'string' || model === '' || model.length > 256) {
    problem(`${at}.model`, 'must be a non-empty string');
    return;
  }
  if (typeof version !== 'number' || !Number.isSafeInteger(version) || version < 1) {
    problem(`${at}.version`, 'must be an integer >= 1');
    return;
  }
  const id = `${model}:${version}`;
  if (seen.has(id)) problem(at, `${id} is listed more than once`);
  seen.add(id);
}

function checkCounts(
  fields: Fields,
  at: string,
  names: readonly string[],
  problem: Problem,
): boolean {
  let ok = true;
  for (const name of names) {
    if (!isCount(fields[name])) {
      problem(`${at}.${name}`, 'must be a whole number >= 0');
      ok = false;
    }
  }
  return ok;
}

function checkWindowCounts(value: unknown, at: string, problem: Problem): void {
  const counts = objectAt(value, at, problem);
  if (counts === null) return;
  if (checkCounts(counts, at, ['requests', 'errors'], problem)) {
    const { requests, errors } = counts as unknown as WindowCounts;
    if (errors > requests) problem(`${at}.errors`, `${errors} exceeds requests ${requests}`);
  }
  checkSketch(counts['latencyMs'], `${at}.latencyMs`, problem);
  checkSketch(counts['outputs'], `${at}.outputs`, problem);
}

function checkShadowCounts(value: unknown, at: string, problem: Problem): void {
  const counts = objectAt(value, at, problem);
  if (counts === null) return;
  const names = ['offered', 'sent', 'dropped', 'errors', 'compared', 'agreed'];
  if (checkCounts(counts, at, names, problem)) {
    const c = counts as unknown as ShadowCounts;
    if (c.agreed > c.compared)
      problem(`${at}.agreed`, `${c.agreed} exceeds compared ${c.compared}`);
  }
  checkMoments(counts['absDiff'], `${at}.absDiff`, problem);
  checkSketch(counts['latencyMs'], `${at}.latencyMs`, problem);
  checkSketch(counts['primaryLatencyMs'], `${at}.primaryLatencyMs`, problem);
}

function checkSketch(value: unknown, at: string, problem: Problem): void {
  const sketch = objectAt(value, at, problem);
  if (sketch === null) return;
  const snapshot = sketch as unknown as HistogramSketchSnapshot;
  if (snapshot.relativeAccuracy !== reportSketchAccuracy) {
    problem(`${at}.relativeAccuracy`, `must be ${reportSketchAccuracy} (the reports' accuracy)`);
  }
  if (!isCount(snapshot.zeroCount)) problem(`${at}.zeroCount`, 'must be a whole number >= 0');
  for (const side of ['positive', 'negative'] as const) {
    const buckets = listAt(snapshot[side], `${at}.${side}`, reportLimits.sketchBuckets, problem);
    if (buckets === null) continue;
    let last = -Infinity;
    for (const [i, bucket] of buckets.entries()) {
      const pair = Array.isArray(bucket) ? (bucket as readonly unknown[]) : null;
      const index = pair?.[0];
      if (
        pair?.length !== 2 ||
        typeof index !== 'number' ||
        !Number.isSafeInteger(index) ||
        !isCount(pair[1])
      ) {
        problem(`${at}.${side}[${i}]`, 'must be [integer index, whole count >= 0]');
        return;
      }
      // Ascending and unique: what the merge (a sorted merge) relies on.
      if (index <= last) {
        problem(`${at}.${side}[${i}]`, 'indexes must be strictly ascending');
        return;
      }
      last = index;
    }
  }
}

function checkMoments(value: unknown, at: string, problem: Problem): void {
  const moments = objectAt(value, at, problem);
  if (moments === null) return;
  const { count, mean, m2, min, max } = moments as unknown as MomentsSnapshot;
  if (!isCount(count)) {
    problem(`${at}.count`, 'must be a whole number >= 0');
    return;
  }
  if (typeof mean !== 'number' || !Number.isFinite(mean)) problem(`${at}.mean`, 'must be finite');
  if (typeof m2 !== 'number' || !Number.isFinite(m2) || m2 < 0) {
    problem(`${at}.m2`, 'must be finite and >= 0');
  }
  if (count === 0) {
    if (min !== null || max !== null) problem(at, 'min and max must be null when count is 0');
    return;
  }
  if (typeof min !== 'number' || !Number.isFinite(min)) problem(`${at}.min`, 'must be finite');
  if (typeof max !== 'number' || !Number.isFinite(max)) problem(`${at}.max`, 'must be finite');
}
