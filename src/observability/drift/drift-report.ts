// The drift and skew report of an endpoint (pure): from its stored drift windows
// (store/drift-records.ts) and its versions' reference profiles, per version and per group
// (overall, or one slice value), per feature and output:
//
//   vs reference  the group's windows since `since` merged, against the version's reference
//                 profile (training-serving skew); none without a profile
//   vs previous   the group's latest window against the window before it (drift); none with
//                 fewer than two windows
//
// each with PSI (sketch-psi.ts: reference deciles + missing; categories) and, for numeric
// sketches, the two-sample Kolmogorov–Smirnov D and p-value (sketch-ks.ts), and a status by
// the thresholds of drift-thresholds.ts.

import type { DataProfile, FeatureSketch } from '../profile/data-profile.ts';
import { presentCount } from '../profile/data-profile.ts';
import { mergeDataProfiles } from '../profile/merge-feature-sketches.ts';
import { sketchKolmogorovSmirnov } from '../profile/sketch-ks.ts';
import { sketchPsi } from '../profile/sketch-psi.ts';
import type { DriftWindowRecord } from '../../store/drift-records.ts';
import { defaultDriftThresholds, type DriftThresholds } from './drift-thresholds.ts';

export type DriftStatus = 'ok' | 'warn' | 'drift' | 'insufficient';

export interface DriftComparison {
  /** null when the two sketches cannot be compared (`problem` says why). */
  readonly psi: number | null;
  readonly ksStatistic: number | null;
  readonly ksPValue: number | null;
  /** Present values on each side. */
  readonly referenceCount: number;
  readonly currentCount: number;
  readonly status: DriftStatus;
  readonly problem?: string;
}

export interface DriftItem {
  readonly name: string;
  readonly kind: 'feature' | 'output';
  readonly vsReference: DriftComparison | null;
  readonly vsPrevious: DriftComparison | null;
  /** The worse of the two statuses ('ok' when neither exists). */
  readonly status: DriftStatus;
  readonly flagged: boolean;
}

export interface DriftGroup {
  /** null: overall. */
  readonly slice: string | null;
  /** Rows (requests' rows) in the merged windows. */
  readonly rows: number;
  readonly windows: number;
  readonly latestWindowStart: string | null;
  readonly previousWindowStart: string | null;
  readonly flagged: number;
  readonly items: readonly DriftItem[];
  /** Why no comparison could be made for the whole group (a merge failed). */
  readonly problem?: string;
}

export interface VersionDrift {
  readonly model: string;
  readonly version: number;
  readonly hasReference: boolean;
  readonly groups: readonly DriftGroup[];
}

export interface DriftReportInput {
  readonly windows: readonly DriftWindowRecord[];
  /** The reference profile of a version, or null when it has none. */
  readonly reference: (model: string, version: number) => DataProfile | null;
  /** Report slices too (the windows then hold slice rows). */
  readonly bySlice: boolean;
  readonly thresholds?: DriftThresholds;
}

const statusRank: Record<DriftStatus, number> = { ok: 0, insufficient: 1, warn: 2, drift: 3 };

/** The worse of two statuses. */
function worse(a: DriftStatus, b: DriftStatus): DriftStatus {
  return statusRank[a] >= statusRank[b] ? a : b;
}

export function compareSketches(
  reference: FeatureSketch,
  current: FeatureSketch,
  thresholds: DriftThresholds = defaultDriftThresholds,
): DriftComparison {
  const referenceCount = presentCount(reference);
  const currentCount = presentCount(current);
  const psi = sketchPsi(reference, current);
  if (!psi.ok) {
    return {
      psi: null,
      ksStatistic: null,
      ksPValue: null,
      referenceCount,
      currentCount,
      status: 'insufficient',
      problem: psi.message,
    };
  }
  const ks =
    reference.kind === 'numeric' &&
    current.kind === 'numeric' &&
    referenceCount > 0 &&
    currentCount > 0
      ? sketchKolmogorovSmirnov(reference, current)
      : null;
  const ksStatistic = ks !== null && ks.ok ? ks.statistic : null;
  const ksPValue = ks !== null && ks.ok ? ks.pValue : null;
  let status: DriftStatus;
  if (Math.min(referenceCount, currentCount) < thresholds.minCount) status = 'insufficient';
  else if (
    psi.psi >= thresholds.psiAlert ||
    (ksPValue !== null &&
      ksStatistic !== null &&
      ksPValue < thresholds.ksPValue &&
      ksStatistic >= thresholds.ksMinStatistic)
  )
    status = 'drift';
  else if (psi.psi >= thresholds.psiWarn) status = 'warn';
  else status = 'ok';
  return { psi: psi.psi, ksStatistic, ksPValue, referenceCount, currentCount, status };
}

/** Merges profiles of disjoint windows; a message when two do not merge. */
export function mergeProfiles(profiles: readonly DataProfile[]): DataProfile | string | null {
  let merged: DataProfile | null = null;
  for (const profile of profiles) {
    if (merged === null) {
      merged = profile;
      continue;
    }
    const result = mergeDataProfiles(merged, profile);
    if (!result.ok) return result.message;
    merged = result.profile;
  }
  return merged;
}

