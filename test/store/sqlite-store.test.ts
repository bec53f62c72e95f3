// SQLite-only store tests: the file itself (WAL, the migrations list, a schema tampered with
// on disk). What every store does is in the contract suite (contract-registry.test.ts).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import { FakeClock, tempDir } from '../helpers/temp-dir.ts';

async function openStore(): Promise<{ store: SqliteStore; path: string; clock: FakeClock }> {
  const dir = await tempDir();
  const clock = new FakeClock();
  const path = join(dir, 'kiln.db');
  return { store: SqliteStore.open(path, { clock }), path, clock };
}

test('opens in WAL mode with foreign keys and records applied migrations; reopening is a no-op', async () => {
  const { store, path } = await openStore();
  await store.close();
  const again = SqliteStore.open(path);
  await again.close();
  const db = new Database(path, { readonly: true });
  assert.equal(db.pragma('journal_mode', { simple: true }), 'wal');
  const rows = db.prepare('SELECT version, name FROM schema_migrations').all();
  assert.deepEqual(rows, [
    { version: 1, name: 'registry' },
    { version: 2, name: 'endpoints-and-api-keys' },
    { version: 3, name: 'team-limits' },
    { version: 4, name: 'control-tokens-and-audit' },
    { version: 5, name: 'traffic-management' },
    { version: 6, name: 'autoscaling-and-pools' },
    { version: 7, name: 'reference-profiles' },
    { version: 8, name: 'drift-windows' },
    { version: 9, name: 'predictions-and-outcomes' },
    { version: 10, name: 'cost-usage' },
    { version: 11, name: 'slo-alerts' },
    { version: 12, name: 'leader-lease' },
  ]);
  db.close();
});

test('refuses a database whose schema is newer than this code', async () => {
  const { store, path } = await openStore();
  await store.close();
  const db = new Database(path);
  db.prepare(
    "INSERT INTO schema_migrations (version, name, applied_at) VALUES (99, 'future', 'x')",
  ).run();
  db.close();
  assert.throws(() => SqliteStore.open(path), {
    code: 'KILN_STORE_SCHEMA_NEWER',
    message: /schema is at version 99/,
  });
});
