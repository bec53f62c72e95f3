#!/usr/bin/env node
// The `kiln` command. Runs the TypeScript sources directly through tsx, so `npx kiln` works
// from a checkout without a build step.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli/main.ts');
