// A version's manifest: every file of the artifact with its size and sha256. The canonical
// form (sorted keys, no whitespace) is what gets hashed into `manifestDigest` and signed, so
// the CLI and the server must produce the same bytes; both use this module.

import { createHash } from 'node:crypto';

export interface ManifestFile {
  readonly path: string;
  readonly size: number;
  readonly sha256: string;
}

export interface ManifestSubject {
  readonly model: string;
  readonly format: string;
  readonly files: readonly ManifestFile[];
  /**
   * What an `external` version points at (URL, image…): signed too, since such a version
   * has no files to sign. Absent (undefined or null) for file-based versions.
   */
  readonly external?: unknown;
}

/** File-based versions: model, format and files. */
export const manifestKind = 'kiln-manifest/v1';
/** External versions: the same and what they point at. */
export const externalManifestKind = 'kiln-manifest/v2';

/** JSON with object keys sorted at every level and no whitespace. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v)).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}

export function canonicalManifest(subject: ManifestSubject): Buffer {
  const files = [...subject.files]
    .map((f) => ({ path: f.path, sha256: f.sha256, size: f.size }))
    .sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const external = subject.external ?? undefined;
  // v1 bytes are unchanged for file-based versions, so their signatures stay valid.
  return Buffer.from(
    canonicalJson({
      external,
      files,
      format: subject.format,
      kind: external === undefined ? manifestKind : externalManifestKind,
      model: subject.model,
    }),
    'utf8',
  );
}

export function manifestDigest(subject: ManifestSubject): string {
  return createHash('sha256').update(canonicalManifest(subject)).digest('hex');
}
