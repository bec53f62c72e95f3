import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readdir, readFile, writeFile, utimes } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { ArtifactStore } from '../../src/registry/artifact-store.ts';
import {
  artifactPathProblem,
  checkArtifactPaths,
  safeJoin,
} from '../../src/registry/artifact-paths.ts';
import { KilnError } from '../../src/core/errors.ts';
import { FakeClock, tempDir } from '../helpers/temp-dir.ts';

const sha = (data: Buffer | string): string => createHash('sha256').update(data).digest('hex');

async function newStore(clock = new FakeClock(Date.now())): Promise<ArtifactStore> {
  const store = new ArtifactStore(join(await tempDir(), 'artifacts'), clock);
  await store.init();
  return store;
}

function code(expected: string) {
  return (error: unknown): boolean => {
    assert.ok(error instanceof KilnError, String(error));
    assert.equal(error.code, expected);
    return true;
  };
}

async function tmpFiles(store: ArtifactStore): Promise<string[]> {
  return readdir(join(store.root, 'tmp'));
}

test('ingest stores content under its digest once, atomically', async () => {
  const store = await newStore();
  const data = Buffer.from('hello kiln');
  const first = await store.ingest(Readable.from([data]), sha(data), {
    maxBytes: 100,
    expectedSize: data.length,
  });
  assert.deepEqual(first, { sha256: sha(data), size: data.length, created: true });
  const second = await store.ingest(Readable.from([data]), sha(data), { maxBytes: 100 });
  assert.equal(second.created, false);
  assert.deepEqual(await readFile(store.blobPath(sha(data))), data);
  assert.deepEqual(await tmpFiles(store), []);
  assert.equal(await store.sizeOf(sha(data)), data.length);
  assert.equal(await store.sizeOf('0'.repeat(64)), null);
  // Damaged on disk (same size): uploading the right bytes again replaces it.
  await writeFile(store.blobPath(sha(data)), 'HELLO KILN');
  const repaired = await store.ingest(Readable.from([data]), sha(data), { maxBytes: 100 });
  assert.equal(repaired.created, false);
  assert.deepEqual(await readFile(store.blobPath(sha(data))), data);
  assert.deepEqual(await tmpFiles(store), []);
});

test('bytes that do not match the declared digest are refused and leave nothing', async () => {
  const store = await newStore();
  await assert.rejects(
    store.ingest(Readable.from([Buffer.from('abc')]), '0'.repeat(64), { maxBytes: 100 }),
    code('KILN_DIGEST_MISMATCH'),
  );
  assert.deepEqual(await tmpFiles(store), []);
  assert.equal(await store.sizeOf(sha('abc')), null);
});

test('an upload over the byte limit is refused mid-stream and leaves nothing', async () => {
  const store = await newStore();
  const chunks = Array.from({ length: 10 }, () => Buffer.alloc(1000, 7));
  await assert.rejects(
    store.ingest(Readable.from(chunks), null, { maxBytes: 5000 }),
    code('KILN_PAYLOAD_TOO_LARGE'),
  );
  assert.deepEqual(await tmpFiles(store), []);
});

test('a stream that breaks off, or ends short of its announced size, leaves nothing', async () => {
  const store = await newStore();
  const broken = new Readable({
    read() {
      this.push(Buffer.alloc(100));
      this.destroy(new Error('socket hang up'));
    },
  });
  await assert.rejects(
    store.ingest(broken, null, { maxBytes: 10_000, expectedSize: 1000 }),
    code('KILN_UPLOAD_INCOMPLETE'),
  );
  const short = Buffer.alloc(10, 1);
  await assert.rejects(
    store.ingest(Readable.from([short]), sha(short), { maxBytes: 10_000, expectedSize: 20 }),
    code('KILN_UPLOAD_INCOMPLETE'),
  );
  assert.deepEqual(await tmpFiles(store), []);
  assert.equal(await store.sizeOf(sha(short)), null);
});

