// Content-addressed artifact store in an S3-compatible bucket: the local store's layout and
// protocol (artifact-store.ts) with objects for files.
//
//   s3://<bucket>/<prefix>blobs/sha256/ab/abcdef…     one object per distinct content
//   s3://<bucket>/<prefix>quarantine/<digest>.<ms>    objects that failed verification
//   <scratchDir>/<random>.part                         uploads in flight, on local disk
//
// An upload is hashed while it streams into a local temp file, and only bytes that match
// their digest are sent, in one PutObject (or one multipart upload, for large blobs): S3
// makes an object visible whole when the request completes, so a digest key either holds
// verified content or does not exist, and a broken upload leaves nothing under it. The temp
// file keeps memory flat for any size (a multipart part is read from it, one at a time).
// The bucket is not trusted after the fact either: every read for loading re-hashes the
// bytes, and a mismatch is refused with the local store's errors.
//
// Credentials are never part of the locator: the SDK's default chain reads them (AWS_ACCESS_KEY_ID
// / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN, a profile, an instance or pod role).

import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, open, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { systemClock, type Clock } from '../core/clock.ts';
import { kilnError, KilnError } from '../core/errors.ts';
import type {
  ArtifactLocator,
  ArtifactStorage,
  GcOptions,
  GcResult,
  IngestOptions,
  IngestResult,
} from './artifact-storage.ts';
import { isSha256 } from './artifact-store.ts';
import type { ArtifactFile } from './formats/artifact-file.ts';
import { HashingCounter } from './hashing-counter.ts';
import { materializeStaged } from './staged-folder.ts';
import type { ManifestFile } from './manifest.ts';

export type S3ArtifactLocator = Extract<ArtifactLocator, { kind: 's3' }>;

export interface S3ArtifactStoreOptions {
  readonly clock?: Clock;
  /** Where uploads are spooled while hashed (default: the system temp folder). */
  readonly scratchDir?: string;
  /** Blobs above this go up as multipart uploads (default 256 MiB; PutObject takes ≤ 5 GiB). */
  readonly multipartThresholdBytes?: number;
  /** Part size of a multipart upload (default 64 MiB; S3's minimum is 5 MiB). */
  readonly partBytes?: number;
  /** A client to use instead of one built from the locator (tests). */
  readonly client?: S3Client;
}

// The SDK warns, once per process, that its releases after January 2027 will need Node 22.
// Kiln pins its release (package.json), so the notice is noise on `kiln up` and every
// worker's stderr; a deployment that sets the variable itself keeps its choice.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

/** S3 allows at most this many parts in one multipart upload. */
const maxParts = 10_000;
/** gc deletes this many objects at a time (DeleteObject each: not every S3-alike has DeleteObjects). */
const deleteConcurrency = 16;

export class S3ArtifactStore implements ArtifactStorage {
  readonly locator: S3ArtifactLocator;
  readonly description: string;
  private readonly client: S3Client;
  private readonly clock: Clock;
  private readonly scratchDir: string;
  private readonly multipartThresholdBytes: number;
  private readonly partBytes: number;

  constructor(locator: S3ArtifactLocator, options: S3ArtifactStoreOptions = {}) {
    this.locator = locator;
    this.description = `s3://${locator.bucket}/${locator.prefix}`;
    this.clock = options.clock ?? systemClock;
    this.scratchDir = options.scratchDir ?? join(tmpdir(), 'kiln-s3-uploads');
    this.multipartThresholdBytes = options.multipartThresholdBytes ?? 256 << 20;
    this.partBytes = Math.max(5 << 20, options.partBytes ?? 64 << 20);
    this.client = options.client ?? s3ClientFor(locator);
  }

  blobKey(sha256: string): string {
    if (!isSha256(sha256)) throw kilnError('KILN_INVALID_DIGEST', { digest: sha256 });
    return `${this.locator.prefix}blobs/sha256/${sha256.slice(0, 2)}/${sha256}`;
  }

  /**
   * Proves the bucket usable before anything relies on it: it exists, we may reach it, and it
   * takes a write and a delete (a probe object under the prefix). A refusal names the bucket
   * and the reason (KILN_ARTIFACTS_UNAVAILABLE), so `kiln up` stops with it instead of
   * failing every upload later.
   */
  async init(): Promise<void> {
    await mkdir(this.scratchDir, { recursive: true });
    const { bucket } = this.locator;
    try {
      await this.client.send(new HeadBucketCommand({ Bucket: bucket }));
    } catch (error) {
      const status = httpStatus(error);
      const reason =
        status === 404
          ? `bucket ${bucket} does not exist`
          : status === 403
            ? `access to bucket ${bucket} is denied`
            : `bucket ${bucket} cannot be reached (${errorText(error)})`;
      throw this.unavailable(reason);
    }
    const probe = `${this.locator.prefix}probes/${randomBytes(8).toString('hex')}`;
    try {
      await this.client.send(
        new PutObjectCommand({ Bucket: bucket, Key: probe, Body: 'kiln write probe' }),
      );
    } catch (error) {
      throw this.unavailable(`bucket ${bucket} refuses writes (${errorText(error)})`);
    }
    try {
      await this.client.send(new DeleteObjectCommand({ Bucket: bucket, Key: probe }));
    } catch (error) {
      throw this.unavailable(`bucket ${bucket} refuses deletes (${errorText(error)})`);
    }
  }

