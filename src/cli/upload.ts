// Getting an artifact's bytes to the platform:
//
//   walkArtifact(PATH) ─► hashFiles (streaming sha256) ─► HEAD /blobs/{sha} ─► PUT the absent ones
//
// Blobs are content-addressed, so a file the platform already holds (from any model) is
// never sent again, and two identical files in one artifact travel once.

import { createHash } from 'node:crypto';
import { createReadStream, type Stats } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { basename, join, relative, sep } from 'node:path';
import { CliError, describeFsError, localFileError } from './errors.ts';
import { apiPath, type KilnClient } from './http-client.ts';
import type { BlobPut, VersionFile } from './api-types.ts';
import type { ProgressSink } from './progress.ts';

export interface LocalFile {
  /** POSIX path inside the artifact (the manifest path). */
  readonly path: string;
  readonly absolutePath: string;
  readonly size: number;
}

export interface HashedFile extends LocalFile {
  readonly sha256: string;
}

/** Folders never part of an artifact: version-control state, not model files. */
const skippedFolders: ReadonlySet<string> = new Set(['.git']);

/**
 * The files of an artifact, sorted by manifest path. A single file is listed under its
 * basename; a folder is walked recursively with paths relative to it. Symlinks to regular
 * files are followed; symlinks to folders are skipped (they can form cycles).
 */
export async function walkArtifact(root: string): Promise<LocalFile[]> {
  const rootStat = await statOrThrow(root, root);
  if (rootStat.isFile()) return [{ path: basename(root), absolutePath: root, size: rootStat.size }];
  if (!rootStat.isDirectory()) throw localFileError(`${root} is neither a file nor a folder`);
  const files: LocalFile[] = [];
  await walkFolder(root, root, files);
  if (files.length === 0) throw localFileError(`${root} contains no files`);
  return files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

async function walkFolder(root: string, folder: string, out: LocalFile[]): Promise<void> {
  let entries;
  try {
    entries = await readdir(folder, { withFileTypes: true });
  } catch (error) {
    throw localFileError(`cannot read folder ${folder}: ${describeFsError(error)}`, error);
  }
  for (const entry of entries) {
    const absolutePath = join(folder, entry.name);
    if (entry.isDirectory()) {
      if (!skippedFolders.has(entry.name)) await walkFolder(root, absolutePath, out);
      continue;
    }
    if (!entry.isFile() && !entry.isSymbolicLink()) continue; // sockets, FIFOs, devices
    const target = await statOrThrow(absolutePath, absolutePath);
    if (!target.isFile()) continue; // a symlink to a folder
    out.push({ path: manifestPath(root, absolutePath), absolutePath, size: target.size });
  }
}

/** `root/a/b.json` → `a/b.json` on every platform. */
export function manifestPath(root: string, absolutePath: string): string {
  return relative(root, absolutePath).split(sep).join('/');
}

async function statOrThrow(path: string, shown: string): Promise<Stats> {
  try {
    return await stat(path);
  } catch (error) {
    throw localFileError(`cannot read ${shown}: ${describeFsError(error)}`, error);
  }
}

/** sha256 and byte count of one file, streamed (constant memory for any size). */
export async function hashFile(absolutePath: string): Promise<{ sha256: string; size: number }> {
  const hash = createHash('sha256');
  let size = 0;
  try {
    for await (const chunk of createReadStream(absolutePath, { highWaterMark: 1 << 20 })) {
      const bytes = chunk as Buffer;
      hash.update(bytes);
      size += bytes.length;
    }
  } catch (error) {
    throw localFileError(`cannot read ${absolutePath}: ${describeFsError(error)}`, error);
  }
  return { sha256: hash.digest('hex'), size };
}

export async function hashFiles(files: readonly LocalFile[]): Promise<HashedFile[]> {
  return mapLimit(files, 4, async (file) => ({ ...file, ...(await hashFile(file.absolutePath)) }));
}

export function toManifestFiles(files: readonly HashedFile[]): VersionFile[] {
  return files.map((f) => ({ path: f.path, size: f.size, sha256: f.sha256 }));
}

/** One representative file per distinct digest. */
export function uniqueBlobs(files: readonly HashedFile[]): HashedFile[] {
  const bySha = new Map<string, HashedFile>();
  for (const file of files) if (!bySha.has(file.sha256)) bySha.set(file.sha256, file);
  return [...bySha.values()];
}

/**
 * The distinct blobs of `files` the platform does not hold yet. A blob over the server's
 * upload limit (it says so on HEAD) is refused here, before any byte is sent.
 */
export async function findMissingBlobs(
  client: KilnClient,
  files: readonly HashedFile[],
): Promise<HashedFile[]> {
  const blobs = uniqueBlobs(files);
  const heads = await mapLimit(blobs, 8, (blob) => client.head(apiPath('blobs', blob.sha256)));
  const missing = blobs.filter((_, i) => heads[i]?.exists !== true);
  for (const [i, blob] of blobs.entries()) {
    const limit = Number(heads[i]?.headers['kiln-max-upload-bytes']);
    if (heads[i]?.exists !== true && Number.isFinite(limit) && blob.size > limit) {
      throw new CliError(
        'KILN_PAYLOAD_TOO_LARGE',
        `${blob.path} is ${blob.size} bytes; the platform takes uploads of at most ${limit}`,
        { hint: 'raise the limit with `kiln up --max-upload-bytes N`' },
      );
    }
  }
  return missing;
}

/** PUTs each blob, streamed from disk, reporting bytes to `progress` as they are read. */
export async function uploadBlobs(
  client: KilnClient,
  blobs: readonly HashedFile[],
  progress: ProgressSink,
): Promise<BlobPut[]> {
  return mapLimit(blobs, 4, (blob) =>
    client.putStream<BlobPut>(
      apiPath('blobs', blob.sha256),
      countedRead(blob.absolutePath, blob.size, progress),
      blob.size,
    ),
  );
}

/** The file's bytes, exactly `size` of them (as hashed), or an error naming the change. */
async function* countedRead(
  absolutePath: string,
  size: number,
  progress: ProgressSink,
): AsyncGenerator<Buffer> {
  const changed = (): CliError =>
    localFileError(`${absolutePath} changed while it was being uploaded; run the command again`);
  let read = 0;
  let stream;
  try {
    // Never more than the hashed size: a file that grew is caught below, not sent long.
    stream = createReadStream(absolutePath, { highWaterMark: 1 << 20, end: Math.max(0, size) });
  } catch (error) {
    throw localFileError(`cannot read ${absolutePath}: ${describeFsError(error)}`, error);
  }
  try {
    for await (const chunk of stream) {
      const bytes = chunk as Buffer;
      read += bytes.length;
      if (read > size) throw changed();
      progress.add(bytes.length);
      yield bytes;
    }
  } catch (error) {
    if (error instanceof CliError) throw error;
    throw localFileError(`cannot read ${absolutePath}: ${describeFsError(error)}`, error);
  }
  if (read !== size) throw changed();
}

/** Like Promise.all over `items.map(fn)`, with at most `limit` calls in flight; keeps order. */
export async function mapLimit<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const index = next++;
      results[index] = await fn(items[index] as T, index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}
