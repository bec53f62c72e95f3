// gc and registration at the same time: a version being registered with a blob the store
// already holds (old, unreferenced, so a gc candidate) either keeps its blob or is refused,
// and never ends up naming a blob gc deleted — within one platform process, and between two
// on the same home (two registries on their own connections to one database here).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { ArtifactStore } from '../../src/registry/artifact-store.ts';
import { Registry } from '../../src/registry/registry.ts';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import type { Store } from '../../src/store/store.ts';
import { tempDir } from '../helpers/temp-dir.ts';
import { until } from '../helpers/until.ts';

const fixture = new URL('../../fixtures/registry/xgb-binary.json', import.meta.url).pathname;

/**
 * A home with an old, never referenced blob (a registration that failed, say: with a grace
 * period of 0 it is a gc candidate), and the database file.
 */
async function homeWithUnreferencedBlob() {
  const dir = await tempDir();
  const artifacts = new ArtifactStore(join(dir, 'artifacts'));
  await artifacts.init();
  const bytes = await readFile(fixture);
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  await artifacts.ingest(Readable.from([bytes]), sha256, { maxBytes: 1e9 });
  const files = [{ path: 'model.json', size: bytes.length, sha256 }];
  return { database: join(dir, 'kiln.db'), artifacts, sha256, files };
}

/** `store`, with createVersion held until `release()`; `inserting()` once one is held. */
function pauseInserts(store: Store) {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let inserting = false;
  const paused = new Proxy(store, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver) as unknown;
      if (property !== 'createVersion' || typeof value !== 'function') return value;
      return async (...args: unknown[]) => {
        inserting = true;
        await released;
        return (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
      };
    },
  });
  return { store: paused, release, inserting: () => inserting };
}

test('a gc started while a version is being registered waits for it and keeps its blob', async (t) => {
  const { database, artifacts, sha256, files } = await homeWithUnreferencedBlob();
  const sqlite = SqliteStore.open(database);
  t.after(() => sqlite.close());
  // The store pauses the registration at its last step, the version's insert.
  const paused = pauseInserts(sqlite);
  const registry = new Registry(paused.store, artifacts);
  await registry.createModel('m');

  const registered = registry.registerVersion('m', { format: 'xgboost', files });
  await until(paused.inserting, 'the registration reaching its insert');
  let gcDone = false;
  const gc = registry.collectGarbage({ dryRun: false, graceSeconds: 0 }).then((result) => {
    gcDone = true;
    return result;
  });
  // gc cannot delete while the registration holds the blob: it has not finished.
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.equal(gcDone, false);
  paused.release();
  const version = await registered;
  const result = await gc;
  assert.equal(version.files[0]?.sha256, sha256);
  assert.equal(result.removedBlobs, 0);
  assert.ok(existsSync(artifacts.blobPath(sha256)));
  // And the version's bytes still verify.
  assert.equal((await registry.verifyVersion('m', version.version)).ok, true);
});

test('a gc by another process on the same home: the registration it raced is refused, not broken', async (t) => {
  const { database, artifacts, files } = await homeWithUnreferencedBlob();
  const first = SqliteStore.open(database);
  const second = SqliteStore.open(database);
  t.after(async () => {
    await first.close();
    await second.close();
  });
  // Process B's registration has checked its blob and is about to record the version...
  const paused = pauseInserts(second);
  const processA = new Registry(first, artifacts);
  const processB = new Registry(paused.store, artifacts);
  await processA.createModel('m');
  const registered = processB.registerVersion('m', { format: 'xgboost', files });
  await until(paused.inserting, 'the registration reaching its insert');
  // ...when process A's gc (its own lock knows nothing of B) deletes the unreferenced blob.
  const gc = await processA.collectGarbage({ dryRun: false, graceSeconds: 0 });
  assert.equal(gc.removedBlobs, 1);
  paused.release();
  await assert.rejects(registered, (error: unknown) => {
    assert.equal((error as { code?: string }).code, 'KILN_BLOB_MISSING');
    return true;
  });
  // Nothing names the deleted blob: the model has no version.
  assert.equal((await first.getModel('m'))?.latestVersion, null);
});
