// Content-addressed artifact store on local disk.
//
//   <root>/blobs/sha256/ab/abcdef…   one file per distinct content, named by its sha256
//   <root>/tmp/<random>.part         uploads in flight; renamed into blobs/ only when the
//                                    bytes hash to the declared digest
//
// Writes are atomic (temp + fsync + rename), so a blob path either holds the full verified
// content or does not exist. Identical content is stored once. Every read for loading
// re-hashes the bytes and refuses a mismatch: the disk is not trusted after the fact.

import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream, existsSync, rmSync } from 'node:fs';
import { mkdir, open, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { kilnError, KilnError } from '../core/errors.ts';
import { systemClock, type Clock } from '../core/clock.ts';
import type { ManifestFile } from './manifest.ts';
import type { ArtifactFile } from './formats/artifact-file.ts';
import type {
  ArtifactLocator,
  ArtifactStorage,
  GcOptions,
  GcResult,
  IngestOptions,
  IngestResult,
} from './artifact-storage.ts';
import { HashingCounter } from './hashing-counter.ts';
import { materializeStaged } from './staged-folder.ts';

const digestPattern = /^[0-9a-f]{64}$/;

export function isSha256(value: string): boolean {
  return digestPattern.test(value);
}

export type { GcResult, IngestOptions, IngestResult } from './artifact-storage.ts';

/** Blobs up to this size are copied in one read and one write (copySmall). */
const smallCopyBytes = 16 << 20;

export class ArtifactStore implements ArtifactStorage {
  readonly root: string;
  readonly locator: ArtifactLocator;
  readonly description: string;
  private readonly clock: Clock;

  constructor(root: string, clock: Clock = systemClock) {
    this.root = root;
    this.locator = { kind: 'local', root };
    this.description = root;
    this.clock = clock;
  }

  async init(): Promise<void> {
    await mkdir(join(this.root, 'blobs', 'sha256'), { recursive: true });
    await mkdir(join(this.root, 'tmp'), { recursive: true });
  }

  blobPath(sha256: string): string {
    if (!isSha256(sha256)) throw kilnError('KILN_INVALID_DIGEST', { digest: sha256 });
    return join(this.root, 'blobs', 'sha256', sha256.slice(0, 2), sha256);
  }

  /** Whether the blob is stored (synchronous: for checks inside a store transaction). */
  hasSync(sha256: string): boolean {
    return existsSync(this.blobPath(sha256));
  }

  has(sha256: string): boolean {
    return this.hasSync(sha256);
  }

  /** Size of the stored blob, or null if absent. */
  async sizeOf(sha256: string): Promise<number | null> {
    try {
      return (await stat(this.blobPath(sha256))).size;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw error;
    }
  }

  /**
   * Streams `source` into the store. With `declared`, the bytes must hash to it; without, the
   * digest is whatever they hash to (local registration). Nothing remains of a failed ingest.
   */
  async ingest(
    source: Readable,
    declared: string | null,
    options: IngestOptions,
  ): Promise<IngestResult> {
    if (declared !== null && !isSha256(declared))
      throw kilnError('KILN_INVALID_DIGEST', { digest: declared });
    const tmp = join(this.root, 'tmp', `${randomBytes(12).toString('hex')}.part`);
    const counter = new HashingCounter(options.maxBytes);
    const out = createWriteStream(tmp, { flags: 'wx' });
    try {
      await pipeline(source, counter, out);
    } catch (error) {
      await rm(tmp, { force: true });
      if (error instanceof KilnError) throw error;
      throw kilnError('KILN_UPLOAD_INCOMPLETE', {
        received: counter.bytes,
        expected: options.expectedSize ?? 'the announced number of',
      });
    }
    try {
      if (options.expectedSize !== undefined && counter.bytes !== options.expectedSize) {
        throw kilnError('KILN_UPLOAD_INCOMPLETE', {
          received: counter.bytes,
          expected: options.expectedSize,
        });
      }
      const actual = counter.hash.digest('hex');
      if (declared !== null && actual !== declared) {
        throw kilnError('KILN_DIGEST_MISMATCH', { actual, expected: declared });
      }
      const handle = await open(tmp, 'r');
      await handle.sync();
      await handle.close();
      const target = this.blobPath(actual);
      // Already stored: the verified bytes replace it all the same (atomically), so uploading
      // a blob again repairs one damaged on disk (same size, other bytes).
      const existed = (await this.sizeOf(actual)) !== null;
      await mkdir(dirname(target), { recursive: true });
      await rename(tmp, target);
      return { sha256: actual, size: counter.bytes, created: !existed };
    } catch (error) {
      await rm(tmp, { force: true });
      throw error;
    }
  }

  /**
   * A range-readable view of a stored blob for format checks at registration. It trusts the
   * bytes verified at ingest; loading goes through verify()/materialize() instead.
   */
  artifactFile(file: ManifestFile): ArtifactFile {
    const path = this.blobPath(file.sha256);
    return {
      path: file.path,
      size: file.size,
      async read(offset: number, length: number): Promise<Buffer> {
        const handle = await open(path, 'r');
        try {
          const buffer = Buffer.alloc(Math.max(0, Math.min(length, file.size - offset)));
          const { bytesRead } = await handle.read(buffer, 0, buffer.length, offset);
          return buffer.subarray(0, bytesRead);
        } finally {
          await handle.close();
        }
      },
    };
  }

  /** Re-hashes one blob; throws KILN_ARTIFACT_MISSING / _QUARANTINED / _CORRUPT. */
  async verifyFile(file: ManifestFile): Promise<void> {
    const path = this.blobPath(file.sha256);
    const hash = createHash('sha256');
    try {
      await pipeline(createReadStream(path), hash);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw await this.missing(file);
      throw error;
    }
    const actual = hash.digest('hex');
    if (actual !== file.sha256) {
      await this.quarantine(file.sha256);
      throw kilnError('KILN_ARTIFACT_CORRUPT', { path: file.path, expected: file.sha256, actual });
    }
  }

  /**
   * Moves a blob whose bytes no longer hash to its name out of the store (kept under
   * quarantine/ for inspection): the store then reports it missing, so the next upload of
   * the right bytes (`kiln` uploads what the server lacks) puts it back.
   */
  private async quarantine(sha256: string): Promise<void> {
    const folder = join(this.root, 'quarantine');
    await mkdir(folder, { recursive: true });
    await rename(this.blobPath(sha256), join(folder, `${sha256}.${Date.now()}`)).catch(
      () => undefined, // already moved by a concurrent check
    );
  }

  /**
   * Why a blob is not there: set aside as corrupt by an earlier check (still corrupt, as far
   * as anyone loading it is concerned, until the right bytes are uploaded), or just missing.
   */
  private async missing(file: ManifestFile): Promise<KilnError> {
    const quarantined = await readdir(join(this.root, 'quarantine')).catch(() => [] as string[]);
    return quarantined.some((name) => name.startsWith(`${file.sha256}.`))
      ? kilnError('KILN_ARTIFACT_QUARANTINED', { path: file.path, digest: file.sha256 })
      : kilnError('KILN_ARTIFACT_MISSING', { path: file.path, digest: file.sha256 });
  }

  async verify(files: readonly ManifestFile[]): Promise<{ files: number; bytes: number }> {
    let bytes = 0;
    for (const file of files) {
      await this.verifyFile(file);
      bytes += file.size;
    }
    return { files: files.length, bytes };
  }

  /**
   * Copies a version's files into `destDir` (which must not exist), hashing as it copies, so
   * what a runtime loads is exactly what was registered. The folder appears only when every
   * file verified.
   */
  async materialize(files: readonly ManifestFile[], destDir: string): Promise<void> {
    await materializeStaged(files, destDir, async (file, target) => {
      if (await this.copySmall(file, target)) return;
      const hash = new HashingCounter(Number.MAX_SAFE_INTEGER);
      try {
        await pipeline(
          createReadStream(this.blobPath(file.sha256)),
          hash,
          createWriteStream(target, { flags: 'wx' }),
        );
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw await this.missing(file);
        throw error;
      }
      const actual = hash.hash.digest('hex');
      if (actual !== file.sha256) {
        await this.quarantine(file.sha256);
        throw kilnError('KILN_ARTIFACT_CORRUPT', {
          path: file.path,
          expected: file.sha256,
          actual,
        });
      }
    });
  }

  /**
   * materialize()'s copy of one blob of at most smallCopyBytes: read whole, hashed, checked,
   * then written — one read and one write instead of a stream's dozen turns, which a replica
   * start waits on (a tree model's 760 KB: ~2 ms against 10–200 ms on a busy machine). False
   * for a larger blob (the stream copies it); throws as the stream path does.
   */
  private async copySmall(file: ManifestFile, target: string): Promise<boolean> {
    let bytes: Buffer;
    try {
      const handle = await open(this.blobPath(file.sha256), 'r');
      try {
        if ((await handle.stat()).size > smallCopyBytes) return false;
        bytes = await handle.readFile();
      } finally {
        await handle.close();
      }
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw await this.missing(file);
      throw error;
    }
    const actual = createHash('sha256').update(bytes).digest('hex');
    if (actual !== file.sha256) {
      await this.quarantine(file.sha256);
      throw kilnError('KILN_ARTIFACT_CORRUPT', { path: file.path, expected: file.sha256, actual });
    }
    await writeFile(target, bytes, { flag: 'wx' });
    return true;
  }

  /**
   * Removes blobs that no live version references, keeping those younger than the grace
   * period (an upload whose version is about to be created), and stale temp files.
   */
  async gc(live: ReadonlySet<string>, options: GcOptions): Promise<GcResult> {
    const now = this.clock.now();
    let keptBlobs = 0;
    const candidates: { path: string; name: string; size: number }[] = [];
    const base = join(this.root, 'blobs', 'sha256');
    // Another gc, or a quarantine, may remove files as this one walks: gone is fine.
    for (const prefix of await readdir(base).catch(() => [] as string[])) {
      for (const name of await readdir(join(base, prefix)).catch(() => [] as string[])) {
        const path = join(base, prefix, name);
        const info = await stat(path).catch(() => null);
        if (info === null) continue;
        if (live.has(name) || now - info.mtimeMs < options.graceMs) {
          keptBlobs += 1;
          continue;
        }
        candidates.push({ path, name, size: info.size });
      }
    }
    let removedBlobs = 0;
    let removedBytes = 0;
    const decide = (stillLive: ReadonlySet<string>): typeof candidates => {
      const doomed = candidates.filter((candidate) => !stillLive.has(candidate.name));
      keptBlobs += candidates.length - doomed.length;
      removedBlobs += doomed.length;
      for (const candidate of doomed) removedBytes += candidate.size;
      return doomed;
    };
    if (options.underLock !== undefined) {
      await options.underLock((stillLive) => {
        const doomed = decide(stillLive);
        if (!options.dryRun) for (const { path } of doomed) rmSync(path, { force: true });
      });
    } else {
      const doomed = decide(live);
      if (!options.dryRun) for (const { path } of doomed) await rm(path, { force: true });
    }
    if (!options.dryRun) {
      const tmp = join(this.root, 'tmp');
      for (const name of await readdir(tmp)) {
        const info = await stat(join(tmp, name)).catch(() => null);
        if (info !== null && now - info.mtimeMs > Math.max(options.graceMs, 24 * 3600_000)) {
          await rm(join(tmp, name), { force: true });
        }
      }
    }
    return { removedBlobs, removedBytes, keptBlobs, dryRun: options.dryRun };
  }
}