  has(sha256: string): Promise<boolean> {
    return this.sizeOf(sha256).then((size) => size !== null);
  }

  async sizeOf(sha256: string): Promise<number | null> {
    const key = this.blobKey(sha256);
    try {
      const head = await this.client.send(
        new HeadObjectCommand({ Bucket: this.locator.bucket, Key: key }),
      );
      return head.ContentLength ?? 0;
    } catch (error) {
      if (isNotFound(error)) return null;
      throw this.failed(error);
    }
  }

  async ingest(
    source: Readable,
    declared: string | null,
    options: IngestOptions,
  ): Promise<IngestResult> {
    if (declared !== null && !isSha256(declared))
      throw kilnError('KILN_INVALID_DIGEST', { digest: declared });
    await mkdir(this.scratchDir, { recursive: true });
    const tmp = join(this.scratchDir, `${randomBytes(12).toString('hex')}.part`);
    const counter = new HashingCounter(options.maxBytes);
    try {
      try {
        await pipeline(source, counter, createWriteStream(tmp, { flags: 'wx' }));
      } catch (error) {
        if (error instanceof KilnError) throw error;
        throw kilnError('KILN_UPLOAD_INCOMPLETE', {
          received: counter.bytes,
          expected: options.expectedSize ?? 'the announced number of',
        });
      }
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
      // Already stored: the verified bytes replace it all the same, so uploading a blob again
      // repairs one damaged in the bucket (same size, other bytes).
      const existed = (await this.sizeOf(actual)) !== null;
      await this.upload(tmp, this.blobKey(actual), counter.bytes);
      return { sha256: actual, size: counter.bytes, created: !existed };
    } finally {
      await rm(tmp, { force: true });
    }
  }

