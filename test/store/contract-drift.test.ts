// Drift windows (migration 8), on every store kind: profiles merge per endpoint, version, window
// and slice; bad rows or sketches that do not merge refuse the whole call.

import assert from 'node:assert/strict';
import type { Store } from '../../src/store/store.ts';
import { KilnError } from '../../src/core/errors.ts';
import { forEachStore } from '../helpers/store-kinds.ts';
import { NumericSketcher } from '../../src/observability/profile/numeric-sketcher.ts';
import type { DataProfile } from '../../src/observability/profile/data-profile.ts';

function profileOf(values: readonly number[]): DataProfile {
  const x = new NumericSketcher();
  for (const v of values) x.add(v);
  return {
    formatVersion: 1,
    rows: values.length,
    features: { x: x.snapshot() },
    outputs: {},
    createdAt: '2026-01-01T00:00:00.000Z',
  };
}

const base = { endpoint: 'fraud', model: 'fraud', version: 1, windowMs: 60_000 };

forEachStore(
  'drift windows merge per endpoint, version, window and slice; listed oldest first',
  async ({ store }) => {
    const w0 = '2026-01-01T00:00:00.000Z';
    const w1 = '2026-01-01T00:01:00.000Z';
    await store.mergeDriftWindows([
      { ...base, windowStart: w0, slice: null, profile: profileOf([1, 2]) },
      { ...base, windowStart: w0, slice: 'FR', profile: profileOf([1]) },
    ]);
    await store.mergeDriftWindows([
      { ...base, windowStart: w0, slice: null, profile: profileOf([3]) },
      { ...base, windowStart: w1, slice: null, profile: profileOf([4, 5, 6]) },
    ]);
    const overall = await store.listDriftWindows({ endpoint: 'fraud', since: w0 });
    assert.deepEqual(
      overall.map((w) => [w.windowStart, w.slice, w.profile.rows]),
      [
        [w0, null, 3],
        [w1, null, 3],
      ],
    );
    const x = overall[0]!.profile.features.x!;
    assert.equal(x.kind === 'numeric' ? x.moments.mean : 0, 2);
    const all = await store.listDriftWindows({ endpoint: 'fraud', since: w0, slices: 'all' });
    assert.deepEqual(
      all.map((w) => [w.windowStart, w.slice]),
      [
        [w0, null],
        [w0, 'FR'],
        [w1, null],
      ],
    );
    const slices = await store.listDriftWindows({
      endpoint: 'fraud',
      since: w0,
      slices: 'slices',
    });
    assert.deepEqual(
      slices.map((w) => w.slice),
      ['FR'],
    );
    assert.equal((await store.listDriftWindows({ endpoint: 'fraud', since: w1 })).length, 1);
    assert.equal(await store.pruneDriftWindows(w1), 2);
    assert.equal(
      (await store.listDriftWindows({ endpoint: 'fraud', since: w0, slices: 'all' })).length,
      1,
    );
  },
);

forEachStore(
  'a window off its length, an empty slice or sketches that do not merge refuse the call',
  async ({ store }) => {
    const refused = async (
      row: Parameters<Store['mergeDriftWindows']>[0][number],
      pattern: RegExp,
    ) => {
      await assert.rejects(store.mergeDriftWindows([row]), (error: unknown) => {
        assert.ok(error instanceof KilnError);
        assert.equal(error.code, 'KILN_VALIDATION_FAILED');
        assert.match(error.message, pattern);
        return true;
      });
    };
    const w0 = '2026-01-01T00:00:00.000Z';
    await refused(
      { ...base, windowStart: '2026-01-01T00:00:01.000Z', slice: null, profile: profileOf([1]) },
      /not on a window/,
    );
    await refused(
      { ...base, windowStart: w0, slice: '', profile: profileOf([1]) },
      /slice is empty/,
    );
    await store.mergeDriftWindows([
      { ...base, windowStart: w0, slice: null, profile: profileOf([1]) },
    ]);
    const categorical: DataProfile = {
      ...profileOf([]),
      features: {
        x: {
          kind: 'categorical',
          missing: 0,
          count: 1,
          maxCategories: 100,
          categories: { a: 1 },
          other: 0,
        },
      },
    };
    await refused({ ...base, windowStart: w0, slice: null, profile: categorical }, /cannot merge/);
    // The refused call left the stored window as it was.
    const [row] = await store.listDriftWindows({ endpoint: 'fraud', since: w0 });
    assert.equal(row!.profile.rows, 1);
  },
);

forEachStore(
  'two control planes merging into one window concurrently lose no counts; slices list in byte order',
  async (subject) => {
    const { store } = subject;
    const other = await subject.openAnother();
    const w0 = '2026-01-01T00:00:00.000Z';
    const merges = [];
    for (let i = 0; i < 10; i += 1) {
      for (const s of [store, other]) {
        merges.push(
          s.mergeDriftWindows([
            { ...base, windowStart: w0, slice: null, profile: profileOf([i]) },
            { ...base, windowStart: w0, slice: i % 2 === 0 ? 'de' : 'FR', profile: profileOf([i]) },
          ]),
        );
      }
    }
    await Promise.all(merges);
    const all = await store.listDriftWindows({ endpoint: 'fraud', since: w0, slices: 'all' });
    // Byte order, as SQLite compares text: 'FR' (0x46) before 'de' (0x64).
    assert.deepEqual(
      all.map((w) => [w.slice, w.profile.rows]),
      [
        [null, 20],
        ['FR', 10],
        ['de', 10],
      ],
    );
    const x = all[0]!.profile.features.x!;
    // Merge order varies between runs: the mean of 0..9 to within rounding.
    assert.ok(Math.abs((x.kind === 'numeric' ? x.moments.mean : 0) - 4.5) < 1e-9);
  },
);
