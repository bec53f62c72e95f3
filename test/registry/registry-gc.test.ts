// gc and registration at the same time: a version being registered with a blob the store
// already holds (old, unreferenced, so a gc candidate) either keeps its blob or is refused,
// and never ends up naming a blob gc deleted.

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

test('a gc started while a version is being registered waits for it and keeps its blob', async (t) => {
  const dir = await tempDir();
  const sqlite = SqliteStore.open(join(dir, 'kiln.db'));
  t.after(() => sqlite.close());
  const artifacts = new ArtifactStore(join(dir, 'artifacts'));
  await artifacts.init();
  const bytes = await readFile(fixture);
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  // Uploaded earlier and never referenced (a registration that failed, say): with a grace
  // period of 0 it is a gc candidate.
  await artifacts.ingest(Readable.from([bytes]), sha256, { maxBytes: 1e9 });

  // The store pauses the registration at its last step, the version's insert.
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let inserting = false;
  const store = new Proxy(sqlite, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver) as unknown;
      if (property !== 'createVersion' || typeof value !== 'function') return value;
      return async (...args: unknown[]) => {
        inserting = true;
        await released;
        return (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
      };
    },
  }) as Store;
  const registry = new Registry(store, artifacts);
  await registry.createModel('m');

  const registered = registry.registerVersion('m', {
    format: 'xgboost',
    files: [{ path: 'model.json', size: bytes.length, sha256 }],
  });
  await until(() => inserting, 'the registration reaching its insert');
  let gcDone = false;
  const gc = registry.collectGarbage({ dryRun: false, graceSeconds: 0 }).then((result) => {
    gcDone = true;
    return result;
  });
  // gc cannot delete while the registration holds the blob: it has not finished.
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.equal(gcDone, false);
  release();
  const version = await registered;
  const result = await gc;
  assert.equal(version.files[0]?.sha256, sha256);
  assert.equal(result.removedBlobs, 0);
  assert.ok(existsSync(artifacts.blobPath(sha256)));
  // And the version's bytes still verify.
  assert.equal((await registry.verifyVersion('m', version.version)).ok, true);
});
