#!/usr/bin/env node
// `npm run build`: compiles src/ to dist/ with tsc (tsconfig.build.json; the `.ts` import
// specifiers are rewritten to `.js`), copies the other files under src/ that modules read
// beside themselves (the wasm kernels) to the same places, and stamps the result with the
// time the sources were read (dist-state.js: bin/kiln.js runs dist/ only while it is fresh).
//
// Built in a folder of its own and swapped in whole: a platform running from dist/ (its
// detached gateways and workers outlive `kiln up`, start new workers and import modules
// lazily) never sees it half-written.
//
//   --if-stale   nothing to do when dist/ is fresh (npm start)
//   --no-check   emit without type-checking (the same JavaScript, a third of the time; for a
//                test that only needs dist/ to run: `npm run typecheck` checks the types)
//   --optional   without TypeScript (an install without dev dependencies) say so and stop
//                without an error: kiln then runs the sources through tsx
import { cpSync, existsSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { distState, root, stampName } from './dist-state.js';

const args = process.argv.slice(2);
if (args.includes('--if-stale') && distState() === 'fresh') process.exit(0);

let tsc;
try {
  tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
} catch {
  if (!args.includes('--optional')) throw new Error('TypeScript is not installed: npm ci first');
  console.error('kiln: TypeScript is not installed; dist/ not built (kiln runs src/ through tsx)');
  process.exit(0);
}

const dist = join(root, 'dist');
const next = join(root, `dist.next-${process.pid}`);
const old = join(root, `dist.old-${process.pid}`);
try {
  process.exitCode = build();
} finally {
  rmSync(next, { recursive: true, force: true });
  rmSync(old, { recursive: true, force: true });
}

function build() {
  const sourcesReadAtMs = Date.now();
  const check = args.includes('--no-check') ? ['--noCheck'] : [];
  const tscArgs = [tsc, '-p', 'tsconfig.build.json', '--outDir', next, ...check];
  const compiled = spawnSync(process.execPath, tscArgs, { cwd: root, stdio: 'inherit' });
  if (compiled.status !== 0) return compiled.status ?? 1;
  cpSync(join(root, 'src'), next, { recursive: true, filter: (path) => !path.endsWith('.ts') });
  const stamp = { sourcesReadAtMs, builtAt: new Date().toISOString() };
  writeFileSync(join(next, stampName), `${JSON.stringify(stamp)}\n`);
  // Two renames: another build swapping at the same moment may move dist/ in between.
  for (let attempt = 1; ; attempt++) {
    rmSync(old, { recursive: true, force: true });
    try {
      if (existsSync(dist)) renameSync(dist, old);
      renameSync(next, dist);
      return 0;
    } catch (error) {
      if (attempt === 5) throw error;
    }
  }
}
