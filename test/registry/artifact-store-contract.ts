// One set of cases every artifact store must pass, run on the local folder and on an
// S3-compatible server (artifact-store-contract.test.ts): the same content addressing, the
// same upload protocol (hashed while streamed, stored only when the bytes match, size
// limits, nothing visible from a failed upload), the same verification on every read (a
// corrupted blob refused with the same errors, never materialized) and the same gc.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { KilnError } from '../../src/core/errors.ts';
import type { ArtifactStorage } from '../../src/registry/artifact-storage.ts';
import { FakeClock, tempDir } from '../helpers/temp-dir.ts';

export interface StoreUnderTest {
  readonly storage: ArtifactStorage;
  /** Replaces a stored blob's bytes behind the store's back (a damaged disk or bucket). */
  readonly corrupt: (sha256: string, bytes: Buffer) => Promise<void>;
  /** Sets when a stored blob was written (its mtime / LastModified). */
  readonly setWritten: (sha256: string, at: Date) => Promise<void>;
  /** Files of uploads in flight (the local tmp/, the S3 store's spool folder). */
  readonly spooled: () => Promise<string[]>;
}

export type OpenStore = (clock: FakeClock) => Promise<StoreUnderTest>;

const sha = (data: Buffer | string): string => createHash('sha256').update(data).digest('hex');

function code(expected: string) {
  return (error: unknown): boolean => {
    assert.ok(error instanceof KilnError, String(error));
    assert.equal(error.code, expected);
    return true;
  };
}

async function put(storage: ArtifactStorage, data: Buffer): Promise<string> {
  return (await storage.ingest(Readable.from([data]), sha(data), { maxBytes: 1 << 30 })).sha256;
}

