// A worker's load for the autoscaler: the meter's rates over its window (fake clock and CPU
// counter: exact values), the threads a worker computes on, and `GET /kiln/v1/load` on a
// real worker server (counts of requests in flight and queued, held by a stub runtime).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { availableParallelism } from 'node:os';
import {
  parseWorkerLoadReport,
  type WorkerLoadReport,
} from '../../src/protocol/scaling/worker-load-report.ts';
import { WorkerLoadMeter, workerThreads } from '../../src/worker/worker-load.ts';
import type { WorkerSpec } from '../../src/worker/worker-spec.ts';
import { until } from '../helpers/until.ts';
import { startStub } from './stub-worker.ts';

function fakeMeter(): { meter: WorkerLoadMeter; at: { ms: number; cpuMicros: number } } {
  const at = { ms: 10_000, cpuMicros: 0 };
  const meter = new WorkerLoadMeter({
    nowMs: () => at.ms,
    cpuMicros: () => at.cpuMicros,
    windowMs: 1000,
    intervalMs: 250,
  });
  return { meter, at };
}

test('CPU in cores over the newest window at least a second long, ending now', () => {
  const { meter, at } = fakeMeter();
  assert.equal(meter.cpuCores(), 0, 'no sample yet');
  // Half a core for 1 s, then two cores for 0.5 s; a sample every 250 ms.
  for (let i = 0; i < 4; i++) {
    meter.sample();
    at.ms += 250;
    at.cpuMicros += 125_000;
  }
  meter.sample(); // at 11 000, cpu 500 000
  assert.equal(meter.cpuCores(), 0.5); // base: the sample at 10 000
  for (let i = 0; i < 2; i++) {
    at.ms += 250;
    at.cpuMicros += 500_000;
    meter.sample();
  }
  // Now 11 500: base is the sample at 10 500 (cpu 250 000): 1.25 s of CPU in 1 s.
  assert.equal(meter.cpuCores(), 1.25);
  // Read between samples: the window ends now, 11 600 (cpu 1 600 000), base still 10 500.
  at.ms += 100;
  at.cpuMicros += 100_000;
  assert.equal(meter.cpuCores(), (1_600_000 - 250_000) / 1000 / 1100);
});

test('a young meter measures from its first sample; old samples are dropped; reset', () => {
  const { meter, at } = fakeMeter();
  meter.sample();
  at.ms += 400;
  at.cpuMicros += 400_000;
  assert.equal(meter.cpuCores(), 1, 'since the only sample, 400 ms ago');
  // Long idle: only the last `keep` samples stay, so the window stays about a second.
  for (let i = 0; i < 100; i++) {
    at.ms += 250;
    meter.sample();
  }
  at.cpuMicros += 300_000;
  assert.equal(meter.cpuCores(), 0.3);
  // Reset (the worker became ready: its load is no serving load): measured from what follows.
  meter.reset();
  assert.equal(meter.cpuCores(), 0);
  meter.sample();
  at.ms += 50;
  at.cpuMicros += 40_000;
  assert.equal(meter.cpuCores(), 0, 'under 100 ms: too short to tell');
  at.ms += 450;
  at.cpuMicros += 10_000;
  assert.equal(meter.cpuCores(), 0.1);
});

test('a sampled counter gives a rate per second over the window; 0 without two samples', () => {
  const { meter, at } = fakeMeter();
  assert.equal(meter.rate('tokens'), 0);
  meter.sample({ tokens: 0 });
  assert.equal(meter.rate('tokens'), 0);
  for (let i = 1; i <= 6; i++) {
    at.ms += 250;
    meter.sample({ tokens: i * 50 }); // 200 tokens/s
  }
  assert.equal(meter.rate('tokens'), 200);
  at.ms += 250;
  meter.sample({ tokens: 300 }); // stopped: 300 − 150 (4 samples back) over 1 s
  assert.equal(meter.rate('tokens'), 150);
  assert.equal(meter.rate('absent'), 0);
});

