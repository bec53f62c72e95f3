// What the registry, the blob routes and the workers need of an artifact store, whatever
// holds the bytes: a folder on this machine (ArtifactStore, the default) or an S3-compatible
// object store (S3ArtifactStore). Both address content the same way (blobs/sha256/<ab>/<digest>),
// take uploads the same way (hashed while streamed, stored under the digest only when the
// bytes match it) and re-hash every byte they hand to a runtime.
//
// A store is described by a locator: plain data, safe to write into a worker's spec (no
// secrets: an S3 worker takes its credentials from its own environment, as the AWS SDK's
// default chain does), from which a worker opens the same store to materialize its model.

import type { Readable } from 'node:stream';
import type { ArtifactFile } from './formats/artifact-file.ts';
import type { ManifestFile } from './manifest.ts';

export interface IngestOptions {
  /** The Content-Length the sender announced, if any. */
  readonly expectedSize?: number | undefined;
  readonly maxBytes: number;
}

export interface IngestResult {
  readonly sha256: string;
  readonly size: number;
  readonly created: boolean;
}

export interface GcResult {
  readonly removedBlobs: number;
  readonly removedBytes: number;
  readonly keptBlobs: number;
  readonly dryRun: boolean;
}

export interface GcOptions {
  readonly dryRun: boolean;
  readonly graceMs: number;
  /**
   * Runs the deciding and deleting under the store's write lock (Store.withLiveBlobDigests),
   * given the referenced digests read again under it: a version registered since `live` was
   * read may have started using an old blob (clients do not upload blobs the store already
   * holds, so its age says nothing), and none, in any process, can start naming one between
   * that read and its removal. `work` is synchronous for a local folder, asynchronous for an
   * object store (its deletes are requests): a store whose lock is synchronous (SQLite) runs
   * the asynchronous remainder after releasing it — see Store.withLiveBlobDigests.
   * Absent: `live` decides (a caller that knows no version is being registered).
   */
  readonly underLock?: <T>(work: (live: ReadonlySet<string>) => T | Promise<T>) => Promise<T>;
}

/** Where an artifact store is: enough for another process to open it (no secrets). */
export type ArtifactLocator =
  | { readonly kind: 'local'; readonly root: string }
  | {
      readonly kind: 's3';
      readonly bucket: string;
      /** Key prefix, '' or ending in '/': blobs live under `<prefix>blobs/sha256/`. */
      readonly prefix: string;
      /** A custom S3-compatible endpoint (MinIO, Ceph, s3rver…); null = AWS. */
      readonly endpoint: string | null;
      /** null = the SDK's (AWS_REGION), else us-east-1. */
      readonly region: string | null;
      /** Path-style URLs (endpoint/bucket/key), which most S3-compatible servers need. */
      readonly forcePathStyle: boolean;
    };

export interface ArtifactStorage {
  readonly locator: ArtifactLocator;
  /** For messages: the folder, or s3://bucket/prefix. */
  readonly description: string;

  /** Prepares the store and proves it usable (an object store: the bucket takes a write). */
  init(): Promise<void>;

  /**
   * Whether the blob is stored. Synchronous where the store can answer so (a local folder),
   * for the check inside a synchronous store transaction; a promise for an object store.
   */
  has(sha256: string): boolean | Promise<boolean>;

  /** Size of the stored blob, or null if absent. */
  sizeOf(sha256: string): Promise<number | null>;

  /**
   * Streams `source` into the store. With `declared`, the bytes must hash to it; without, the
   * digest is whatever they hash to (local registration). Nothing of a failed ingest is ever
   * visible under a digest.
   */
  ingest(source: Readable, declared: string | null, options: IngestOptions): Promise<IngestResult>;

  /**
   * A range-readable view of a stored blob for format checks at registration. It trusts the
   * bytes verified at ingest; loading goes through verify()/materialize() instead.
   */
  artifactFile(file: ManifestFile): ArtifactFile;

  /** Re-hashes every file; throws KILN_ARTIFACT_MISSING / _QUARANTINED / _CORRUPT. */
  verify(files: readonly ManifestFile[]): Promise<{ files: number; bytes: number }>;

  /**
   * Copies a version's files into `destDir` (which must not exist), hashing as it copies, so
   * what a runtime loads is exactly what was registered. The folder appears only when every
   * file verified; a corrupt blob is set aside and refused with KILN_ARTIFACT_CORRUPT.
   */
  materialize(files: readonly ManifestFile[], destDir: string): Promise<void>;

  /**
   * Removes blobs no live version references, keeping those younger than the grace period
   * (an upload whose version is about to be created).
   */
  gc(live: ReadonlySet<string>, options: GcOptions): Promise<GcResult>;
}
