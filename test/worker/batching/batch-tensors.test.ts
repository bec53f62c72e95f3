// Joining requests along dim 0 and splitting outputs back; the shape key; the runtime-bound
// executor (one execution per batch, per-request retry on failure, no mis-split).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Tensor } from '../../../src/core/tensor.ts';
import type { InferOutcome, InferRequest } from '../../../src/runtimes/runtime.ts';
import { cutRows } from '../../../src/worker/batching/batch-policy.ts';
import {
  batchShape,
  concatRequests,
  splitOutputs,
} from '../../../src/worker/batching/batch-tensors.ts';
import { joinsAlongRows, runBatch } from '../../../src/worker/batching/infer-batcher.ts';

const fp32 = (rows: number[][], name = 'x'): Tensor => ({
  name,
  datatype: 'FP32',
  shape: [rows.length, rows[0]?.length ?? 0],
  data: Float32Array.from(rows.flat()),
});

void test('shape key: same names, datatypes, non-batch dims, outputs and parameters', () => {
  const a = batchShape({ inputs: [fp32([[1, 2]])] });
  const b = batchShape({
    inputs: [
      fp32([
        [3, 4],
        [5, 6],
      ]),
    ],
  });
  assert.equal(a?.key, b?.key);
  assert.equal(a?.rows, 1);
  assert.equal(b?.rows, 2);
  const keys = [
    batchShape({ inputs: [fp32([[1, 2, 3]])] }), // another non-batch dim
    batchShape({ inputs: [fp32([[1, 2]], 'y')] }), // another name
    batchShape({ inputs: [{ ...fp32([[1, 2]]), datatype: 'FP64', data: Float64Array.of(1, 2) }] }),
    batchShape({ inputs: [fp32([[1, 2]])], outputs: ['probabilities'] }),
    batchShape({ inputs: [fp32([[1, 2]])], parameters: { output_margin: true } }),
  ].map((s) => s?.key);
  for (const key of keys) assert.notEqual(key, a?.key);
  assert.equal(new Set(keys).size, keys.length);
  // Parameter order and input order do not matter.
  const p1 = batchShape({
    inputs: [fp32([[1]], 'u'), fp32([[2]], 'v')],
    parameters: { a: 1, b: 2 },
  });
  const p2 = batchShape({
    inputs: [fp32([[3]], 'v'), fp32([[4]], 'u')],
    parameters: { b: 2, a: 1 },
  });
  assert.equal(p1?.key, p2?.key);
});

void test('requests that cannot share a batch have no shape key', () => {
  assert.equal(batchShape({ inputs: [] }), null);
  assert.equal(batchShape({ inputs: [{ ...fp32([[1]]), shape: [] }] }), null);
  assert.equal(batchShape({ inputs: [fp32([[1]], 'u'), fp32([[1], [2]], 'v')] }), null);
});

void test('concat joins every input along dim 0, typed arrays and BYTES alike', () => {
  const bytes = (values: string[]): Tensor => ({
    name: 's',
    datatype: 'BYTES',
    shape: [values.length],
    data: values,
  });
  const int64 = (values: bigint[]): Tensor => ({
    name: 'i',
    datatype: 'INT64',
    shape: [values.length, 1],
    data: BigInt64Array.from(values),
  });
  const joined = concatRequests([
    { inputs: [fp32([[1, 2]]), bytes(['a']), int64([1n])], outputs: ['y'] },
    {
      inputs: [
        fp32([
          [3, 4],
          [5, 6],
        ]),
        int64([2n, 3n]),
        bytes(['b', 'c']),
      ],
      outputs: ['y'],
    },
  ]);
  assert.deepEqual(joined.outputs, ['y']);
  const [x, s, i] = joined.inputs;
  assert.deepEqual(x?.shape, [3, 2]);
  assert.ok(x?.data instanceof Float32Array);
  assert.deepEqual([...x?.data], [1, 2, 3, 4, 5, 6]);
  assert.deepEqual(s?.shape, [3]);
  assert.deepEqual(s?.data, ['a', 'b', 'c']);
  assert.deepEqual(i?.shape, [3, 1]);
  assert.deepEqual([...(i?.data as BigInt64Array)], [1n, 2n, 3n]);
});

void test('split cuts each output back by rows; a wrong first dimension is a failure', () => {
  const out = fp32([[1], [2], [3], [4]], 'y');
  const split = splitOutputs([out], [1, 3]);
  assert.ok(split.ok);
  assert.deepEqual(
    split.outputs.map((o) => o[0]?.shape),
    [
      [1, 1],
      [3, 1],
    ],
  );
  assert.deepEqual([...(split.outputs[1]?.[0]?.data as Float32Array)], [2, 3, 4]);
  const wrong = splitOutputs([fp32([[1], [2]], 'y')], [1, 3]);
  assert.equal(wrong.ok, false);
  const scalar = splitOutputs([{ ...out, shape: [], data: Float32Array.of(1) }], [1]);
  assert.equal(scalar.ok, false);
});

