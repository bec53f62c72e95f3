// KILN_V8_FLAGS: V8 flags for a gateway or worker process, set at its start through
// v8.setFlagsFromString, for flags Node refuses in NODE_OPTIONS (--single-threaded-gc,
// --no-parallel-scavenge…). An experiment's knob (bench/tail.ts compares variants with it),
// not a tuning surface: flags that only apply when the heap is created have no effect here.

import { setFlagsFromString } from 'node:v8';

export const v8FlagsEnv = 'KILN_V8_FLAGS';

export function applyV8FlagsFromEnv(env: NodeJS.ProcessEnv = process.env): void {
  const flags = env[v8FlagsEnv];
  if (flags !== undefined && flags.trim() !== '') setFlagsFromString(flags);
}
