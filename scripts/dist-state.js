// Whether dist/ (`npm run build`) holds the sources as they are now. The build writes, in
// dist/build-stamp.json, the time it started reading them; dist/ is fresh while no file or
// folder under src/ (a folder's time moves when an entry is added, removed or renamed), and
// none of the build's own inputs, is newer than that. bin/kiln.js asks this before every
// command, so it only stats: ~550 entries, a few milliseconds, and it stops at the first
// newer one.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = fileURLToPath(new URL('..', import.meta.url));
export const stampName = 'build-stamp.json';
/** What the build reads besides src/. */
const buildInputs = ['tsconfig.json', 'tsconfig.build.json', 'scripts/build.js'];

/** 'fresh', 'stale' (built from older sources), or 'absent' (never built, or half). */
export function distState(repoRoot = root) {
  let sourcesReadAtMs;
  try {
    const stamp = JSON.parse(readFileSync(join(repoRoot, 'dist', stampName), 'utf8'));
    sourcesReadAtMs = stamp.sourcesReadAtMs;
  } catch {
    return 'absent';
  }
  if (typeof sourcesReadAtMs !== 'number') return 'absent';
  // An install of dist/ without src/ has nothing it could be older than.
  const src = join(repoRoot, 'src');
  if (statSync(src, { throwIfNoEntry: false }) === undefined) return 'fresh';
  for (const input of buildInputs) {
    const info = statSync(join(repoRoot, input), { throwIfNoEntry: false });
    if (info !== undefined && info.mtimeMs > sourcesReadAtMs) return 'stale';
  }
  return anyNewer(src, sourcesReadAtMs) ? 'stale' : 'fresh';
}

function anyNewer(folder, thanMs) {
  if (statSync(folder).mtimeMs > thanMs) return true;
  for (const entry of readdirSync(folder, { withFileTypes: true })) {
    const path = join(folder, entry.name);
    if (entry.isDirectory() ? anyNewer(path, thanMs) : statSync(path).mtimeMs > thanMs) {
      return true;
    }
  }
  return false;
}
