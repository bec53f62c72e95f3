import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import { KilnError } from '../../src/core/errors.ts';
import { FakeClock, tempDir } from '../helpers/temp-dir.ts';
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

async function openStore(): Promise<SqliteStore> {
  const dir = await tempDir();
  return SqliteStore.open(join(dir, 'kiln.db'), { clock: new FakeClock() });
}

const base = { endpoint: 'fraud', model: 'fraud', version: 1, windowMs: 60_000 };

test('drift windows merge per endpoint, version, window and slice; listed oldest first', async () => {
  const store = await openStore();
  try {
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
    const slices = await store.listDriftWindows({ endpoint: 'fraud', since: w0, slices: 'slices' });
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
  } finally {
    await store.close();
  }
});

test('a window off its length, an empty slice or sketches that do not merge refuse the call', async () => {
  const store = await openStore();
  try {
    const refused = async (
      row: Parameters<SqliteStore['mergeDriftWindows']>[0][number],
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
  } finally {
    await store.close();
  }
});