void test('cut rule: max when full, else the largest preferred size that fits, else all', () => {
  const config = { maxBatchSize: 32, maxDelayMicros: 0, maxQueue: 1, preferredBatchSizes: [8, 16] };
  assert.equal(cutRows(40, config), 32);
  assert.equal(cutRows(20, config), 16);
  assert.equal(cutRows(9, config), 8);
  assert.equal(cutRows(5, config), 5);
  assert.equal(cutRows(5, { ...config, preferredBatchSizes: [] }), 5);
});

/** A runtime that doubles its input and counts its calls; `bad` rows fail the call. */
function doubler(options: { rowsOut?: (rows: number) => number } = {}) {
  const calls: number[] = [];
  return {
    calls,
    infer(request: InferRequest): Promise<InferOutcome> {
      const x = request.inputs[0] as Tensor;
      const rows = x.shape[0] ?? 0;
      calls.push(rows);
      const data = x.data as Float32Array;
      if (data.some((v) => Number.isNaN(v)))
        return Promise.resolve({ ok: false, kind: 'invalid_input', message: 'NaN' });
      const outRows = options.rowsOut?.(rows) ?? rows;
      const out = new Float32Array(outRows);
      for (let r = 0; r < outRows; r++) out[r] = (data[r] ?? 0) * 2;
      return Promise.resolve({
        ok: true,
        outputs: [{ name: 'y', datatype: 'FP32', shape: [outRows, 1], data: out }],
      });
    },
  };
}

const req = (...values: number[]): InferRequest => ({ inputs: [fp32(values.map((v) => [v]))] });

void test('runBatch: one execution for the batch, each request gets its own rows', async () => {
  const runtime = doubler();
  const outcomes = await runBatch(runtime, [req(1), req(2, 3), req(4)]);
  assert.deepEqual(runtime.calls, [4]);
  assert.deepEqual(
    outcomes.map((o) => (o.ok ? [...(o.outputs[0]?.data as Float32Array)] : o.message)),
    [[2], [4, 6], [8]],
  );
});

void test('runBatch: a failing batch reruns each request alone, so one bad request fails only itself', async () => {
  const runtime = doubler();
  const executions: number[] = [];
  const outcomes = await runBatch(runtime, [req(1), req(Number.NaN), req(2)], true, (rows) =>
    executions.push(rows),
  );
  assert.deepEqual(runtime.calls, [3, 1, 1, 1]);
  // Every run is reported with its rows, the reruns too (they are what the metrics count).
  assert.deepEqual(executions, [3, 1, 1, 1]);
  assert.deepEqual(
    outcomes.map((o) => o.ok),
    [true, false, true],
  );
});

void test('runBatch: outputs that cannot be split by rows are not guessed at: each request runs alone', async () => {
  const runtime = doubler({ rowsOut: () => 1 }); // one output row, however many came in
  const outcomes = await runBatch(runtime, [req(1), req(2)]);
  assert.deepEqual(runtime.calls, [2, 1, 1]);
  assert.deepEqual(
    outcomes.map((o) => (o.ok ? [...(o.outputs[0]?.data as Float32Array)] : o.message)),
    [[2], [4]],
  );
});

void test('runBatch: a model whose outputs are not all batched is never joined', async () => {
  // A fixed-size output (labels [3]) next to a batched one: even a batch of exactly 3 rows
  // must not be cut into one label each.
  const model = {
    inputs: [{ name: 'x', datatype: 'FP32' as const, shape: [-1, 1] }],
    outputs: [
      { name: 'y', datatype: 'FP32' as const, shape: [-1, 1] },
      { name: 'labels', datatype: 'BYTES' as const, shape: [3] },
    ],
  };
  assert.equal(joinsAlongRows(model), false);
  assert.equal(joinsAlongRows({ ...model, outputs: [model.outputs[0]!] }), true);
  assert.equal(joinsAlongRows({ ...model, outputs: [{ ...model.outputs[0]!, shape: [] }] }), false);
  const runtime = doubler();
  const executions: number[] = [];
  const outcomes = await runBatch(
    runtime,
    [req(1), req(2), req(3)],
    joinsAlongRows(model),
    (rows) => executions.push(rows),
  );
  assert.deepEqual(runtime.calls, [1, 1, 1]);
  assert.deepEqual(executions, [1, 1, 1]);
  assert.deepEqual(
    outcomes.map((o) => (o.ok ? [...(o.outputs[0]?.data as Float32Array)] : o.message)),
    [[2], [4], [6]],
  );
});

void test('runBatch: a batch whose execution throws reruns each request alone', async () => {
  const inner = doubler();
  let calls = 0;
  const runtime = {
    infer(request: InferRequest): Promise<InferOutcome> {
      calls += 1;
      if ((request.inputs[0]?.shape[0] ?? 0) > 1) return Promise.reject(new Error('boom'));
      return inner.infer(request);
    },
  };
  const outcomes = await runBatch(runtime, [req(1), req(2)]);
  assert.equal(calls, 3);
  assert.deepEqual(
    outcomes.map((o) => o.ok),
    [true, true],
  );
});
