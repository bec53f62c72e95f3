// `kiln deploy` batching, deadline and concurrency flags → the PUT body; how `endpoints show`
// renders batching.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { InvalidArgumentError } from 'commander';
import { parseVersionRef } from '../../src/cli/arguments.ts';
import { CliError } from '../../src/cli/errors.ts';
import { deployBody, integerList } from '../../src/cli/commands/deploy.ts';
import { batchingText } from '../../src/cli/commands/endpoints-render.ts';

const defaults = { endpoint: 'mlp', replicas: 1 };
const ref = parseVersionRef('mlp:1');

void test('batching flags turn batching on with just those settings', () => {
  const body = deployBody(ref, {
    ...defaults,
    maxBatch: 32,
    maxDelayUs: 2000,
    preferredBatch: [8, 16],
    queue: 256,
    timeoutMs: 100,
    maxConcurrency: 64,
  });
  assert.deepEqual(body.config, {
    batching: {
      maxBatchSize: 32,
      maxDelayMicros: 2000,
      preferredBatchSizes: [8, 16],
      maxQueue: 256,
    },
    timeoutMs: 100,
    maxConcurrency: 64,
  });
  assert.deepEqual(deployBody(ref, { ...defaults, maxBatch: 8 }).config, {
    batching: { maxBatchSize: 8 },
  });
});

void test('no batching flag leaves the runtime default; --no-batching sends null', () => {
  // commander sets `batching: true` for an absent --no-batching flag.
  assert.deepEqual(deployBody(ref, { ...defaults, batching: true }).config, {});
  assert.deepEqual(deployBody(ref, { ...defaults, batching: false }).config, { batching: null });
  assert.throws(
    () => deployBody(ref, { ...defaults, batching: false, maxBatch: 8 }),
    (error: unknown) => error instanceof CliError && error.code === 'KILN_USAGE',
  );
});

void test('--preferred-batch takes a comma-separated list of sizes', () => {
  assert.deepEqual(integerList('8,16'), [8, 16]);
  assert.deepEqual(integerList(' 4 , 8 '), [4, 8]);
  for (const bad of ['', '8,', '0', 'a,b', '-1', '1.5'])
    assert.throws(() => integerList(bad), InvalidArgumentError, bad);
});

void test('endpoints show: batching in words', () => {
  assert.equal(batchingText(null), 'off');
  assert.match(batchingText(undefined), /runtime default/);
  assert.equal(
    batchingText({
      maxBatchSize: 32,
      maxDelayMicros: 2000,
      maxQueue: 256,
      preferredBatchSizes: [8, 16],
    }),
    'max 32 rows, wait ≤ 2000 µs, preferred 8/16, queue 256',
  );
  assert.equal(
    batchingText({ maxBatchSize: 8, maxDelayMicros: 0, maxQueue: 64, adaptive: false }),
    'max 8 rows, wait ≤ 0 µs, queue 64, fixed (not adaptive)',
  );
});

void test('--fixed-batching sends adaptive: false (batching on, the rest defaulted)', () => {
  assert.deepEqual(deployBody(ref, { ...defaults, fixedBatching: true }).config, {
    batching: { adaptive: false },
  });
  assert.throws(
    () => deployBody(ref, { ...defaults, batching: false, fixedBatching: true }),
    (error: unknown) => error instanceof CliError && error.code === 'KILN_USAGE',
  );
});