  /** Sends a verified local file to `key`: visible only once whole (PutObject or multipart). */
  private async upload(path: string, key: string, size: number): Promise<void> {
    const bucket = this.locator.bucket;
    if (size <= this.multipartThresholdBytes) {
      try {
        await this.client.send(
          new PutObjectCommand({
            Bucket: bucket,
            Key: key,
            Body: createReadStream(path),
            ContentLength: size,
            ContentMD5: await md5Of(path),
          }),
        );
      } catch (error) {
        throw this.failed(error);
      }
      return;
    }
    const partBytes = Math.max(this.partBytes, Math.ceil(size / maxParts));
    let uploadId: string | undefined;
    const handle = await open(path, 'r');
    try {
      const created = await this.client.send(
        new CreateMultipartUploadCommand({ Bucket: bucket, Key: key }),
      );
      uploadId = created.UploadId;
      const parts: { PartNumber: number; ETag: string }[] = [];
      // One part in memory at a time: partBytes of buffer, whatever the blob's size.
      for (let offset = 0, number = 1; offset < size; offset += partBytes, number += 1) {
        const body = Buffer.alloc(Math.min(partBytes, size - offset));
        await handle.read(body, 0, body.length, offset);
        const part = await this.client.send(
          new UploadPartCommand({
            Bucket: bucket,
            Key: key,
            UploadId: uploadId,
            PartNumber: number,
            Body: body,
            ContentMD5: createHash('md5').update(body).digest('base64'),
          }),
        );
        parts.push({ PartNumber: number, ETag: part.ETag ?? '' });
      }
      await this.client.send(
        new CompleteMultipartUploadCommand({
          Bucket: bucket,
          Key: key,
          UploadId: uploadId,
          MultipartUpload: { Parts: parts },
        }),
      );
    } catch (error) {
      // Parts of an unfinished upload are never visible, but they are billed: drop them.
      if (uploadId !== undefined) {
        await this.client
          .send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: uploadId }))
          .catch(() => undefined);
      }
      throw this.failed(error);
    } finally {
      await handle.close();
    }
  }

  artifactFile(file: ManifestFile): ArtifactFile {
    const key = this.blobKey(file.sha256);
    const bucket = this.locator.bucket;
    const client = this.client;
    const failed = (error: unknown): KilnError => this.failed(error);
    return {
      path: file.path,
      size: file.size,
      async read(offset: number, length: number): Promise<Buffer> {
        const end = Math.min(offset + length, file.size);
        if (end <= offset) return Buffer.alloc(0);
        try {
          const got = await client.send(
            new GetObjectCommand({ Bucket: bucket, Key: key, Range: `bytes=${offset}-${end - 1}` }),
          );
          return Buffer.from(await got.Body!.transformToByteArray());
        } catch (error) {
          throw failed(error);
        }
      },
    };
  }

  async verify(files: readonly ManifestFile[]): Promise<{ files: number; bytes: number }> {
    let bytes = 0;
    for (const file of files) {
      const counter = new HashingCounter(Number.MAX_SAFE_INTEGER);
      await this.readVerified(file, counter, null);
      bytes += file.size;
    }
    return { files: files.length, bytes };
  }

  async materialize(files: readonly ManifestFile[], destDir: string): Promise<void> {
    await materializeStaged(files, destDir, (file, target) =>
      this.readVerified(file, new HashingCounter(Number.MAX_SAFE_INTEGER), target),
    );
  }

  /**
   * Streams one blob through `counter` (into `target`, or nowhere), then checks its digest:
   * a mismatch sets the object aside and throws KILN_ARTIFACT_CORRUPT; the caller removes
   * whatever was written.
   */
  private async readVerified(
    file: ManifestFile,
    counter: HashingCounter,
    target: string | null,
  ): Promise<void> {
    let body: Readable;
    let etag: string | undefined;
    try {
      const got = await this.client.send(
        new GetObjectCommand({ Bucket: this.locator.bucket, Key: this.blobKey(file.sha256) }),
      );
      body = got.Body as Readable;
      etag = got.ETag;
    } catch (error) {
      if (isNotFound(error)) throw await this.missing(file);
      throw this.failed(error);
    }
    try {
      const sink = target === null ? discard() : createWriteStream(target, { flags: 'wx' });
      await pipeline(body, counter, sink);
    } catch (error) {
      throw error instanceof KilnError ? error : this.failed(error);
    }
    const actual = counter.hash.digest('hex');
    if (actual !== file.sha256) {
      await this.quarantine(file.sha256, etag);
      throw kilnError('KILN_ARTIFACT_CORRUPT', { path: file.path, expected: file.sha256, actual });
    }
  }

  /**
   * Moves an object whose bytes no longer hash to its name out of the blobs (a copy under
   * quarantine/ for inspection): the store then reports it missing, so the next upload of the
   * right bytes puts it back. Best effort: a worker may hold read-only credentials, and then
   * the object stays (and is refused again at every read).
   */
  private async quarantine(sha256: string, etag: string | undefined): Promise<void> {
    const { bucket, prefix } = this.locator;
    const key = this.blobKey(sha256);
    try {
      await this.client.send(
        new CopyObjectCommand({
          Bucket: bucket,
          Key: `${prefix}quarantine/${sha256}.${this.clock.now()}`,
          CopySource: `${bucket}/${key.split('/').map(encodeURIComponent).join('/')}`,
        }),
      );
      // Not if the right bytes were uploaded since it was read (a repair): S3 has no
      // conditional delete everywhere, so compare the ETag just before (a narrow window left).
      const now = await this.client.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
      if (etag !== undefined && now.ETag !== etag) return;
      await this.client.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
    } catch {
      // Left in place: still refused at every read.
    }
  }

  /** Why a blob is not there: set aside as corrupt by an earlier check, or just missing. */
  private async missing(file: ManifestFile): Promise<KilnError> {
    const listed = await this.client
      .send(
        new ListObjectsV2Command({
          Bucket: this.locator.bucket,
          Prefix: `${this.locator.prefix}quarantine/${file.sha256}.`,
          MaxKeys: 1,
        }),
      )
      .catch(() => null);
    return (listed?.KeyCount ?? 0) > 0
      ? kilnError('KILN_ARTIFACT_QUARANTINED', { path: file.path, digest: file.sha256 })
      : kilnError('KILN_ARTIFACT_MISSING', { path: file.path, digest: file.sha256 });
  }

  /**
   * The local gc over a listing: candidates are blobs neither live nor younger than the
   * grace period (by the object's LastModified, the bucket's clock), decided again and
   * deleted under the store's lock. Deletes are requests, so `work` is asynchronous: on
   * PostgreSQL it runs inside the locked transaction (no control plane can record a version
   * naming a blob until the deletes are done); on SQLite, whose lock is synchronous, the
   * deletes run just after it — see Store.withLiveBlobDigests.
   */
  async gc(live: ReadonlySet<string>, options: GcOptions): Promise<GcResult> {
    const now = this.clock.now();
    let keptBlobs = 0;
    const candidates: { key: string; name: string; size: number }[] = [];
    for await (const object of this.listBlobs()) {
      if (live.has(object.name) || now - object.modifiedMs < options.graceMs) {
        keptBlobs += 1;
        continue;
      }
      candidates.push(object);
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
    const remove = async (doomed: typeof candidates): Promise<void> => {
      if (options.dryRun) return;
      for (let at = 0; at < doomed.length; at += deleteConcurrency) {
        await Promise.all(
          doomed.slice(at, at + deleteConcurrency).map(({ key }) =>
            this.client
              .send(new DeleteObjectCommand({ Bucket: this.locator.bucket, Key: key }))
              .catch((error: unknown) => {
                throw this.failed(error);
              }),
          ),
        );
      }
    };
    if (options.underLock !== undefined) {
      await options.underLock((stillLive) => remove(decide(stillLive)));
    } else {
      await remove(decide(live));
    }
    if (!options.dryRun) await this.removeStaleScratch(now, options.graceMs);
    return { removedBlobs, removedBytes, keptBlobs, dryRun: options.dryRun };
  }

  private async *listBlobs(): AsyncGenerator<{
    key: string;
    name: string;
    size: number;
    modifiedMs: number;
  }> {
    const prefix = `${this.locator.prefix}blobs/sha256/`;
    let token: string | undefined;
    do {
      let page;
      try {
        page = await this.client.send(
          new ListObjectsV2Command({
            Bucket: this.locator.bucket,
            Prefix: prefix,
            ...(token === undefined ? {} : { ContinuationToken: token }),
          }),
        );
      } catch (error) {
        throw this.failed(error);
      }
      for (const object of page.Contents ?? []) {
        const key = object.Key ?? '';
        const name = key.slice(key.lastIndexOf('/') + 1);
        // Only what this store writes: <prefix>blobs/sha256/<ab>/<digest>.
        if (!isSha256(name) || key !== this.blobKey(name)) continue;
        yield {
          key,
          name,
          size: object.Size ?? 0,
          modifiedMs: object.LastModified?.getTime() ?? this.clock.now(),
        };
      }
      token = page.IsTruncated === true ? page.NextContinuationToken : undefined;
    } while (token !== undefined);
  }

  /** Spool files of uploads this process (or an earlier one) never finished. */
  private async removeStaleScratch(now: number, graceMs: number): Promise<void> {
    for (const name of await readdir(this.scratchDir).catch(() => [] as string[])) {
      const path = join(this.scratchDir, name);
      const info = await stat(path).catch(() => null);
      if (info !== null && now - info.mtimeMs > Math.max(graceMs, 24 * 3600_000)) {
        await rm(path, { force: true });
      }
    }
  }

  private unavailable(reason: string): KilnError {
    return kilnError('KILN_ARTIFACTS_UNAVAILABLE', { store: this.description, reason });
  }

  /** An unexpected S3 failure, as a retryable 503 naming the store (never a bare SDK error). */
  private failed(error: unknown): KilnError {
    if (error instanceof KilnError) return error;
    return this.unavailable(errorText(error));
  }
}

