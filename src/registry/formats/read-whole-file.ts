// Reads a whole (small) artifact file with a size cap, for formats that must be parsed in one
// piece (JSON, UBJSON). Bigger files are refused with a clear reason instead of exhausting
// memory.

import type { ArtifactFile } from './artifact-file.ts';

export type WholeFile =
  { readonly ok: true; readonly bytes: Buffer } | { readonly ok: false; readonly reason: string };

export async function readWholeFile(
  file: ArtifactFile,
  maxBytes: number,
  what: string,
): Promise<WholeFile> {
  if (file.size > maxBytes) {
    return {
      ok: false,
      reason: `${file.path}: ${what} is ${describeBytes(file.size)}, over the ${describeBytes(maxBytes)} limit`,
    };
  }
  const bytes = await file.read(0, file.size);
  if (bytes.length !== file.size) {
    return {
      ok: false,
      reason: `${file.path}: file ended after ${bytes.length} of ${file.size} bytes`,
    };
  }
  return { ok: true, bytes };
}

/** "300 MiB", "12 KiB", "17 bytes": sizes for messages. */
export function describeBytes(bytes: number): string {
  if (bytes >= 1 << 30) return `${(bytes / (1 << 30)).toFixed(1)} GiB`;
  if (bytes >= 1 << 20) return `${Math.round(bytes / (1 << 20))} MiB`;
  if (bytes >= 1 << 10) return `${Math.round(bytes / (1 << 10))} KiB`;
  return `${bytes} bytes`;
}
