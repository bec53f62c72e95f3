// The worker-load poller: sums per endpoint over the ready replicas that answered (CPU as
// 0..1 utilizations per replica), only for watched endpoints, nothing stale given out; and
// against a real worker server, the queue a held runtime builds up.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Clock } from '../../../src/core/clock.ts';
import {
  WorkerLoadPoller,
  type PolledReplica,
} from '../../../src/control/autoscale/worker-load-poller.ts';
import type { WorkerLoadReport } from '../../../src/protocol/scaling/worker-load-report.ts';
import { until } from '../../helpers/until.ts';
import { startStub } from '../../worker/stub-worker.ts';

const report = (more: Partial<WorkerLoadReport> = {}): WorkerLoadReport => ({
  inFlight: 0,
  queueDepth: 0,
  cpu: 0,
  threads: 1,
  accelerator: null,
  custom: {},
  ...more,
});

class FakeWorkers {
  /** What each URL answers: a report, something else, or a thrown error. */
  readonly answers = new Map<string, unknown>();
  readonly asked: string[] = [];
  readonly fetchLoad = (url: string, signal: AbortSignal): Promise<unknown> => {
    this.asked.push(url);
    const answer = this.answers.get(url.replace('/kiln/v1/load', ''));
    if (answer === 'hang')
      return new Promise((_, reject) =>
        signal.addEventListener('abort', () => reject(new Error('aborted'))),
      );
    if (answer instanceof Error) return Promise.reject(answer);
    return Promise.resolve(answer);
  };
}

function poller(
  replicas: Record<string, readonly PolledReplica[]>,
  workers: FakeWorkers,
  clock: Clock,
): WorkerLoadPoller {
  return new WorkerLoadPoller({
    readyReplicas: (endpoint) => replicas[endpoint] ?? [],
    clock,
    fetchLoad: workers.fetchLoad,
    timeoutMs: 50,
  });
}

test('sums over the replicas that answered: CPU per thread, accelerator, custom by name', async () => {
  const workers = new FakeWorkers();
  workers.answers.set('http://a1', report({ queueDepth: 3, cpu: 1, threads: 4, custom: { t: 5 } }));
  workers.answers.set('http://a2', report({ queueDepth: 1, cpu: 0.5, accelerator: 0.25 }));
  // Busier than its threads (GC): counts as fully busy, not more.
  workers.answers.set('http://a3', report({ cpu: 1.3, custom: { t: 2, k: 7 } }));
  workers.answers.set('http://b1', report({ queueDepth: 9 }));
  const clock = { now: () => 1_000 };
  const p = poller(
    {
      a: [
        { id: 'a1', url: 'http://a1' },
        { id: 'a2', url: 'http://a2' },
        { id: 'a3', url: 'http://a3' },
      ],
      b: [{ id: 'b1', url: 'http://b1' }],
    },
    workers,
    clock,
  );
  p.watch(new Set(['a']));
  await p.pollOnce();
  assert.deepEqual(p.latest('a'), {
    atMs: 1_000,
    replicas: 3,
    queueDepth: 4,
    cpu: 0.25 + 0.5 + 1,
    threads: (4 + 1 + 1) / 3, // per replica, the mean
    accelerator: 0.25,
    custom: { t: 7, k: 7 },
  });
  assert.equal(p.latest('b'), null, 'not watched: not polled');
  assert.ok(!workers.asked.some((url) => url.startsWith('http://b1')));
  assert.deepEqual(workers.asked.sort(), [
    'http://a1/kiln/v1/load',
    'http://a2/kiln/v1/load',
    'http://a3/kiln/v1/load',
  ]);
});

