// A pool worker whose store is an S3 bucket (s3rver on loopback): it loads each assigned
// model from the bucket, re-hashed (credentials from its environment, the spec naming only
// the bucket), answers as XGBoost does, and refuses an object damaged in the bucket.

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { createReadStream, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { PoolModel } from '../../../src/protocol/pool/pool-protocol.ts';
import { S3ArtifactStore } from '../../../src/registry/s3-artifact-store.ts';
import { startPoolWorker } from '../../../src/worker/pool/start-pool-worker.ts';
import { s3Server } from '../../helpers/s3-server.ts';
import { tempDir } from '../../helpers/temp-dir.ts';

const fixtures = new URL('../../../fixtures/pools/', import.meta.url).pathname;
const expected = JSON.parse(readFileSync(`${fixtures}expected.json`, 'utf8')) as {
  rows: number[][];
  predictions: Record<string, number[]>;
};
const s3 = await s3Server();
const locator = await s3.bucket('pool/');
const home = await tempDir('kiln-pool-s3-');
const store = new S3ArtifactStore(locator, { scratchDir: join(home, 'spool') });
await store.init();
const token = 'pool-token-for-tests';

async function model(endpoint: string, fixture: string): Promise<PoolModel> {
  const blob = await store.ingest(createReadStream(`${fixtures}${fixture}.json`), null, {
    maxBytes: 1 << 30,
  });
  return {
    endpoint,
    revision: `${endpoint}#1`,
    model: endpoint,
    version: 1,
    format: 'xgboost',
    files: [{ path: 'model.json', size: blob.size, sha256: blob.sha256 }],
    schema: null,
    maxBodyBytes: 1 << 20,
    config: {},
    defaultTimeoutMs: null,
  };
}

const worker = await startPoolWorker(
  {
    replicaId: '_pool-s3-v0-r0-1',
    endpoint: '_pool-s3',
    model: '_pool-s3',
    version: 0,
    format: 'xgboost',
    files: [],
    schema: null,
    artifacts: locator,
    workDir: join(home, 'worker'),
    host: '127.0.0.1',
    port: 0,
    maxBodyBytes: 1 << 20,
    config: {},
    batching: null,
    defaultTimeoutMs: null,
    pool: { name: 's3', memoryBudgetBytes: 10 << 20, token },
  },
  () => undefined,
);
after(() => worker.close(1_000));

async function infer(endpoint: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const rows = expected.rows;
  const response = await fetch(`${worker.url}/v2/models/${endpoint}/infer`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      inputs: [{ name: 'input', shape: [rows.length, 4], datatype: 'FP32', data: rows.flat() }],
    }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

test('a pool worker loads its models from the bucket, verified, and refuses a damaged one', async () => {
  const a = await model('a', 'pool-0');
  const b = await model('b', 'pool-3');
  const bad = await model('bad', 'pool-2');
  await s3.client.send(
    new PutObjectCommand({
      Bucket: locator.bucket,
      Key: store.blobKey(bad.files[0]!.sha256),
      Body: '{"not": "the model"}',
    }),
  );
  const assigned = await fetch(`${worker.url}/kiln/v1/pool/models`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json', 'kiln-pool-token': token },
    body: JSON.stringify({ generation: 1, models: [a, b, bad] }),
  });
  await assigned.arrayBuffer();
  assert.equal(assigned.status, 200);
  for (const [endpoint, fixture] of [
    ['a', 'pool-0'],
    ['b', 'pool-3'],
  ] as const) {
    const answer = await infer(endpoint);
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    const got = (answer.body.outputs as { data: number[] }[])[0]!.data;
    const want = expected.predictions[fixture]!;
    want.forEach((p, i) =>
      assert.ok(Math.abs(got[i]! - p) <= 1e-6 * Math.max(1, Math.abs(p)), `${endpoint} row ${i}`),
    );
  }
  const refused = await infer('bad');
  assert.equal(refused.status, 503);
  assert.match(String(refused.body.error), /model bad is not ready: .*corrupt/);
});
