// The standby warm-up (src/runtimes/trees/warm-tree-runtime.ts) loads and runs its synthetic
// models without a problem, and a real model loaded after it still answers what XGBoost does.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { warmTreeRuntime } from '../../../src/runtimes/trees/warm-tree-runtime.ts';
import { loadTreeRuntime } from '../../../src/runtimes/trees/load-tree-runtime.ts';

const trees = fileURLToPath(new URL('../../../fixtures/trees/', import.meta.url));

test('after the warm-up, a real model loads and answers what XGBoost predicts', async () => {
  await warmTreeRuntime();
  const expected = JSON.parse(
    readFileSync(`${trees}xgb-binary-logistic.expected.json`, 'utf8'),
  ) as { rows: (number | null)[][]; predictions: number[] };
  const outcome = await loadTreeRuntime({
    modelDir: trees,
    format: 'xgboost',
    files: ['xgb-binary-logistic.ubj'],
    schema: null,
    config: {},
  });
  assert.ok(outcome.ok, outcome.ok ? '' : outcome.reason);
  const rows = expected.rows.map((row) => row.map((x) => x ?? Number.NaN));
  const answer = await outcome.runtime.infer({
    inputs: [
      {
        name: 'input',
        datatype: 'FP32',
        shape: [rows.length, 8],
        data: Float32Array.from(rows.flat()),
      },
    ],
  });
  assert.ok(answer.ok);
  const got = Array.from(answer.outputs[0]!.data as Float32Array);
  expected.predictions.forEach((p, i) => assert.ok(Math.abs(got[i]! - p) < 1e-6, `row ${i}`));
  await outcome.runtime.unload();
});
