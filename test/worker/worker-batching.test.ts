// The worker's HTTP server with batching on, over a stub runtime whose executions the test
// holds and releases: queue-full (429 + Retry-After), deadlines (504, never run), shape keys,
// priorities, and a draining worker running what it accepted. Waits are on state the test can
// see (calls made, queue depth), never on time.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startStub, type Harness } from './stub-worker.ts';

interface Reply {
  readonly status: number;
  readonly headers: Headers;
  readonly body: { outputs?: { data: number[] }[]; code?: string; error?: string };
}

async function infer(
  harness: Harness,
  rows: number[][],
  headers: Record<string, string> = {},
): Promise<Reply> {
  const response = await fetch(`${harness.url}/v2/models/m/infer`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({
      inputs: [
        {
          name: 'x',
          datatype: 'FP32',
          shape: [rows.length, rows[0]?.length ?? 0],
          data: rows.flat(),
        },
      ],
    }),
  });
  return {
    status: response.status,
    headers: response.headers,
    body: (await response.json()) as Reply['body'],
  };
}

/** Waits (event-loop turns, not time) until `condition` holds. */
async function until(condition: () => boolean, what: string): Promise<void> {
  for (let turn = 0; turn < 200_000; turn++) {
    if (condition()) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
  assert.fail(`never happened: ${what}`);
}

async function metricValue(harness: Harness, name: string): Promise<number> {
  const text = await harness.metrics.registry.metrics();
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `));
  return line === undefined ? 0 : Number(line.split(' ').at(-1));
}

void test('a full queue sheds with 429 KILN_QUEUE_FULL and Retry-After; accepted ones finish', async (t) => {
  const harness = await startStub({ maxBatchSize: 1, maxDelayMicros: 0, maxQueue: 1 });
  t.after(() => harness.close());
  const first = infer(harness, [[1]]);
  await until(() => harness.runtime.executions.length === 1, 'first batch running');
  const second = infer(harness, [[2]]);
  await until(() => harness.state.batcher?.depth === 1, 'second request queued');
  const shed = await infer(harness, [[3]]);
  assert.equal(shed.status, 429);
  assert.equal(shed.body.code, 'KILN_QUEUE_FULL');
  assert.equal(shed.headers.get('retry-after'), '1');
  harness.runtime.release();
  assert.deepEqual((await first).body.outputs?.[0]?.data, [2]);
  assert.deepEqual((await second).body.outputs?.[0]?.data, [4]);
  assert.deepEqual(harness.runtime.executions, [[[1]], [[2]]]);
  assert.equal(await metricValue(harness, 'kiln_worker_shed_total'), 1);
  assert.equal(harness.state.inflight, 0);
});

void test('a request past its deadline gets 504 KILN_DEADLINE_EXCEEDED and is never run', async (t) => {
  const harness = await startStub({ maxBatchSize: 1, maxDelayMicros: 0, maxQueue: 8 });
  t.after(() => harness.close());
  const already = await infer(harness, [[7]], { 'kiln-timeout-ms': '0' });
  assert.equal(already.status, 504);
  assert.equal(already.body.code, 'KILN_DEADLINE_EXCEEDED');
  assert.equal(harness.runtime.executions.length, 0);

  const first = infer(harness, [[1]]);
  await until(() => harness.runtime.executions.length === 1, 'first batch running');
  const late = await infer(harness, [[42]], { 'kiln-timeout-ms': '1' }); // waits behind it
  assert.equal(late.status, 504);
  harness.runtime.release();
  assert.equal((await first).status, 200);
  assert.deepEqual(harness.runtime.executions, [[[1]]]); // 42 never reached the model
  assert.equal(await metricValue(harness, 'kiln_worker_expired_total'), 2);
});

void test('unbatched: an already-expired deadline is refused too; bad headers are 400', async (t) => {
  const harness = await startStub(null, 0);
  t.after(() => harness.close());
  assert.equal((await infer(harness, [[1]], { 'kiln-timeout-ms': '0' })).status, 504);
  assert.equal((await infer(harness, [[1]], { 'kiln-timeout-ms': 'soon' })).status, 400);
  assert.equal((await infer(harness, [[1]], { 'kiln-priority': 'urgent' })).status, 400);
  const ok = await infer(harness, [[1, 2]], { 'kiln-timeout-ms': '60000' });
  assert.deepEqual(ok.body.outputs?.[0]?.data, [2, 4]);
  assert.deepEqual(harness.runtime.executions, [[[1, 2]]]);
});

void test('requests of different shapes in the same window are batched separately', async (t) => {
  const harness = await startStub({ maxBatchSize: 8, maxDelayMicros: 0, maxQueue: 16 });
  t.after(() => harness.close());
  const blocker = infer(harness, [[0, 0]]);
  await until(() => harness.runtime.executions.length === 1, 'blocker running');
  const replies: Promise<Reply>[] = [];
  const send = async (rows: number[][], depth: number): Promise<void> => {
    replies.push(infer(harness, rows));
    await until(() => harness.state.batcher?.depth === depth, `${depth} queued`);
  };
  await send([[1, 1]], 1);
  await send([[2, 2, 2]], 2);
  await send(
    [
      [3, 3],
      [4, 4],
    ],
    3,
  );
  await send([[5, 5, 5]], 4);
  harness.runtime.release();
  const [a1, b1, a2, b2] = await Promise.all(replies);
  assert.equal((await blocker).status, 200);
  assert.deepEqual(harness.runtime.executions, [
    [[0, 0]],
    [
      [1, 1],
      [3, 3],
      [4, 4],
    ], // width 2: one execution
    [
      [2, 2, 2],
      [5, 5, 5],
    ], // width 3: another
  ]);
  assert.deepEqual(a1?.body.outputs?.[0]?.data, [2, 2]);
  assert.deepEqual(a2?.body.outputs?.[0]?.data, [6, 6, 8, 8]);
  assert.deepEqual(b1?.body.outputs?.[0]?.data, [4, 4, 4]);
  assert.deepEqual(b2?.body.outputs?.[0]?.data, [10, 10, 10]);
  assert.equal(await metricValue(harness, 'kiln_worker_batch_executions_total'), 3);
});

void test('kiln-priority: high joins the next batch ahead of earlier normal requests', async (t) => {
  const harness = await startStub({ maxBatchSize: 2, maxDelayMicros: 0, maxQueue: 16 });
  t.after(() => harness.close());
  const replies = [infer(harness, [[0]])];
  await until(() => harness.runtime.executions.length === 1, 'blocker running');
  const sends: [number, Record<string, string>][] = [
    [1, {}],
    [2, {}],
    [3, { 'kiln-priority': 'high' }],
  ];
  for (const [i, [value, headers]] of sends.entries()) {
    replies.push(infer(harness, [[value]], headers));
    await until(() => harness.state.batcher?.depth === i + 1, `${i + 1} queued`);
  }
  harness.runtime.release();
  await Promise.all(replies);
  assert.deepEqual(harness.runtime.executions, [[[0]], [[3], [1]], [[2]]]);
});

void test('a draining worker refuses new requests (503) but runs every queued one', async (t) => {
  const harness = await startStub({ maxBatchSize: 8, maxDelayMicros: 60_000_000, maxQueue: 16 });
  t.after(() => harness.close());
  const first = infer(harness, [[1]]);
  await until(() => harness.state.batcher?.depth === 1, 'first queued');
  const second = infer(harness, [[2]]);
  await until(() => harness.state.batcher?.depth === 2, 'second queued');
  assert.equal(harness.state.inflight, 2);
  // What close() does first: stop accepting, flush the queue without its 60 s delay.
  harness.state.phase = 'draining';
  harness.state.batcher?.drain();
  const refused = await infer(harness, [[3]]);
  assert.equal(refused.status, 503);
  assert.equal(refused.body.code, 'KILN_MODEL_NOT_READY');
  harness.runtime.release();
  assert.deepEqual((await first).body.outputs?.[0]?.data, [2]);
  assert.deepEqual((await second).body.outputs?.[0]?.data, [4]);
  assert.equal(harness.state.inflight, 0);
});