/** An S3 client for a locator: credentials and, unless given, the region from the environment. */
export function s3ClientFor(locator: S3ArtifactLocator): S3Client {
  return new S3Client({
    region:
      locator.region ?? process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION ?? 'us-east-1',
    forcePathStyle: locator.forcePathStyle,
    ...(locator.endpoint === null ? {} : { endpoint: locator.endpoint }),
    // Kiln checks every byte against its sha256 itself (and sends Content-MD5 on uploads);
    // the SDK's default CRC trailers (aws-chunked bodies) are not understood by every
    // S3-compatible server.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    // A bucket that stops answering must not hold a registration, a replica start or a gc
    // (which, on PostgreSQL, deletes under the store's write lock) forever: no connection in
    // 10 s, or a socket idle for 60 s, fails the request (retried by the SDK, then an error).
    requestHandler: { connectionTimeout: 10_000, requestTimeout: 60_000 },
  });
}

/** A sink for bytes only hashed (verify). */
function discard(): Writable {
  return new Writable({ write: (_chunk, _encoding, done) => done() });
}

async function md5Of(path: string): Promise<string> {
  const hash = createHash('md5');
  await pipeline(createReadStream(path), hash);
  return hash.digest('base64');
}

function httpStatus(error: unknown): number | undefined {
  return (error as { $metadata?: { httpStatusCode?: number } } | null)?.$metadata?.httpStatusCode;
}

function isNotFound(error: unknown): boolean {
  const name = (error as { name?: unknown } | null)?.name;
  return name === 'NoSuchKey' || name === 'NotFound' || httpStatus(error) === 404;
}

function errorText(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const status = httpStatus(error);
  const message = error.message === 'UnknownError' ? '' : `: ${error.message}`;
  return `${error.name}${status === undefined ? '' : ` (HTTP ${status})`}${message}`;
}
