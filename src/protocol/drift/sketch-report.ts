// What a worker keeps of the requests it serves for drift and skew (issue 15) and answers at
// `GET /kiln/v1/sketches`: since its last answer, per slice value, one DataProfile of the
// inputs (per feature) and outputs it served — sketches, never a request. The control plane
// polls it (src/control/observability/drift/drift-collector.ts) and merges the answers per
// endpoint, version, window and slice.
//
// Which requests count: those the gateway marks (the endpoint has `observability.drift`
// enabled in the routing snapshot): on the worker channel the infer/tensors frame's meta
// carries `d` (the slice value, '' for none); over HTTP the `kiln-drift: 1` header, with the
// slice in `kiln-slice`. Only answered requests (200) count.
//
// Feature names, as the reference profile names them (docs/profiles.md):
//   - an input of one value a row ([N] or [N, 1]): the input's name (declared feature columns);
//   - an input [N, F]: the model's feature names when it has F of them, else `NAME[j]`;
//   - inputs of higher rank or more than maxSketchColumns columns (images, embeddings) are not
//     sketched. Outputs likewise by output name (`NAME[k]` for the columns of [N, K]).

import type { DataProfile } from '../../observability/profile/data-profile.ts';

export const sketchesPath = '/kiln/v1/sketches';
/** HTTP header that marks a request for sketching (value `1`); the slice is `kiln-slice`. */
export const driftHeader = 'kiln-drift';
/** Columns of one tensor beyond which it is not sketched (a picture is no feature table). */
export const maxSketchColumns = 256;
/** Distinct slice values one worker keeps per answer; later ones are kept as otherSlice. */
export const maxSketchSlices = 64;

export interface WorkerSketchReport {
  readonly replicaId: string;
  readonly endpoint: string;
  readonly model: string;
  readonly version: number;
  /** [windowStart, windowEnd) of what the worker sketched (ISO 8601). */
  readonly windowStart: string;
  readonly windowEnd: string;
  /** Every sketched request; null when none was. */
  readonly overall: DataProfile | null;
  /** Per slice value (requests with one only). */
  readonly slices: Readonly<Record<string, DataProfile>>;
}

function isProfile(value: unknown): value is DataProfile {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const profile = value as Record<string, unknown>;
  return (
    Number.isInteger(profile.rows) &&
    (profile.rows as number) >= 0 &&
    typeof profile.features === 'object' &&
    profile.features !== null &&
    typeof profile.outputs === 'object' &&
    profile.outputs !== null
  );
}

/**
 * A worker's answer as a report, or null when it is not one (the collector then leaves that
 * replica out of the round). The sketches themselves are checked when they are merged.
 */
export function parseWorkerSketchReport(value: unknown): WorkerSketchReport | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return null;
  const report = value as Record<string, unknown>;
  if (
    typeof report.replicaId !== 'string' ||
    typeof report.endpoint !== 'string' ||
    typeof report.model !== 'string' ||
    !Number.isInteger(report.version) ||
    typeof report.windowStart !== 'string' ||
    typeof report.windowEnd !== 'string'
  ) {
    return null;
  }
  if (report.overall !== null && !isProfile(report.overall)) return null;
  const slices = report.slices;
  if (typeof slices !== 'object' || slices === null || Array.isArray(slices)) return null;
  for (const profile of Object.values(slices)) if (!isProfile(profile)) return null;
  return report as unknown as WorkerSketchReport;
}
