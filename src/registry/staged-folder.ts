// A version's files written into a staging folder beside `destDir` and renamed into place only
// once every file was written (and verified by `writeFile`): a runtime never sees half a model.
// Shared by the local and the object-store artifact stores.

import { randomBytes } from 'node:crypto';
import { mkdir, rename, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import { safeJoin } from './artifact-paths.ts';
import type { ManifestFile } from './manifest.ts';

export async function materializeStaged(
  files: readonly ManifestFile[],
  destDir: string,
  writeFile: (file: ManifestFile, target: string) => Promise<void>,
): Promise<void> {
  const staging = `${destDir}.${randomBytes(6).toString('hex')}.part`;
  try {
    for (const file of files) {
      const target = safeJoin(staging, file.path);
      await mkdir(dirname(target), { recursive: true });
      await writeFile(file, target);
    }
    await mkdir(dirname(destDir), { recursive: true });
    await rename(staging, destDir);
  } catch (error) {
    await rm(staging, { recursive: true, force: true });
    throw error;
  }
}