test('threads: one for trees, ONNX intra-op threads (0: one per core), LLM engine threads', () => {
  const spec = { format: 'xgboost', config: {} } as unknown as WorkerSpec;
  assert.equal(workerThreads(spec), 1);
  assert.equal(workerThreads({ ...spec, format: 'onnx', config: { intraOpThreads: 3 } }), 3);
  assert.equal(workerThreads({ ...spec, format: 'onnx' }), availableParallelism());
  assert.equal(workerThreads({ ...spec, format: 'hf-llm', llm: { threads: 2 } }), 2);
  assert.equal(workerThreads({ ...spec, format: 'hf-llm' }), 1);
});

test('reports are read whole: a missing or negative count is no report', () => {
  const good = { inFlight: 2, queueDepth: 1, cpu: 0.5, threads: 1, accelerator: null, custom: {} };
  assert.deepEqual(parseWorkerLoadReport(good), good);
  assert.deepEqual(
    parseWorkerLoadReport({ ...good, running: 3, custom: { a: 1, b: 'x', c: null } }),
    { ...good, custom: { a: 1 } },
  );
  assert.equal(parseWorkerLoadReport({ ...good, accelerator: 0.25 })?.accelerator, 0.25);
  for (const bad of [
    null,
    [],
    'x',
    { ...good, inFlight: -1 },
    { ...good, queueDepth: undefined },
    { ...good, cpu: Number.NaN },
    { ...good, threads: 0 },
    { ...good, accelerator: 'busy' },
  ])
    assert.equal(parseWorkerLoadReport(bad), null, JSON.stringify(bad));
});

const body = JSON.stringify({
  inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 2], data: [1, 2] }],
});

async function loadOf(url: string): Promise<WorkerLoadReport> {
  const response = await fetch(`${url}/kiln/v1/load`);
  assert.equal(response.status, 200);
  const report = parseWorkerLoadReport(await response.json());
  assert.ok(report !== null, 'a well-formed report');
  return report;
}

test('GET /kiln/v1/load: in flight and queued behind a busy runtime, no accelerator', async (t) => {
  // No batcher: a request beyond the worker's one thread waits.
  const harness = await startStub(null, 3, { config: { intraOpThreads: 1 } });
  t.after(() => harness.close());
  const idle = await loadOf(harness.url);
  assert.deepEqual(
    { ...idle, cpu: 0 },
    { inFlight: 0, queueDepth: 0, cpu: 0, threads: 1, accelerator: null, custom: {} },
  );
  assert.ok(idle.cpu >= 0);
  const answers = [1, 2, 3].map(() =>
    fetch(`${harness.url}/v2/models/m/infer`, { method: 'POST', body }),
  );
  await until(() => harness.runtime.executions.length === 3, 'three executions held');
  const busy = await loadOf(harness.url);
  assert.equal(busy.inFlight, 3);
  assert.equal(busy.queueDepth, 2);
  harness.runtime.release();
  for (const answer of await Promise.all(answers)) assert.equal(answer.status, 200);
  assert.equal((await loadOf(harness.url)).inFlight, 0);
});

test('GET /kiln/v1/load with batching: the batcher queue is the queue depth', async (t) => {
  const harness = await startStub({ maxBatchSize: 1, maxDelayMicros: 0, maxQueue: 100 }, 1);
  t.after(() => harness.close());
  const answers = [1, 2, 3, 4].map(() =>
    fetch(`${harness.url}/v2/models/m/infer`, { method: 'POST', body }),
  );
  // One batch runs (held), the other three wait in the queue.
  await until(() => harness.state.batcher?.depth === 3, 'three queued');
  const busy = await loadOf(harness.url);
  assert.equal(busy.inFlight, 4);
  assert.equal(busy.queueDepth, 3);
  harness.runtime.release();
  for (const answer of await Promise.all(answers)) assert.equal(answer.status, 200);
  const after = await loadOf(harness.url);
  assert.equal(after.queueDepth, 0);
  assert.equal(after.inFlight, 0);
});

test('the CPU window starts when the worker is ready: loading is no serving load', async (t) => {
  const harness = await startStub(null, 0, { config: { intraOpThreads: 1 } });
  t.after(() => harness.close());
  harness.state.phase = 'loading';
  // A load that keeps this process's CPU busy well past the meter's first samples.
  const until = performance.now() + 300;
  while (performance.now() < until) Math.sqrt(Math.random());
  harness.state.phase = 'ready';
  // The first report after ready starts the window: nothing measured yet.
  assert.equal((await loadOf(harness.url)).cpu, 0);
});
