// What only the S3 store has: the startup probe (a bucket missing, refused, or refusing
// writes is a clear error naming it), multipart uploads for large blobs, an upload failing
// at the bucket half-way (nothing visible under the digest), and the registry on SQLite with
// asynchronous blob checks and gc deletes. The shared cases are in artifact-store-contract.ts.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DeleteObjectCommand, ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { KilnError } from '../../src/core/errors.ts';
import { Registry } from '../../src/registry/registry.ts';
import { parseArtifactsUrl } from '../../src/registry/open-artifact-storage.ts';
import {
  S3ArtifactStore,
  s3ClientFor,
  type S3ArtifactLocator,
} from '../../src/registry/s3-artifact-store.ts';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import type { Store } from '../../src/store/store.ts';
import { s3Server } from '../helpers/s3-server.ts';
import { FakeClock, tempDir } from '../helpers/temp-dir.ts';
import { until } from '../helpers/until.ts';

const s3 = await s3Server();
const sha = (data: Buffer | string): string => createHash('sha256').update(data).digest('hex');

function kilnCode(expected: string, message?: RegExp) {
  return (error: unknown): boolean => {
    assert.ok(error instanceof KilnError, String(error));
    assert.equal(error.code, expected, error.message);
    if (message !== undefined) assert.match(error.message, message);
    return true;
  };
}

/**
 * A client whose commands for which `fail` says so are refused the way S3 refuses them
 * (403 AccessDenied); `sent` lists every command it was given.
 */
function refusing(
  locator: S3ArtifactLocator,
  fail: (command: string) => boolean,
  sent: string[] = [],
): S3Client {
  const client = s3ClientFor(locator);
  client.middlewareStack.add(
    (next, context) => async (args) => {
      sent.push(context.commandName ?? '');
      if (fail(context.commandName ?? '')) {
        throw Object.assign(new Error('Access Denied'), {
          name: 'AccessDenied',
          $metadata: { httpStatusCode: 403 },
        });
      }
      return next(args);
    },
    { step: 'initialize' },
  );
  return client;
}