/** Compares every feature and output of `current` with the same name in `reference`. */
function compareProfiles(
  reference: DataProfile | null,
  previous: DataProfile | null,
  current: DataProfile,
  thresholds: DriftThresholds,
): DriftItem[] {
  const items: DriftItem[] = [];
  for (const kind of ['feature', 'output'] as const) {
    const field = kind === 'feature' ? 'features' : 'outputs';
    for (const name of Object.keys(current[field]).sort()) {
      const sketch = current[field][name]!;
      const ref = reference?.[field][name];
      const prev = previous?.[field][name];
      const vsReference = ref === undefined ? null : compareSketches(ref, sketch, thresholds);
      const vsPrevious = prev === undefined ? null : compareSketches(prev, sketch, thresholds);
      const status = worse(vsReference?.status ?? 'ok', vsPrevious?.status ?? 'ok');
      items.push({ name, kind, vsReference, vsPrevious, status, flagged: status === 'drift' });
    }
  }
  return items;
}

function groupOf(
  slice: string | null,
  windows: readonly DriftWindowRecord[],
  reference: DataProfile | null,
  thresholds: DriftThresholds,
): DriftGroup {
  const latest = windows[windows.length - 1] ?? null;
  const previous = windows.length >= 2 ? windows[windows.length - 2]! : null;
  const base = {
    slice,
    rows: windows.reduce((n, w) => n + w.profile.rows, 0),
    windows: windows.length,
    latestWindowStart: latest?.windowStart ?? null,
    previousWindowStart: previous?.windowStart ?? null,
  };
  const merged = mergeProfiles(windows.map((w) => w.profile));
  if (merged === null || typeof merged === 'string') {
    return {
      ...base,
      flagged: 0,
      items: [],
      ...(typeof merged === 'string' ? { problem: merged } : {}),
    };
  }
  // Skew: everything since `since` against the reference. Drift: the latest window against
  // the one before (both must exist).
  const skew = reference === null ? [] : compareProfiles(reference, null, merged, thresholds);
  const drift =
    previous === null || latest === null
      ? []
      : compareProfiles(null, previous.profile, latest.profile, thresholds);
  const byName = new Map<string, DriftItem>();
  for (const item of [...skew, ...drift]) {
    const key = `${item.kind} ${item.name}`;
    const known = byName.get(key);
    const vsReference = known?.vsReference ?? item.vsReference;
    const vsPrevious = known?.vsPrevious ?? item.vsPrevious;
    const status = worse(vsReference?.status ?? 'ok', vsPrevious?.status ?? 'ok');
    byName.set(key, { ...item, vsReference, vsPrevious, status, flagged: status === 'drift' });
  }
  if (reference === null && previous === null) {
    for (const kind of ['feature', 'output'] as const) {
      const field = kind === 'feature' ? 'features' : 'outputs';
      for (const name of Object.keys(merged[field])) {
        const item: DriftItem = {
          name,
          kind,
          vsReference: null,
          vsPrevious: null,
          status: 'ok',
          flagged: false,
        };
        byName.set(`${kind} ${name}`, item);
      }
    }
  }
  const items = [...byName.values()].sort(
    (a, b) => (a.kind === b.kind ? 0 : a.kind === 'feature' ? -1 : 1) || cmp(a.name, b.name),
  );
  return { ...base, flagged: items.filter((i) => i.flagged).length, items };
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The report's versions, in the order their windows first appear; groups overall first. */
export function driftReport(input: DriftReportInput): VersionDrift[] {
  const thresholds = input.thresholds ?? defaultDriftThresholds;
  const byVersion = new Map<
    string,
    { model: string; version: number; rows: DriftWindowRecord[] }
  >();
  for (const window of input.windows) {
    if (window.slice !== null && !input.bySlice) continue;
    const key = `${window.model}:${window.version}`;
    let entry = byVersion.get(key);
    if (entry === undefined) {
      entry = { model: window.model, version: window.version, rows: [] };
      byVersion.set(key, entry);
    }
    entry.rows.push(window);
  }
  const versions: VersionDrift[] = [];
  for (const { model, version, rows } of byVersion.values()) {
    const reference = input.reference(model, version);
    const bySlice = new Map<string | null, DriftWindowRecord[]>();
    for (const row of rows) {
      const list = bySlice.get(row.slice) ?? [];
      list.push(row);
      bySlice.set(row.slice, list);
    }
    const slices = [...bySlice.keys()].sort((a, b) =>
      a === null ? -1 : b === null ? 1 : cmp(a, b),
    );
    const groups = slices.map((slice) => {
      const windows = [...bySlice.get(slice)!].sort((a, b) => cmp(a.windowStart, b.windowStart));
      return groupOf(slice, windows, reference, thresholds);
    });
    versions.push({ model, version, hasReference: reference !== null, groups });
  }
  return versions;
}
