// Paths inside an artifact come from users (a folder they uploaded), so they are validated
// before anything touches the disk: relative POSIX paths, no `..`, nothing absolute.

import { resolve, sep } from 'node:path';
import { kilnError } from '../core/errors.ts';

const maxPathLength = 1024;

/** Why `path` is not an acceptable artifact path, or null if it is. */
export function artifactPathProblem(path: string): string | null {
  if (path.length === 0) return 'the path is empty';
  if (path.length > maxPathLength) return `the path is longer than ${maxPathLength} characters`;
  if (path.includes('\0')) return 'the path contains a NUL byte';
  if (path.includes('\\')) return 'backslashes are not allowed; use / as the separator';
  if (path.startsWith('/')) return 'absolute paths are not allowed';
  if (/^[A-Za-z]:/.test(path)) return 'drive-letter paths are not allowed';
  const segments = path.split('/');
  if (segments.includes('..')) return '".." segments are not allowed';
  if (segments.some((s) => s === '' || s === '.')) return 'empty or "." segments are not allowed';
  return null;
}

export function checkArtifactPaths(paths: readonly string[]): void {
  const seen = new Set<string>();
  for (const path of paths) {
    const problem = artifactPathProblem(path);
    if (problem !== null)
      throw kilnError('KILN_INVALID_PATH', { path: JSON.stringify(path), reason: problem });
    if (seen.has(path))
      throw kilnError('KILN_INVALID_PATH', { path: JSON.stringify(path), reason: 'listed twice' });
    seen.add(path);
  }
  // A file cannot also be a folder: "model.json" next to "model.json/x" can never be laid out.
  for (const path of paths) {
    for (let at = path.indexOf('/'); at !== -1; at = path.indexOf('/', at + 1)) {
      const folder = path.slice(0, at);
      if (seen.has(folder))
        throw kilnError('KILN_INVALID_PATH', {
          path: JSON.stringify(folder),
          reason: `it is a file, and ${JSON.stringify(path)} needs it to be a folder`,
        });
    }
  }
}

/** Joins a validated artifact path under `root`, re-checking that it cannot escape. */
export function safeJoin(root: string, path: string): string {
  const problem = artifactPathProblem(path);
  const full = resolve(root, path);
  if (problem !== null || !full.startsWith(resolve(root) + sep)) {
    throw kilnError('KILN_INVALID_PATH', {
      path: JSON.stringify(path),
      reason: problem ?? 'escapes the artifact folder',
    });
  }
  return full;
}
