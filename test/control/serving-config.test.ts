// Serving config: the deploy body's batching/timeout/concurrency fields (bounds, partial
// batching completed, null = off) and the per-runtime defaults a worker is launched with.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  completeEndpointConfig,
  onnxDefaultBatching,
  workerServingSettings,
} from '../../src/control/serving-defaults.ts';
import { KilnError } from '../../src/core/errors.ts';
import { call, errorCode, readArtifact, register, testPlatform } from '../helpers/platform.ts';

const fixtures = new URL('../../fixtures/registry/', import.meta.url).pathname;

void test('per-runtime defaults: onnx batches, trees do not; null is off; given is kept', () => {
  assert.deepEqual(workerServingSettings('onnx', {}).batching, onnxDefaultBatching);
  assert.deepEqual(onnxDefaultBatching, { maxBatchSize: 32, maxDelayMicros: 0, maxQueue: 256 });
  assert.equal(workerServingSettings('xgboost', {}).batching, null);
  assert.equal(workerServingSettings('lightgbm', {}).batching, null);
  assert.equal(workerServingSettings('onnx', { batching: null }).batching, null);
  const mine = { maxBatchSize: 4, maxDelayMicros: 100, maxQueue: 8 };
  assert.deepEqual(workerServingSettings('xgboost', { batching: mine }).batching, mine);
});

void test('the runtime gets only runtime settings; the deadline and body limit go apart', () => {
  const settings = workerServingSettings('onnx', {
    intraOpThreads: 2,
    maxBodyBytes: 4096,
    timeoutMs: 100,
    maxConcurrency: 10,
    batching: null,
  });
  assert.deepEqual(settings, {
    config: { intraOpThreads: 2 },
    maxBodyBytes: 4096,
    batching: null,
    defaultTimeoutMs: 100,
    llm: null,
  });
});

void test('a partial batching config is completed; preferred sizes sorted and checked', () => {
  assert.deepEqual(completeEndpointConfig({ batching: { maxBatchSize: 8 } }), {
    batching: { maxBatchSize: 8, maxDelayMicros: 0, maxQueue: 256 },
  });
  assert.deepEqual(
    completeEndpointConfig({ batching: { maxBatchSize: 16, preferredBatchSizes: [16, 4] } })
      .batching?.preferredBatchSizes,
    [4, 16],
  );
  assert.deepEqual(completeEndpointConfig({ batching: null }), { batching: null });
  assert.deepEqual(completeEndpointConfig({ timeoutMs: 5 }), { timeoutMs: 5 });
  // `adaptive` is stored only when given (absent = adaptive), so existing endpoints' stored
  // configs, and their worker revisions, do not change.
  assert.deepEqual(completeEndpointConfig({ batching: { adaptive: false } }), {
    batching: { maxBatchSize: 32, maxDelayMicros: 0, maxQueue: 256, adaptive: false },
  });
  assert.throws(
    () => completeEndpointConfig({ batching: { maxBatchSize: 8, preferredBatchSizes: [16] } }),
    (error: unknown) => error instanceof KilnError && error.code === 'KILN_VALIDATION_FAILED',
  );
});

void test('PUT /api/v1/endpoints accepts and stores the serving fields, within bounds', async () => {
  const platform = await testPlatform();
  const registered = await register(
    platform.url,
    'mlp',
    'onnx',
    await readArtifact(`${fixtures}mlp.onnx`),
  );
  assert.equal(registered.status, 201, JSON.stringify(registered.body));
  const deploy = (config: unknown) =>
    call(platform.url, 'PUT', '/api/v1/endpoints/mlp', { model: 'mlp', replicas: 0, config });

  const stored = await deploy({
    batching: { maxBatchSize: 16, preferredBatchSizes: [8] },
    timeoutMs: 250,
    maxConcurrency: 100,
  });
  assert.equal(stored.status, 201, JSON.stringify(stored.body));
  assert.deepEqual((stored.body as { config: unknown }).config, {
    batching: { maxBatchSize: 16, maxDelayMicros: 0, maxQueue: 256, preferredBatchSizes: [8] },
    timeoutMs: 250,
    maxConcurrency: 100,
  });
  const off = await deploy({ batching: null });
  assert.equal(off.status, 200);
  assert.deepEqual((off.body as { config: unknown }).config, { batching: null });

  for (const bad of [
    { batching: { maxBatchSize: 0 } },
    { batching: { maxDelayMicros: -1 } },
    { batching: { maxQueue: 0 } },
    { batching: { maxBatchSize: 8, extra: 1 } },
    { batching: { preferredBatchSizes: [0] } },
    { batching: { maxBatchSize: 8, preferredBatchSizes: [16] } },
    { timeoutMs: 0 },
    { maxConcurrency: 0 },
  ]) {
    const refused = await deploy(bad);
    assert.equal(refused.status, 400, JSON.stringify(bad));
    assert.equal(errorCode(refused), 'KILN_VALIDATION_FAILED', JSON.stringify(refused.body));
  }
});