export function artifactStoreContract(kind: string, open: OpenStore): void {
  const name = (text: string): string => `[${kind}] ${text}`;

  test(
    name('ingest stores content under its digest once; uploading again repairs it'),
    async () => {
      const { storage, corrupt, spooled } = await open(new FakeClock(Date.now()));
      const data = Buffer.from('hello kiln');
      const first = await storage.ingest(Readable.from([data]), sha(data), {
        maxBytes: 100,
        expectedSize: data.length,
      });
      assert.deepEqual(first, { sha256: sha(data), size: data.length, created: true });
      assert.equal(await storage.has(sha(data)), true);
      assert.equal(await storage.sizeOf(sha(data)), data.length);
      assert.equal(await storage.has('0'.repeat(64)), false);
      assert.equal(await storage.sizeOf('0'.repeat(64)), null);
      const second = await storage.ingest(Readable.from([data]), sha(data), { maxBytes: 100 });
      assert.equal(second.created, false);
      // Damaged (same size, other bytes): the right bytes uploaded again replace it.
      await corrupt(sha(data), Buffer.from('HELLO KILN'));
      await assert.rejects(
        storage.verify([{ path: 'a', size: data.length, sha256: sha(data) }]),
        code('KILN_ARTIFACT_CORRUPT'),
      );
      await storage.ingest(Readable.from([data]), sha(data), { maxBytes: 100 });
      await storage.verify([{ path: 'a', size: data.length, sha256: sha(data) }]);
      assert.deepEqual(await spooled(), []);
    },
  );

  test(
    name('bytes that do not match the declared digest are refused and leave nothing'),
    async () => {
      const { storage, spooled } = await open(new FakeClock(Date.now()));
      await assert.rejects(
        storage.ingest(Readable.from([Buffer.from('abc')]), '0'.repeat(64), { maxBytes: 100 }),
        code('KILN_DIGEST_MISMATCH'),
      );
      await assert.rejects(
        storage.ingest(Readable.from([Buffer.from('abc')]), 'not-a-digest', { maxBytes: 100 }),
        code('KILN_INVALID_DIGEST'),
      );
      assert.equal(await storage.sizeOf(sha('abc')), null);
      assert.equal(await storage.sizeOf('0'.repeat(64)), null);
      assert.deepEqual(await spooled(), []);
    },
  );

  test(
    name('an upload over the limit, broken off or short leaves nothing under its digest'),
    async () => {
      const { storage, spooled } = await open(new FakeClock(Date.now()));
      const chunks = Array.from({ length: 10 }, () => Buffer.alloc(1000, 7));
      await assert.rejects(
        storage.ingest(Readable.from(chunks), sha(Buffer.concat(chunks)), { maxBytes: 5000 }),
        code('KILN_PAYLOAD_TOO_LARGE'),
      );
      assert.equal(await storage.sizeOf(sha(Buffer.concat(chunks))), null);
      const whole = Buffer.alloc(1000, 3);
      const broken = new Readable({
        read() {
          this.push(whole.subarray(0, 100));
          this.destroy(new Error('socket hang up'));
        },
      });
      await assert.rejects(
        storage.ingest(broken, sha(whole), { maxBytes: 10_000, expectedSize: 1000 }),
        code('KILN_UPLOAD_INCOMPLETE'),
      );
      assert.equal(await storage.sizeOf(sha(whole)), null);
      const short = Buffer.alloc(10, 1);
      await assert.rejects(
        storage.ingest(Readable.from([short]), sha(short), { maxBytes: 10_000, expectedSize: 20 }),
        code('KILN_UPLOAD_INCOMPLETE'),
      );
      assert.equal(await storage.sizeOf(sha(short)), null);
      assert.deepEqual(await spooled(), []);
    },
  );

  test(name('materialize copies verified files; range reads see the stored bytes'), async () => {
    const { storage } = await open(new FakeClock(Date.now()));
    const a = Buffer.from('weights-a');
    const b = Buffer.from('config-b');
    await put(storage, a);
    await put(storage, b);
    const files = [
      { path: 'model/weights.bin', size: a.length, sha256: sha(a) },
      { path: 'config.json', size: b.length, sha256: sha(b) },
    ];
    assert.deepEqual(await storage.verify(files), { files: 2, bytes: a.length + b.length });
    const out = join(await tempDir(), 'loaded');
    await storage.materialize(files, out);
    assert.deepEqual(await readFile(join(out, 'model/weights.bin')), a);
    assert.deepEqual(await readFile(join(out, 'config.json')), b);
    const view = storage.artifactFile(files[0]!);
    assert.equal((await view.read(2, 5)).toString(), 'ights');
    assert.equal((await view.read(7, 100)).toString(), '-a');
    assert.equal((await view.read(50, 10)).length, 0);
  });

  test(name('a corrupted blob is refused, set aside and never materialized'), async () => {
    const { storage, corrupt } = await open(new FakeClock(Date.now()));
    const a = Buffer.from('weights-a');
    const b = Buffer.from('config-b');
    await put(storage, a);
    await put(storage, b);
    const files = [
      { path: 'model/weights.bin', size: a.length, sha256: sha(a) },
      { path: 'config.json', size: b.length, sha256: sha(b) },
    ];
    await corrupt(sha(a), Buffer.from('tampered!'));
    const dest = join(await tempDir(), 'loaded');
    await assert.rejects(storage.materialize(files, dest), (error: unknown) => {
      assert.ok(error instanceof KilnError);
      assert.equal(error.code, 'KILN_ARTIFACT_CORRUPT');
      assert.match(error.message, /model\/weights\.bin is corrupt/);
      return true;
    });
    // Nothing of it was left for a runtime to load, not even a partial folder.
    await assert.rejects(readdir(dest), /ENOENT/);
    assert.deepEqual(
      (await readdir(join(dest, '..'))).filter((n) => n.startsWith('loaded')),
      [],
    );
    // Set aside: reported missing (so clients upload it again), and still corrupt to a load.
    assert.equal(await storage.sizeOf(sha(a)), null);
    await assert.rejects(storage.verify(files), code('KILN_ARTIFACT_QUARANTINED'));
    await assert.rejects(storage.materialize(files, dest), code('KILN_ARTIFACT_QUARANTINED'));
    const again = await storage.ingest(Readable.from([a]), sha(a), { maxBytes: 100 });
    assert.equal(again.created, true);
    await storage.materialize(files, dest);
    assert.deepEqual(await readFile(join(dest, 'model/weights.bin')), a);
    await assert.rejects(
      storage.verify([{ path: 'x', size: 1, sha256: '9'.repeat(64) }]),
      code('KILN_ARTIFACT_MISSING'),
    );
  });

  test(
    name('gc removes unreferenced blobs past the grace period, keeps live and young ones'),
    async () => {
      const clock = new FakeClock(Date.now());
      const { storage, setWritten } = await open(clock);
      const keep = Buffer.from('keep');
      const drop = Buffer.from('drop');
      const reused = Buffer.from('reused');
      const fresh = Buffer.from('fresh');
      const old = new Date(clock.now() - 2 * 3600_000);
      for (const data of [keep, drop, reused]) {
        await put(storage, data);
        await setWritten(sha(data), old);
      }
      await put(storage, fresh);
      const live = new Set([sha(keep)]);
      const options = { graceMs: 3600_000 };
      const dry = await storage.gc(live, { ...options, dryRun: true });
      assert.deepEqual(dry, {
        removedBlobs: 2,
        removedBytes: drop.length + reused.length,
        keptBlobs: 2,
        dryRun: true,
      });
      assert.equal(await storage.sizeOf(sha(drop)), drop.length);
      // `reused` was unreferenced when gc listed, and is named by a version by the time it
      // deletes (decided again under the store's lock): kept. The lock's work may be async.
      let lockedWork = 0;
      const real = await storage.gc(live, {
        ...options,
        dryRun: false,
        underLock: async (work) => {
          lockedWork += 1;
          return await work(new Set([sha(keep), sha(reused)]));
        },
      });
      assert.equal(lockedWork, 1);
      assert.deepEqual(real, {
        removedBlobs: 1,
        removedBytes: drop.length,
        keptBlobs: 3,
        dryRun: false,
      });
      assert.equal(await storage.sizeOf(sha(drop)), null);
      for (const data of [keep, reused, fresh])
        assert.equal(await storage.sizeOf(sha(data)), data.length);
      // Two collections racing over the same blobs: neither fails, each blob goes once.
      const more = Array.from({ length: 20 }, (_, i) => Buffer.from(`blob ${i}`));
      for (const data of more) {
        await put(storage, data);
        await setWritten(sha(data), old);
      }
      const both = await Promise.all([
        storage.gc(new Set([sha(keep)]), { ...options, dryRun: false }),
        storage.gc(new Set([sha(keep)]), { ...options, dryRun: false }),
      ]);
      assert.ok(both.every((r) => r.removedBlobs <= 21));
      for (const data of more) assert.equal(await storage.sizeOf(sha(data)), null);
      assert.equal(await storage.sizeOf(sha(fresh)), fresh.length);
    },
  );
}
