// An ArtifactFile over bytes in memory: small uploads, and tests that build broken variants
// of real files without writing them to disk.

import type { ArtifactFile } from './artifact-file.ts';

export function bufferArtifact(path: string, bytes: Uint8Array): ArtifactFile {
  const data = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return {
    path,
    size: data.length,
    read(offset, length) {
      if (
        !Number.isSafeInteger(offset) ||
        offset < 0 ||
        !Number.isSafeInteger(length) ||
        length < 0
      ) {
        return Promise.reject(
          new RangeError(`invalid read range: offset ${offset}, length ${length}`),
        );
      }
      // A copy, so a validator can never change the caller's bytes.
      return Promise.resolve(Buffer.from(data.subarray(offset, offset + length)));
    },
  };
}