test('a bucket that does not exist, or refuses us, or refuses writes: init names it and why', async () => {
  const missing = { ...(await s3.bucket()), bucket: 'no-such-bucket-here' };
  await assert.rejects(
    new S3ArtifactStore(missing).init(),
    kilnCode(
      'KILN_ARTIFACTS_UNAVAILABLE',
      /s3:\/\/no-such-bucket-here\/kiln\/ cannot be used: bucket no-such-bucket-here does not exist/,
    ),
  );
  const locator = await s3.bucket();
  const denied = refusing(locator, (command) => command === 'HeadBucketCommand');
  await assert.rejects(
    new S3ArtifactStore(locator, { client: denied }).init(),
    kilnCode('KILN_ARTIFACTS_UNAVAILABLE', /access to bucket kiln-test-\d+-\d+ is denied/),
  );
  const readOnly = refusing(locator, (command) => command === 'PutObjectCommand');
  await assert.rejects(
    new S3ArtifactStore(locator, { client: readOnly }).init(),
    kilnCode(
      'KILN_ARTIFACTS_UNAVAILABLE',
      /bucket kiln-test-\d+-\d+ refuses writes \(AccessDenied/,
    ),
  );
  const nowhere = { ...locator, endpoint: 'http://127.0.0.1:9' };
  await assert.rejects(
    new S3ArtifactStore(nowhere, { client: s3ClientFor({ ...nowhere }) }).init(),
    kilnCode('KILN_ARTIFACTS_UNAVAILABLE', /cannot be reached/),
  );
  // A usable bucket: the probe leaves nothing behind.
  await new S3ArtifactStore(locator).init();
});

test('a large blob goes up in parts, and comes back whole and verified', async () => {
  const locator = await s3.bucket();
  const scratchDir = join(await tempDir(), 'spool');
  const storage = new S3ArtifactStore(locator, {
    scratchDir,
    multipartThresholdBytes: 1 << 20,
    partBytes: 5 << 20,
  });
  await storage.init();
  const big = Buffer.alloc((5 << 20) + 12345);
  for (let i = 0; i < big.length; i += 4096) big[i] = i % 251;
  const result = await storage.ingest(Readable.from([big]), sha(big), { maxBytes: 64 << 20 });
  assert.deepEqual(result, { sha256: sha(big), size: big.length, created: true });
  const out = join(await tempDir(), 'loaded');
  await storage.materialize([{ path: 'weights.bin', size: big.length, sha256: sha(big) }], out);
  assert.ok((await readFile(join(out, 'weights.bin'))).equals(big));
  assert.deepEqual(await readdir(scratchDir), []);
});

test('an upload refused by the bucket half-way leaves no object under its digest', async () => {
  const locator = await s3.bucket();
  const scratchDir = join(await tempDir(), 'spool');
  let parts = 0;
  const sent: string[] = [];
  const client = refusing(
    locator,
    (command) => command === 'UploadPartCommand' && ++parts > 1,
    sent,
  );
  const storage = new S3ArtifactStore(locator, {
    scratchDir,
    client,
    multipartThresholdBytes: 1 << 20,
    partBytes: 5 << 20,
  });
  const big = Buffer.alloc((5 << 20) * 2 + 1, 9);
  await assert.rejects(
    storage.ingest(Readable.from([big]), sha(big), { maxBytes: 64 << 20 }),
    kilnCode('KILN_ARTIFACTS_UNAVAILABLE', /AccessDenied/),
  );
  assert.equal(parts, 2);
  assert.equal(await storage.sizeOf(sha(big)), null);
  // The parts already sent are dropped (s3rver lists no multipart uploads to check it by).
  assert.ok(sent.includes('AbortMultipartUploadCommand'), sent.join(', '));
  assert.deepEqual(await readdir(scratchDir), []);
  // And a single PutObject refused: nothing either.
  const small = Buffer.from('small blob');
  const refused = new S3ArtifactStore(locator, {
    scratchDir,
    client: refusing(locator, (command) => command === 'PutObjectCommand'),
  });
  await assert.rejects(
    refused.ingest(Readable.from([small]), sha(small), { maxBytes: 100 }),
    kilnCode('KILN_ARTIFACTS_UNAVAILABLE'),
  );
  assert.equal(await storage.sizeOf(sha(small)), null);
});

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

const fixture = new URL('../../fixtures/registry/xgb-binary.json', import.meta.url).pathname;

test('the registry on SQLite with S3 artifacts: versions check their blobs, gc keeps what is used', async (t) => {
  const dir = await tempDir();
  const clock = new FakeClock(Date.now() + 2 * 3600_000);
  const storage = new S3ArtifactStore(await s3.bucket(), { clock, scratchDir: join(dir, 'spool') });
  await storage.init();
  const sqlite = SqliteStore.open(join(dir, 'kiln.db'), { clock });
  t.after(() => sqlite.close());
  const paused = pauseInserts(sqlite);
  const registry = new Registry(paused.store, storage);
  await registry.createModel('m');
  const bytes = await readFile(fixture);
  await storage.ingest(Readable.from([bytes]), sha(bytes), { maxBytes: 1 << 30 });
  const unused = Buffer.from('an upload no version names');
  await storage.ingest(Readable.from([unused]), sha(unused), { maxBytes: 1 << 30 });
  const files = [{ path: 'model.json', size: bytes.length, sha256: sha(bytes) }];

  // gc runs while a version naming the (old, so far unreferenced) blob is being recorded:
  // it waits for the registration, keeps that blob and removes the other.
  const registered = registry.registerVersion('m', { format: 'xgboost', files });
  await until(paused.inserting, 'the registration reaching its insert');
  let gcDone = false;
  const gc = registry.collectGarbage({ dryRun: false, graceSeconds: 3600 }).then((result) => {
    gcDone = true;
    return result;
  });
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(gcDone, false);
  paused.release();
  const version = await registered;
  const result = await gc;
  assert.deepEqual(result, {
    removedBlobs: 1,
    removedBytes: unused.length,
    keptBlobs: 1,
    dryRun: false,
  });
  assert.equal(await storage.sizeOf(sha(unused)), null);
  assert.equal((await registry.verifyVersion('m', version.version)).ok, true);
  const out = join(dir, 'loaded');
  await registry.loadVersion('m', version.version, out);
  assert.ok((await readFile(join(out, 'model.json'))).equals(bytes));

  // A blob gone from the bucket between the checks and the insert: the version is refused
  // by the store's check (asynchronous here), not recorded naming a missing blob.
  const second = pauseInserts(sqlite);
  const racing = new Registry(second.store, storage);
  const again = racing.registerVersion('m', { format: 'xgboost', files });
  await until(second.inserting, 'the second registration reaching its insert');
  await s3.client.send(
    new DeleteObjectCommand({ Bucket: storage.locator.bucket, Key: storage.blobKey(sha(bytes)) }),
  );
  second.release();
  await assert.rejects(again, kilnCode('KILN_BLOB_MISSING'));
  assert.equal((await sqlite.getModel('m'))?.latestVersion, version.version);
});

/** The problem parseArtifactsUrl reports (a string), failing on a locator. */
function problemOf(parsed: ReturnType<typeof parseArtifactsUrl>): string {
  if (typeof parsed !== 'string') assert.fail(`expected a problem, got ${JSON.stringify(parsed)}`);
  return parsed;
}

test('--artifacts / KILN_ARTIFACTS_URL: s3 URLs, endpoints, region, and what is refused', () => {
  const env = { AWS_REGION: 'eu-west-1', AWS_ENDPOINT_URL: 'http://minio:9000/' };
  assert.deepEqual(parseArtifactsUrl('s3://models/kiln/prod', { env }), {
    kind: 's3',
    bucket: 'models',
    prefix: 'kiln/prod/',
    endpoint: 'http://minio:9000',
    region: 'eu-west-1',
    forcePathStyle: true,
  });
  assert.deepEqual(parseArtifactsUrl('s3://models', { env: {} }), {
    kind: 's3',
    bucket: 'models',
    prefix: '',
    endpoint: null,
    region: null,
    forcePathStyle: false,
  });
  const flag = parseArtifactsUrl('s3://models/', { endpoint: 'https://s3.local', env });
  assert.equal(
    typeof flag === 'object' && flag.kind === 's3' ? flag.endpoint : '',
    'https://s3.local',
  );
  assert.deepEqual(parseArtifactsUrl('/srv/kiln/artifacts', { env }), {
    kind: 'local',
    root: '/srv/kiln/artifacts',
  });
  assert.match(
    problemOf(parseArtifactsUrl('s3://Bad_Bucket/x', { env })),
    /not a valid bucket name/,
  );
  assert.match(problemOf(parseArtifactsUrl('gs://bucket', { env })), /expected s3:\/\/BUCKET/);
  assert.match(
    problemOf(parseArtifactsUrl('s3://models', { endpoint: 'minio:9000', env })),
    /invalid endpoint "minio:9000"/,
  );
});

test('the startup probe leaves nothing in the bucket', async () => {
  const locator = await s3.bucket('');
  await new S3ArtifactStore(locator).init();
  const listed = await s3.client.send(new ListObjectsV2Command({ Bucket: locator.bucket }));
  assert.deepEqual(listed.Contents ?? [], []);
});
