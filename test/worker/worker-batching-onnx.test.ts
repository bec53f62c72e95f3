// A real worker (startWorker, in process) serving fixtures/onnx/mlp.onnx with batching on:
// concurrent requests of 1–3 rows come back with torch's reference outputs (within 1e-4),
// from fewer model executions than requests; the adaptive batcher (the default) gives the
// same answers whichever mode it settles in, and shows its choice in the metrics.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { BatchingConfig } from '../../src/store/serving-records.ts';
import { startWorker, type RunningWorker } from '../../src/worker/start-worker.ts';
import type { WorkerEvent } from '../../src/worker/worker-spec.ts';
import { readExpected, tolerance } from '../runtimes/onnx/onnx-fixtures.ts';
import { mlpWorkerSpec } from './mlp-worker-spec.ts';

const expected = readExpected('mlp');
const input = expected.inputs[0];
const output = expected.outputs[0];
const width = input?.shape[1] ?? 0;
const outWidth = output?.shape[1] ?? 0;
const totalRows = input?.shape[0] ?? 0;

async function start(batching: BatchingConfig | null): Promise<RunningWorker> {
  const { spec } = await mlpWorkerSpec({ batching });
  const events: WorkerEvent[] = [];
  const worker = await startWorker(spec, (event) => events.push(event));
  await worker.loaded;
  assert.equal(worker.state.phase, 'ready', JSON.stringify(events));
  return worker;
}

/** The fixture's rows cut into requests of 1, 2 or 3 rows. */
function requests(): { first: number; rows: number }[] {
  const out: { first: number; rows: number }[] = [];
  for (let first = 0, i = 0; first < totalRows; i++) {
    const rows = Math.min(1 + (i % 3), totalRows - first);
    out.push({ first, rows });
    first += rows;
  }
  return out;
}

async function inferRows(worker: RunningWorker, first: number, rows: number): Promise<number[]> {
  const data = (input?.data ?? []).slice(first * width, (first + rows) * width);
  const response = await fetch(`${worker.url}/v2/models/mlp/infer`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      inputs: [{ name: input?.name, datatype: 'FP32', shape: [rows, width], data }],
    }),
  });
  const body = (await response.json()) as { outputs: { shape: number[]; data: number[] }[] };
  assert.equal(response.status, 200, JSON.stringify(body));
  assert.deepEqual(body.outputs[0]?.shape, [rows, outWidth]);
  return body.outputs[0]?.data ?? [];
}

function checkRows(actual: number[], first: number, rows: number): void {
  const reference = (output?.data ?? []).slice(first * outWidth, (first + rows) * outWidth);
  assert.equal(actual.length, reference.length);
  actual.forEach((value, i) =>
    assert.ok(Math.abs(value - Number(reference[i])) <= tolerance, `row ${first}: ${value}`),
  );
}

async function counter(worker: RunningWorker, name: string): Promise<number> {
  const text = await (await fetch(`${worker.url}/metrics`)).text();
  let total = 0;
  for (const line of text.split('\n'))
    if (line.startsWith(`${name}{`)) total += Number(line.split(' ').at(-1));
  return total;
}

void test('batched concurrent requests give the reference outputs from fewer executions', async (t) => {
  // One batch of exactly all the rows: it leaves when full, whatever the arrival order.
  const worker = await start({ maxBatchSize: totalRows, maxDelayMicros: 60_000_000, maxQueue: 64 });
  t.after(() => worker.close());
  const plan = requests();
  const results = await Promise.all(plan.map(({ first, rows }) => inferRows(worker, first, rows)));
  plan.forEach(({ first, rows }, i) => checkRows(results[i] ?? [], first, rows));
  const executions = await counter(worker, 'kiln_worker_batch_executions_total');
  const served = await counter(worker, 'kiln_worker_requests_total');
  assert.equal(served, plan.length);
  assert.equal(executions, 1);
  assert.ok(executions < served);
  const text = await (await fetch(`${worker.url}/metrics`)).text();
  assert.match(text, new RegExp(`kiln_worker_batch_size_sum\\{[^}]*\\} ${totalRows}`));
});

void test('unbatched, the same requests give the same outputs, one execution each', async (t) => {
  const worker = await start(null);
  t.after(() => worker.close());
  const plan = requests();
  const results = await Promise.all(plan.map(({ first, rows }) => inferRows(worker, first, rows)));
  plan.forEach(({ first, rows }, i) => checkRows(results[i] ?? [], first, rows));
  assert.equal(await counter(worker, 'kiln_worker_batch_executions_total'), plan.length);
});

void test('close() drains: requests queued in the batcher are run and answered', async () => {
  const worker = await start({ maxBatchSize: 64, maxDelayMicros: 60_000_000, maxQueue: 64 });
  const pending = inferRows(worker, 0, 2);
  for (let turn = 0; turn < 200_000 && worker.state.inflight === 0; turn++)
    await new Promise((resolve) => setImmediate(resolve));
  for (let turn = 0; turn < 200_000 && (worker.state.batcher?.depth ?? 0) === 0; turn++)
    await new Promise((resolve) => setImmediate(resolve));
  assert.equal(worker.state.batcher?.depth, 1);
  const closed = worker.close();
  checkRows(await pending, 0, 2);
  await closed;
});

void test('adaptive batching (the default) gives the reference outputs in every mode it runs', async (t) => {
  // No delay (the ONNX default): the cold-start probe joins what queues, then the batcher
  // decides from what it measured; answers must not depend on that.
  const worker = await start({ maxBatchSize: 32, maxDelayMicros: 0, maxQueue: 64 });
  t.after(() => worker.close());
  const plan = requests();
  // Rounds until the cold-start probe has measured both modes (a stretch lasts at least 8
  // batches and 20 ms), then the answers in the mode it chose too.
  const measured = (text: string, mode: string): boolean =>
    new RegExp(`kiln_worker_batch_row_cost_seconds\\{[^}]*mode="${mode}"[^}]*\\} [0-9.e-]+\n`).test(
      text,
    );
  let rounds = 0;
  let text = '';
  for (let after = 0; rounds < 2000 && after < 3; rounds++) {
    const results = await Promise.all(
      plan.map(({ first, rows }) => inferRows(worker, first, rows)),
    );
    plan.forEach(({ first, rows }, i) => checkRows(results[i] ?? [], first, rows));
    text = await (await fetch(`${worker.url}/metrics`)).text();
    if (measured(text, 'gather') && measured(text, 'alone')) after++;
  }
  assert.ok(measured(text, 'gather') && measured(text, 'alone'), 'a mode was never measured');
  assert.equal(await counter(worker, 'kiln_worker_requests_total'), plan.length * rounds);
  assert.match(text, /kiln_worker_batch_gathering\{[^}]*endpoint="mlp"[^}]*\} [01]\n/);
});

void test('adaptive: false keeps the fixed rule: one batch of all the rows', async (t) => {
  const worker = await start({
    maxBatchSize: totalRows,
    maxDelayMicros: 60_000_000,
    maxQueue: 64,
    adaptive: false,
  });
  t.after(() => worker.close());
  const plan = requests();
  const results = await Promise.all(plan.map(({ first, rows }) => inferRows(worker, first, rows)));
  plan.forEach(({ first, rows }, i) => checkRows(results[i] ?? [], first, rows));
  assert.equal(await counter(worker, 'kiln_worker_batch_executions_total'), 1);
  const text = await (await fetch(`${worker.url}/metrics`)).text();
  assert.doesNotMatch(text, /kiln_worker_batch_gathering\{/);
});
