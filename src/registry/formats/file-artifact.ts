// An ArtifactFile backed by a plain file on disk. Tests use it for fixtures; the registry can
// use it for blobs already in the local content-addressed store. Each read opens and closes
// the file, so a forgotten ArtifactFile never leaks a descriptor.

import { open, stat } from 'node:fs/promises';
import type { ArtifactFile } from './artifact-file.ts';

export async function fileArtifact(absPath: string, manifestPath: string): Promise<ArtifactFile> {
  const { size } = await stat(absPath);
  return {
    path: manifestPath,
    size,
    read: (offset, length) => readRange(absPath, offset, length),
  };
}

async function readRange(absPath: string, offset: number, length: number): Promise<Buffer> {
  if (!Number.isSafeInteger(offset) || offset < 0 || !Number.isSafeInteger(length) || length < 0) {
    throw new RangeError(`invalid read range: offset ${offset}, length ${length}`);
  }
  const handle = await open(absPath, 'r');
  try {
    const out = Buffer.alloc(length);
    let filled = 0;
    // A single read may return fewer bytes than asked; only end of file ends the loop early.
    while (filled < length) {
      const { bytesRead } = await handle.read(out, filled, length - filled, offset + filled);
      if (bytesRead === 0) break;
      filled += bytesRead;
    }
    return filled === length ? out : out.subarray(0, filled);
  } finally {
    await handle.close();
  }
}
