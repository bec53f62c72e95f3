// Reference profiles (migration 7), on every store kind: one per version, replaced by a later
// set, refused for a version that does not exist, hidden once the version is deleted.

import assert from 'node:assert/strict';
import { KilnError } from '../../src/core/errors.ts';
import { NumericSketcher } from '../../src/observability/profile/numeric-sketcher.ts';
import type { DataProfile } from '../../src/observability/profile/data-profile.ts';
import { forEachStore } from '../helpers/store-kinds.ts';
import { placeholderVersion } from '../helpers/stored-version.ts';

function profileOf(...values: number[]): DataProfile {
  const sketcher = new NumericSketcher();
  for (const value of values) sketcher.add(value);
  return {
    formatVersion: 1,
    rows: values.length,
    features: { x: sketcher.snapshot() },
    outputs: {},
    createdAt: '2026-01-01T00:00:00.000Z',
  };
}

function kilnCode(code: string) {
  return (error: unknown): boolean => {
    assert.ok(error instanceof KilnError, `expected KilnError, got ${String(error)}`);
    assert.equal(error.code, code, error.message);
    return true;
  };
}

forEachStore(
  'a version keeps one profile: set, read back, replaced, hidden after the version is deleted',
  async ({ store, clock }) => {
    await store.createModel({ name: 'iris', team: 'default', description: '' });
    await store.createVersion('iris', placeholderVersion());
    await store.createVersion('iris', placeholderVersion());
    assert.equal(await store.getVersionProfile('iris', 1), null);

    const first = await store.setVersionProfile('iris', 1, profileOf(1, 2, 3));
    assert.equal(first.model, 'iris');
    assert.equal(first.version, 1);
    assert.deepEqual(first.profile, profileOf(1, 2, 3));
    assert.deepEqual(await store.getVersionProfile('iris', 1), first);
    assert.equal(await store.getVersionProfile('iris', 2), null);

    clock.advance(60_000);
    const second = await store.setVersionProfile('iris', 1, profileOf(4, 5));
    assert.equal(second.profile.rows, 2);
    assert.notEqual(second.storedAt, first.storedAt);
    assert.deepEqual((await store.getVersionProfile('iris', 1))?.profile, profileOf(4, 5));

    await assert.rejects(
      store.setVersionProfile('iris', 9, profileOf(1)),
      kilnCode('KILN_VERSION_NOT_FOUND'),
    );
    await assert.rejects(
      store.setVersionProfile('nope', 1, profileOf(1)),
      kilnCode('KILN_VERSION_NOT_FOUND'),
    );
    await store.deleteVersion('iris', 1);
    assert.equal(await store.getVersionProfile('iris', 1), null);
    await assert.rejects(
      store.setVersionProfile('iris', 1, profileOf(1)),
      kilnCode('KILN_VERSION_NOT_FOUND'),
    );
  },
);
