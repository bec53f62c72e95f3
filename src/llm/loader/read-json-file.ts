// A small JSON file of a model folder (config.json, the shard index), read whole with a size
// cap. A missing file is reported apart from a broken one so callers can say which file the
// folder lacks.

import { join } from 'node:path';
import { fileArtifact } from '../../registry/formats/file-artifact.ts';
import { readJsonObject, type JsonObject } from '../../registry/formats/read-json-object.ts';

export type JsonFileResult =
  | { readonly ok: true; readonly value: JsonObject }
  | { readonly ok: false; readonly missing: boolean; readonly message: string };

export async function readJsonFile(
  directory: string,
  name: string,
  maxBytes: number,
): Promise<JsonFileResult> {
  const path = join(directory, name);
  try {
    const parsed = await readJsonObject(await fileArtifact(path, path), maxBytes);
    if (!parsed.ok) return { ok: false, missing: false, message: parsed.reason };
    return parsed;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException | undefined)?.code;
    if (code === 'ENOENT') return { ok: false, missing: true, message: `${path}: not found` };
    const detail = error instanceof Error ? error.message : String(error);
    return { ok: false, missing: false, message: `${path}: cannot be read (${detail})` };
  }
}
