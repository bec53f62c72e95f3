import { test } from 'node:test';
import assert from 'node:assert/strict';
import { NumericSketcher } from '../../../src/observability/profile/numeric-sketcher.ts';
import { CategoricalSketcher } from '../../../src/observability/profile/categorical-sketcher.ts';
import type { DataProfile } from '../../../src/observability/profile/data-profile.ts';
import { compareSketches, driftReport } from '../../../src/observability/drift/drift-report.ts';
import { defaultDriftThresholds } from '../../../src/observability/drift/drift-thresholds.ts';
import type { DriftWindowRecord } from '../../../src/store/drift-records.ts';

/** A numeric sketch of 0, 1, …, n-1 shifted by `shift`. */
function uniform(n: number, shift = 0) {
  const sketcher = new NumericSketcher();
  for (let i = 0; i < n; i++) sketcher.add(i + shift);
  return sketcher.snapshot();
}

function profile(n: number, shift = 0): DataProfile {
  return {
    formatVersion: 1,
    rows: n,
    features: { x: uniform(n, shift) },
    outputs: {},
    createdAt: '2026-01-01T00:00:00.000Z',
  };
}

test('statuses follow the thresholds: drift, warn, ok and insufficient', () => {
  // Identical distributions: PSI 0, D 0.
  const same = compareSketches(uniform(1000), uniform(1000));
  assert.equal(same.status, 'ok');
  assert.ok(same.psi! < 1e-9);
  assert.equal(same.ksStatistic, 0);
  // Half the mass moved past the reference's range: PSI far above 0.25.
  const moved = compareSketches(uniform(1000), uniform(1000, 500));
  assert.equal(moved.status, 'drift');
  assert.ok(moved.ksStatistic! > 0.45);
  // A tenth moved past the reference's range: its lowest decile empties, PSI ~0.77.
  const tenth = compareSketches(uniform(1000), uniform(1000, 100));
  assert.equal(tenth.status, 'drift');
  // Between the warn and alert lines (alert raised, KS's D floor out of reach): warn.
  const lenient = { ...defaultDriftThresholds, psiAlert: 10, ksMinStatistic: 1 };
  assert.equal(compareSketches(uniform(1000), uniform(1000, 100), lenient).status, 'warn');
  // A small shift: PSI ~0.02, D ~0.03, not significant: ok.
  const small = compareSketches(uniform(1000), uniform(1000, 30));
  assert.equal(small.status, 'ok', `PSI ${small.psi}, p ${small.ksPValue}`);
  // Too few values on one side: statistics shown, never flagged.
  const few = compareSketches(uniform(1000), uniform(20, 500));
  assert.equal(few.status, 'insufficient');
  assert.ok(few.psi! > 0.25);
  // Categorical: PSI only, no KS.
  const a = new CategoricalSketcher();
  const b = new CategoricalSketcher();
  for (let i = 0; i < 200; i++) {
    a.add(i % 2 === 0 ? 'fr' : 'de');
    b.add(i % 10 === 0 ? 'fr' : 'de');
  }
  const categorical = compareSketches(a.snapshot(), b.snapshot());
  assert.equal(categorical.ksStatistic, null);
  assert.equal(categorical.status, 'drift');
  // Sketches of different kinds cannot be compared: a problem, not a number.
  const mismatch = compareSketches(uniform(100), a.snapshot());
  assert.equal(mismatch.psi, null);
  assert.match(mismatch.problem ?? '', /numeric|categorical/);
});

test('the report merges windows against the reference and compares the last two windows', () => {
  const window = (start: string, slice: string | null, p: DataProfile): DriftWindowRecord => ({
    endpoint: 'e',
    model: 'm',
    version: 1,
    windowStart: start,
    windowMs: 60_000,
    slice,
    profile: p,
    updatedAt: start,
  });
  const windows = [
    window('2026-01-01T00:00:00.000Z', null, profile(500)),
    window('2026-01-01T00:00:00.000Z', 'a', profile(500)),
    window('2026-01-01T00:01:00.000Z', null, profile(500, 400)),
  ];
  const withoutSlices = driftReport({ windows, reference: () => profile(1000), bySlice: false });
  assert.equal(withoutSlices.length, 1);
  const [overall] = withoutSlices[0]!.groups;
  assert.equal(withoutSlices[0]!.groups.length, 1);
  assert.equal(overall!.rows, 1000);
  assert.equal(overall!.windows, 2);
  assert.equal(overall!.latestWindowStart, '2026-01-01T00:01:00.000Z');
  assert.equal(overall!.previousWindowStart, '2026-01-01T00:00:00.000Z');
  const x = overall!.items[0]!;
  assert.equal(x.vsReference!.currentCount, 1000);
  assert.equal(x.vsPrevious!.status, 'drift');
  assert.equal(x.flagged, true);
  // Slices too; a slice with one window has no comparison with a previous one.
  const bySlice = driftReport({ windows, reference: () => null, bySlice: true });
  const groups = bySlice[0]!.groups;
  assert.deepEqual(
    groups.map((g) => g.slice),
    [null, 'a'],
  );
  assert.equal(bySlice[0]!.hasReference, false);
  const sliceItem = groups[1]!.items[0]!;
  assert.equal(sliceItem.vsReference, null);
  assert.equal(sliceItem.vsPrevious, null);
  assert.equal(sliceItem.status, 'ok');
});