test('a replica that hangs, fails or answers no report is left out of the round', async () => {
  const workers = new FakeWorkers();
  workers.answers.set('http://r1', report({ queueDepth: 2, cpu: 0.5 }));
  workers.answers.set('http://r2', 'hang');
  workers.answers.set('http://r3', new Error('ECONNREFUSED'));
  workers.answers.set('http://r4', { running: 1, waiting: 4 }); // a router-only body
  const p = poller(
    { e: ['r1', 'r2', 'r3', 'r4'].map((id) => ({ id, url: `http://${id}` })) },
    workers,
    { now: () => 5 },
  );
  p.watch(new Set(['e']));
  await p.pollOnce();
  const sums = p.latest('e');
  assert.equal(sums?.replicas, 1);
  assert.equal(sums?.queueDepth, 2);
  assert.equal(sums?.cpu, 0.5);
  assert.equal(sums?.accelerator, null, 'no replica has one');
});

test('no ready replica: nothing reported; stale sums and unwatched endpoints give null', async () => {
  const workers = new FakeWorkers();
  workers.answers.set('http://r1', report({ queueDepth: 1 }));
  const replicas: Record<string, PolledReplica[]> = { e: [], f: [{ id: 'r1', url: 'http://r1' }] };
  let now = 0;
  const p = poller(replicas, workers, { now: () => now });
  p.watch(new Set(['e', 'f']));
  await p.pollOnce();
  assert.deepEqual(p.latest('e'), {
    atMs: 0,
    replicas: 0,
    queueDepth: null,
    cpu: null,
    threads: null,
    accelerator: null,
    custom: {},
  });
  assert.equal(p.latest('f')?.queueDepth, 1);
  now = 3_000; // 3 × the interval: still given out
  assert.equal(p.latest('f')?.queueDepth, 1);
  now = 3_001;
  assert.equal(p.latest('f'), null, 'stale');
  await p.pollOnce();
  assert.equal(p.latest('f')?.atMs, 3_001);
  p.watch(new Set(['e']));
  assert.equal(p.latest('f'), null, 'unwatched: dropped at once');
  const asked = workers.asked.length;
  await p.pollOnce();
  assert.equal(workers.asked.length, asked, 'and no longer polled');
});

test('start polls in rounds until close; close ends a round that waits on a worker', async () => {
  const workers = new FakeWorkers();
  workers.answers.set('http://r1', report());
  const p = new WorkerLoadPoller({
    readyReplicas: () => [{ id: 'r1', url: 'http://r1' }],
    clock: { now: () => Date.now() },
    fetchLoad: workers.fetchLoad,
    intervalMs: 10,
  });
  p.watch(new Set(['e']));
  p.start();
  await until(() => workers.asked.length >= 3, 'three rounds');
  workers.answers.set('http://r1', 'hang'); // the default timeout is 800 ms
  const before = workers.asked.length;
  await until(() => workers.asked.length > before, 'a round waiting on the worker');
  await p.close();
  const after = workers.asked.length;
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.equal(workers.asked.length, after, 'no round after close');
});

test('against a real worker server: the queue behind a busy runtime', async (t) => {
  const harness = await startStub(null, 3, { config: { intraOpThreads: 1 } });
  t.after(() => harness.close());
  const p = new WorkerLoadPoller({
    readyReplicas: () => [{ id: 'm-1', url: harness.url }],
    clock: { now: () => Date.now() },
  });
  t.after(() => p.close());
  p.watch(new Set(['m']));
  await p.pollOnce();
  assert.equal(p.latest('m')?.queueDepth, 0);
  assert.equal(p.latest('m')?.replicas, 1);
  const body = JSON.stringify({
    inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 2], data: [1, 2] }],
  });
  const answers = [1, 2, 3].map(() =>
    fetch(`${harness.url}/v2/models/m/infer`, { method: 'POST', body }),
  );
  await until(() => harness.runtime.executions.length === 3, 'three executions held');
  await p.pollOnce();
  assert.equal(p.latest('m')?.queueDepth, 2);
  harness.runtime.release();
  for (const answer of await Promise.all(answers)) assert.equal(answer.status, 200);
});
