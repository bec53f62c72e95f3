#!/usr/bin/env node
// The `kiln` command. Runs the compiled CLI (dist/: `npm run build`; `npm start` builds it)
// while dist/ holds the sources as they are now; otherwise the TypeScript sources
// through tsx, so `npx kiln` works from a checkout without a build and someone editing src/
// never runs stale code (a stale dist/ is said on stderr, then passed over).
// KILN_FROM_SOURCE=1 runs the sources whatever dist/ holds: the test suite sets it, so the
// tests test the sources they are run against.
import { distState } from '../scripts/dist-state.js';

const state = process.env.KILN_FROM_SOURCE === '1' ? 'not asked' : distState();
if (state === 'fresh') {
  await import('../dist/cli/main.js');
} else {
  if (state === 'stale') {
    process.stderr.write(
      'kiln: dist/ is older than src/, running the sources (`npm run build` compiles them)\n',
    );
  }
  const { register } = await import('tsx/esm/api');
  register();
  await import('../src/cli/main.ts');
}
