// Reference profiles, SQLite only: a database made before migration 7 upgraded in place (the
// store behaviour on every kind: contract-profiles.test.ts).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import { sqliteMigrations } from '../../src/store/sqlite/migrations.ts';
import { NumericSketcher } from '../../src/observability/profile/numeric-sketcher.ts';
import type { DataProfile } from '../../src/observability/profile/data-profile.ts';
import { tempDir } from '../helpers/temp-dir.ts';
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

test('migration 7 upgrades a database made at version 6 and keeps its versions', async () => {
  const dir = await tempDir();
  const path = join(dir, 'kiln.db');
  const old = SqliteStore.open(path, { migrations: sqliteMigrations.slice(0, 6) });
  await old.createModel({ name: 'iris', team: 'default', description: '' });
  await old.createVersion('iris', placeholderVersion());
  await old.close();
  const store = SqliteStore.open(path);
  const stored = await store.setVersionProfile('iris', 1, profileOf(7));
  assert.equal(stored.profile.rows, 1);
  await store.close();
});
