// Benchmarks measure what users run: `kiln up` runs compiled JavaScript (dist/, issue 16), so
// the platform a bench starts is the compiled one — its gateway, workers and engine threads
// are then compiled too (src/core/module-entry.ts). dist/ is built first when it is older
// than the sources; KILN_FROM_SOURCE=1 measures the sources through tsx instead.

import { spawnSync } from 'node:child_process';
import type { startPlatform as StartPlatform } from '../src/control/start-platform.ts';

const root = new URL('../', import.meta.url);

let loaded: Promise<typeof StartPlatform> | null = null;

/** startPlatform from dist/ (built if stale), or from the sources with KILN_FROM_SOURCE=1. */
export function platformStarter(): Promise<typeof StartPlatform> {
  loaded ??= load();
  return loaded;
}

async function load(): Promise<typeof StartPlatform> {
  if (process.env.KILN_FROM_SOURCE === '1') {
    console.log('platform: from the sources (tsx), KILN_FROM_SOURCE=1');
    return (await import('../src/control/start-platform.ts')).startPlatform;
  }
  const built = spawnSync(process.execPath, ['scripts/build.js', '--if-stale'], {
    cwd: root,
    stdio: 'inherit',
  });
  if (built.status !== 0) throw new Error(`npm run build failed (exit ${built.status})`);
  console.log('platform: compiled (dist/), as `kiln up` runs it');
  const compiled = new URL('dist/control/start-platform.js', root).href;
  return ((await import(compiled)) as { startPlatform: typeof StartPlatform }).startPlatform;
}
