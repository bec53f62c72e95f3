// The drift ceiling's input from the drift part's latest round (docs/drift.md: per version,
// per group — overall and each slice — per feature and output, PSI against the reference
// profile and against the previous window). Read structurally from an unknown value, so the
// SLO part depends on the shape, not the drift module: anything not in that shape is skipped.
// Comparisons the drift part marks `insufficient` (too few values) are skipped too, so a
// small slice's noise does not page anyone. The reading's PSI is the higher of the two.

import type { DriftReading } from './slo-evaluation.ts';

function record(value: unknown): Record<string, unknown> | null {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : null;
}

function list(value: unknown): readonly unknown[] {
  return Array.isArray(value) ? value : [];
}

function psiOf(comparison: unknown): number | null {
  const fields = record(comparison);
  if (fields === null || fields.status === 'insufficient') return null;
  return typeof fields.psi === 'number' && Number.isFinite(fields.psi) ? fields.psi : null;
}

/** `VersionDrift[]` (drift-report.ts) → one reading per version, group and item with a PSI. */
export function driftReadingsOf(latest: unknown): DriftReading[] {
  const readings: DriftReading[] = [];
  for (const entry of list(latest)) {
    const version = record(entry);
    if (version === null || typeof version.version !== 'number') continue;
    for (const groupEntry of list(version.groups)) {
      const group = record(groupEntry);
      if (group === null) continue;
      const slice = typeof group.slice === 'string' ? ` (slice ${group.slice})` : '';
      for (const itemEntry of list(group.items)) {
        const item = record(itemEntry);
        if (item === null || typeof item.name !== 'string') continue;
        const psis = [psiOf(item.vsReference), psiOf(item.vsPrevious)].filter(
          (psi): psi is number => psi !== null,
        );
        if (psis.length === 0) continue;
        const kind = item.kind === 'output' ? 'output' : 'feature';
        readings.push({
          version: version.version,
          name: `${kind} ${item.name}${slice}`,
          psi: Math.max(...psis),
        });
      }
    }
  }
  return readings;
}