test('verify and materialize re-hash bytes and refuse a blob corrupted on disk', async () => {
  const store = await newStore();
  const a = Buffer.from('weights-a');
  const b = Buffer.from('config-b');
  await store.ingest(Readable.from([a]), null, { maxBytes: 100 });
  await store.ingest(Readable.from([b]), null, { maxBytes: 100 });
  const files = [
    { path: 'model/weights.bin', size: a.length, sha256: sha(a) },
    { path: 'config.json', size: b.length, sha256: sha(b) },
  ];
  assert.deepEqual(await store.verify(files), { files: 2, bytes: a.length + b.length });
  const out = join(await tempDir(), 'loaded');
  await store.materialize(files, out);
  assert.deepEqual(await readFile(join(out, 'model/weights.bin')), a);

  await writeFile(store.blobPath(sha(a)), 'tampered');
  await assert.rejects(store.verify(files), (error: unknown) => {
    assert.ok(error instanceof KilnError);
    assert.equal(error.code, 'KILN_ARTIFACT_CORRUPT');
    assert.match(error.message, /model\/weights\.bin is corrupt/);
    return true;
  });
  // The damaged blob is set aside: the store reports it missing, so clients upload it again,
  // and a later load still says it is corrupt (quarantined), not merely missing.
  assert.equal(await store.sizeOf(sha(a)), null);
  assert.equal((await readdir(join(store.root, 'quarantine'))).length, 1);
  const out2 = join(await tempDir(), 'loaded');
  await assert.rejects(store.materialize(files, out2), (error: unknown) => {
    assert.ok(error instanceof KilnError);
    assert.equal(error.code, 'KILN_ARTIFACT_QUARANTINED');
    assert.match(error.message, /model\/weights\.bin is corrupt on disk/);
    return true;
  });
  await assert.rejects(store.verify(files), code('KILN_ARTIFACT_QUARANTINED'));
  await assert.rejects(readdir(out2), /ENOENT/);
  const again = await store.ingest(Readable.from([a]), sha(a), { maxBytes: 100 });
  assert.equal(again.created, true);
  await store.verify(files);
  // Same size, other bytes, found by materialize this time: also set aside.
  await writeFile(store.blobPath(sha(b)), 'config-B');
  await assert.rejects(store.materialize(files, out2), code('KILN_ARTIFACT_CORRUPT'));
  assert.equal(await store.sizeOf(sha(b)), null);
  await assert.rejects(
    store.verify([{ path: 'x', size: 1, sha256: '9'.repeat(64) }]),
    code('KILN_ARTIFACT_MISSING'),
  );
});

test('gc removes unreferenced blobs older than the grace period only', async () => {
  const clock = new FakeClock(Date.now());
  const store = await newStore(clock);
  const keep = Buffer.from('keep');
  const drop = Buffer.from('drop');
  const fresh = Buffer.from('fresh');
  for (const d of [keep, drop]) await store.ingest(Readable.from([d]), null, { maxBytes: 100 });
  const old = new Date(clock.now() - 2 * 3600_000);
  await utimes(store.blobPath(sha(keep)), old, old);
  await utimes(store.blobPath(sha(drop)), old, old);
  await store.ingest(Readable.from([fresh]), null, { maxBytes: 100 });

  const live = new Set([sha(keep)]);
  const dry = await store.gc(live, { dryRun: true, graceMs: 3600_000 });
  assert.deepEqual(dry, { removedBlobs: 1, removedBytes: drop.length, keptBlobs: 2, dryRun: true });
  assert.equal(await store.sizeOf(sha(drop)), drop.length);
  const real = await store.gc(live, { dryRun: false, graceMs: 3600_000 });
  assert.equal(real.removedBlobs, 1);
  assert.equal(await store.sizeOf(sha(drop)), null);
  assert.equal(await store.sizeOf(sha(keep)), keep.length);
  assert.equal(await store.sizeOf(sha(fresh)), fresh.length);
});

