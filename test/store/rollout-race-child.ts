// A child process of sqlite-traffic.test.ts: opens the store on the given file, waits for the
// go file (so every child starts its write at about the same moment), then tries to create
// a canary rollout on endpoint `iris` and prints what happened as one JSON line.
//
//   node --import tsx test/store/rollout-race-child.ts DB_PATH GO_FILE ROLLOUT_ID

import { existsSync } from 'node:fs';
import { setTimeout as delay } from 'node:timers/promises';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import { KilnError } from '../../src/core/errors.ts';

const [path, goFile, id] = process.argv.slice(2);
if (path === undefined || goFile === undefined || id === undefined) {
  throw new Error('usage: rollout-race-child.ts DB_PATH GO_FILE ROLLOUT_ID');
}
const store = SqliteStore.open(path, { busyTimeoutMs: 60_000 });
console.log(JSON.stringify({ ready: id }));
// Polls for the parent's signal: a condition, not a fixed wait.
while (!existsSync(goFile)) await delay(2);
try {
  await store.updateEndpointTraffic('iris', {
    rollout: {
      create: {
        id,
        endpoint: 'iris',
        strategy: 'canary',
        baseline: { model: 'iris', version: 1 },
        canary: { model: 'iris', version: 2 },
        steps: [10, 100],
        stepIndex: -1,
        intervalMs: 60_000,
        thresholds: { maxErrorRate: 0.01, maxP99Ms: 50, minRequests: 100 },
        sliceKey: null,
        slicePath: null,
        state: 'starting',
        stepStartedAt: null,
        createdBy: `child ${id}`,
      },
    },
    event: {
      endpoint: 'iris',
      actor: `child ${id}`,
      action: 'rollout-start',
      reason: '',
      detail: null,
    },
  });
  console.log(JSON.stringify({ id, ok: true }));
} catch (error) {
  console.log(
    JSON.stringify({
      id,
      ok: false,
      code: error instanceof KilnError ? error.code : String(error),
    }),
  );
} finally {
  await store.close();
}
