// End to end with artifacts in an S3-compatible bucket (s3rver on loopback): the platform
// stores uploads in the bucket, the worker process materializes its model from the bucket
// (re-hashing every byte, with credentials from its environment, never from its spec), and
// the prediction is XGBoost's own. gc through the API removes only what no version names.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HeadObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { existsSync, readFileSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { S3ArtifactStore } from '../../src/registry/s3-artifact-store.ts';
import { call, readArtifact, register, sha256, testPlatform } from '../helpers/platform.ts';
import { s3Server } from '../helpers/s3-server.ts';

const fixtures = new URL('../../fixtures/registry/', import.meta.url).pathname;
const expected = JSON.parse(readFileSync(`${fixtures}expected.json`, 'utf8')) as {
  xgboost: { inputs: number[][]; probabilities: number[] };
};

/** Polls `check` until it holds (a worker start is slow on a loaded machine: 90 s at most). */
async function waitUntil(check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 90_000;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  assert.fail(`timed out waiting for ${what}`);
}

const s3 = await s3Server();
const locator = await s3.bucket('kiln/artifacts/');
const platform = await testPlatform({ gateway: true, artifacts: locator });

test('a platform on S3 artifacts registers fraud-xgb and serves XGBoost reference values', async () => {
  const files = await readArtifact(`${fixtures}xgb-binary.json`, 'model.json');
  const registered = await register(platform.url, 'fraud-xgb', 'xgboost', files);
  assert.equal(registered.status, 201, JSON.stringify(registered.body));
  // The blob is in the bucket under its digest, and not in the home.
  const key = new S3ArtifactStore(locator).blobKey(files[0]!.sha256);
  const head = await s3.client.send(new HeadObjectCommand({ Bucket: locator.bucket, Key: key }));
  assert.equal(head.ContentLength, files[0]!.size);
  const blobs = join(platform.home, 'artifacts', 'blobs');
  assert.ok(!existsSync(blobs) || (await readdir(blobs, { recursive: true })).length === 0);

  const deployed = await call(platform.url, 'PUT', '/api/v1/endpoints/fraud-xgb', {
    model: 'fraud-xgb',
  });
  assert.ok(deployed.status === 201 || deployed.status === 200, JSON.stringify(deployed.body));
  let outputs: number[] = [];
  await waitUntil(async () => {
    const response = await fetch(`${platform.gatewayUrl}/v2/models/fraud-xgb/infer`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        inputs: [
          {
            name: 'input',
            datatype: 'FP32',
            shape: [expected.xgboost.inputs.length, expected.xgboost.inputs[0]?.length ?? 0],
            data: expected.xgboost.inputs.flat(),
          },
        ],
      }),
    }).catch(() => null);
    if (response?.status !== 200) {
      await response?.arrayBuffer();
      return false;
    }
    const body = (await response.json()) as { outputs: { data: number[] }[] };
    outputs = body.outputs[0]?.data ?? [];
    return true;
  }, 'fraud-xgb to serve from the bucket');
  assert.equal(outputs.length, expected.xgboost.probabilities.length);
  expected.xgboost.probabilities.forEach((p, i) => {
    assert.ok(Math.abs((outputs[i] ?? Number.NaN) - p) <= 1e-5, `row ${i}: ${outputs[i]} vs ${p}`);
  });
  // What the worker was told: the bucket, and no secret.
  const specs = await readdir(join(platform.home, 'run'), { recursive: true });
  const specFile = specs.find((name) => name.endsWith('spec.json'));
  assert.ok(specFile !== undefined, specs.join(', '));
  const spec = readFileSync(join(platform.home, 'run', specFile), 'utf8');
  assert.match(spec, new RegExp(`"artifacts":\\{"kind":"s3","bucket":"${locator.bucket}"`));
  assert.doesNotMatch(spec, /S3RVER/);

  // gc: an uploaded blob no version names goes (grace 0), the model's stays.
  const stray = Buffer.from('an upload whose registration never came');
  const put = await call(platform.url, 'PUT', `/api/v1/blobs/${sha256(stray)}`, stray, {
    'content-type': 'application/octet-stream',
  });
  assert.equal(put.status, 201, JSON.stringify(put.body));
  const gc = await call(platform.url, 'POST', '/api/v1/gc', { dryRun: false, graceSeconds: 0 });
  assert.equal(gc.status, 200, JSON.stringify(gc.body));
  assert.deepEqual(gc.body, {
    removedBlobs: 1,
    removedBytes: stray.length,
    keptBlobs: 1,
    dryRun: false,
  });
  const gone = await call(platform.url, 'HEAD', `/api/v1/blobs/${sha256(stray)}`);
  assert.equal(gone.status, 404);
  const kept = await call(platform.url, 'HEAD', `/api/v1/blobs/${files[0]!.sha256}`);
  assert.equal(kept.status, 200);

  // The object damaged in the bucket (same size, other bytes): a new replica refuses it, and
  // says why, instead of loading it.
  const damaged = Buffer.from(files[0]!.data);
  damaged[damaged.length - 2] = damaged[damaged.length - 2] === 0x20 ? 0x0a : 0x20;
  await s3.client.send(new PutObjectCommand({ Bucket: locator.bucket, Key: key, Body: damaged }));
  const second = await call(platform.url, 'PUT', '/api/v1/endpoints/fraud-copy', {
    model: 'fraud-xgb',
  });
  assert.ok(second.status === 201, JSON.stringify(second.body));
  let reason = '';
  await waitUntil(async () => {
    const shown = await call(platform.url, 'GET', '/api/v1/endpoints/fraud-copy');
    reason = (shown.body as { status?: { reason?: string | null } }).status?.reason ?? '';
    return /corrupt/.test(reason);
  }, 'the replica to refuse the damaged object');
  assert.match(reason, /model\.json is corrupt/);
});