test('gc keeps an old blob a version started using meanwhile; two gcs at once do not fail', async () => {
  const clock = new FakeClock(Date.now());
  const store = await newStore(clock);
  const blobs = Array.from({ length: 50 }, (_, i) => Buffer.from(`blob ${i}`));
  const old = new Date(clock.now() - 2 * 3600_000);
  for (const b of blobs) {
    await store.ingest(Readable.from([b]), null, { maxBytes: 100 });
    await utimes(store.blobPath(sha(b)), old, old);
  }
  // Unreferenced when gc looked, referenced by the time it deletes (a registration reused
  // the blob without uploading it again).
  const reused = sha(blobs[0]!);
  const result = await store.gc(new Set(), {
    dryRun: false,
    graceMs: 3600_000,
    underLock: (work) => Promise.resolve(work(new Set([reused]))),
  });
  assert.equal(result.removedBlobs, 49);
  assert.equal(await store.sizeOf(reused), blobs[0]!.length);
  // Two collections racing over the same files: neither throws, each file goes once.
  for (const b of blobs.slice(1)) await store.ingest(Readable.from([b]), null, { maxBytes: 100 });
  for (const b of blobs.slice(1)) await utimes(store.blobPath(sha(b)), old, old);
  const both = await Promise.all([
    store.gc(new Set([reused]), { dryRun: false, graceMs: 3600_000 }),
    store.gc(new Set([reused]), { dryRun: false, graceMs: 3600_000 }),
  ]);
  assert.ok(both.every((r) => r.removedBlobs <= 49));
  for (const b of blobs.slice(1)) assert.equal(await store.sizeOf(sha(b)), null);
});

test('artifact paths: relative POSIX only', () => {
  for (const bad of [
    '../etc/passwd',
    'a/../../b',
    '/abs',
    'C:/x',
    'a\\b',
    '',
    'a//b',
    './a',
    'a/./b',
    'nul\0',
  ]) {
    assert.notEqual(artifactPathProblem(bad), null, bad);
  }
  for (const good of ['model.onnx', 'sub/dir/file.bin', '.hidden', 'a..b']) {
    assert.equal(artifactPathProblem(good), null, good);
  }
  assert.throws(() => checkArtifactPaths(['a', 'a']), /listed twice/);
  // A file that another path needs as a folder, in either order, at any depth.
  assert.throws(
    () => checkArtifactPaths(['model.json', 'model.json/x']),
    /needs it to be a folder/,
  );
  assert.throws(() => checkArtifactPaths(['a/b/c', 'a/b']), /"a\/b" needs|"a\/b\/c"/);
  checkArtifactPaths(['a/b', 'a/c', 'ab/c', 'a.json']);
  assert.throws(() => safeJoin('/tmp/x', '../y'), code('KILN_INVALID_PATH'));
  assert.equal(safeJoin('/tmp/x', 'a/b'), '/tmp/x/a/b');
});

test('materialize copies a blob past the one-read size by streaming it, re-hashed the same way', async () => {
  const store = await newStore();
  const big = Buffer.alloc((16 << 20) + 1, 7);
  await store.ingest(Readable.from([big]), null, { maxBytes: 32 << 20 });
  const files = [{ path: 'big.bin', size: big.length, sha256: sha(big) }];
  const out = join(await tempDir(), 'loaded');
  await store.materialize(files, out);
  assert.ok((await readFile(join(out, 'big.bin'))).equals(big));
  big[0] = 8;
  await writeFile(store.blobPath(files[0]!.sha256), big);
  const out2 = join(await tempDir(), 'loaded');
  await assert.rejects(store.materialize(files, out2), code('KILN_ARTIFACT_CORRUPT'));
  await assert.rejects(readdir(out2), /ENOENT/);
});
