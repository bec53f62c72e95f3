// The load monitor polls a replica only while its endpoint has traffic, one poll at a time,
// and stops for idle endpoints, retired replicas and a closing gateway. A fake clock says
// when traffic was; a fake pool answers the polls.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Pool } from 'undici';
import { LlmLoadMonitor, llmLoadPath } from '../../src/gateway/llm-load-monitor.ts';
import { LlmReplicaLoad } from '../../src/gateway/llm-replica-load.ts';
import { until } from '../helpers/until.ts';

interface FakeTarget {
  readonly pool: Pool;
  readonly pathPrefix: string;
  readonly llmLoad: LlmReplicaLoad;
  retired: boolean;
  polls: number;
  /** Polls in progress at once, at most. */
  maxConcurrent: number;
  paths: string[];
}

function target(running = 2, pathPrefix = ''): FakeTarget {
  let active = 0;
  const fake: FakeTarget = {
    pathPrefix,
    llmLoad: new LlmReplicaLoad(),
    retired: false,
    polls: 0,
    maxConcurrent: 0,
    paths: [],
    pool: {
      request: async (options: { path: string }) => {
        active += 1;
        fake.maxConcurrent = Math.max(fake.maxConcurrent, active);
        fake.polls += 1;
        fake.paths.push(options.path);
        await new Promise((resolve) => setImmediate(resolve));
        active -= 1;
        const report = { running, waiting: 1, kvBlocksUsed: 1, kvBlocksTotal: 4 };
        return { statusCode: 200, body: { text: () => Promise.resolve(JSON.stringify(report)) } };
      },
    } as unknown as Pool,
  };
  return fake;
}

test('polls run while there is traffic, one at a time, and bring reports back', async () => {
  let nowMs = 0;
  const monitor = new LlmLoadMonitor({
    intervalMs: 1,
    idleAfterMs: 100,
    timeoutMs: 50,
    now: () => nowMs,
  });
  const replica = target(2, '/base');
  replica.llmLoad.noteSent();
  monitor.noteTraffic([replica]);
  monitor.noteTraffic([replica]); // already polling: no second loop
  await until(() => replica.polls >= 5, 'a few polls');
  assert.equal(replica.maxConcurrent, 1);
  assert.equal(replica.paths[0], `/base${llmLoadPath}`);
  assert.equal(replica.llmLoad.report?.running, 2);
  assert.equal(replica.llmLoad.report?.kvUtilization, 0.25);
  // The request sent before the polls left is in their reports.
  assert.equal(replica.llmLoad.sentSinceReport, 0);
  // No traffic for longer than idleAfterMs: the loop ends.
  nowMs = 1_000;
  await until(() => !replica.llmLoad.polling, 'polling to stop when idle');
  const polls = replica.polls;
  // Traffic again: polling resumes.
  monitor.noteTraffic([replica]);
  await until(() => replica.polls > polls, 'polling to resume');
  monitor.close();
  await until(() => !replica.llmLoad.polling, 'polling to stop at close');
});

test('a retired replica is polled no more, and a closed monitor starts nothing', async () => {
  const monitor = new LlmLoadMonitor({
    intervalMs: 1,
    idleAfterMs: 10_000,
    timeoutMs: 50,
    now: () => 0,
  });
  const replica = target();
  monitor.noteTraffic([replica]);
  await until(() => replica.polls >= 2, 'polls');
  replica.retired = true;
  await until(() => !replica.llmLoad.polling, 'polling to stop once retired');
  monitor.close();
  const fresh = target();
  monitor.noteTraffic([fresh]);
  assert.equal(fresh.llmLoad.polling, false);
  assert.equal(fresh.polls, 0);
});
