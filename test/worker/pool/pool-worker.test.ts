// A pool worker in this process (start-pool-worker.ts), driven over HTTP as the control
// plane and the gateway drive it: one load for concurrent first requests, a corrupt blob
// refused (and not re-hashed on every request), a redeploy's old copy dropped, an older
// assignment ignored, the control calls refused without the token.

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createReadStream, readFileSync } from 'node:fs';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ArtifactStore } from '../../../src/registry/artifact-store.ts';
import type {
  PoolAssignment,
  PoolModel,
  PoolWorkerStatus,
} from '../../../src/protocol/pool/pool-protocol.ts';
import { startPoolWorker } from '../../../src/worker/pool/start-pool-worker.ts';

const fixtures = new URL('../../../fixtures/pools/', import.meta.url).pathname;
const expected = JSON.parse(readFileSync(`${fixtures}expected.json`, 'utf8')) as {
  rows: number[][];
  predictions: Record<string, number[]>;
};
const home = await mkdtemp(join(tmpdir(), 'kiln-pool-worker-'));
const store = new ArtifactStore(join(home, 'artifacts'));
await store.init();
const token = 'pool-token-for-tests';

async function model(endpoint: string, fixture: string, revision: string): Promise<PoolModel> {
  const blob = await store.ingest(createReadStream(`${fixtures}${fixture}.json`), null, {
    maxBytes: 1 << 30,
  });
  return {
    endpoint,
    revision,
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
    replicaId: '_pool-t-v0-r0-1',
    endpoint: '_pool-t',
    model: '_pool-t',
    version: 0,
    format: 'xgboost',
    files: [],
    schema: null,
    artifacts: store.locator,
    workDir: join(home, 'worker'),
    host: '127.0.0.1',
    port: 0,
    maxBodyBytes: 1 << 20,
    config: {},
    batching: null,
    defaultTimeoutMs: null,
    pool: { name: 't', memoryBudgetBytes: 10 << 20, token },
  },
  () => undefined,
);
after(async () => {
  await worker.close(1_000);
  await rm(home, { recursive: true, force: true });
});

async function assign(assignment: PoolAssignment, withToken = true): Promise<number> {
  const response = await fetch(`${worker.url}/kiln/v1/pool/models`, {
    method: 'PUT',
    headers: {
      'content-type': 'application/json',
      ...(withToken ? { 'kiln-pool-token': token } : {}),
    },
    body: JSON.stringify(assignment),
  });
  await response.arrayBuffer();
  return response.status;
}

async function status(): Promise<PoolWorkerStatus> {
  const response = await fetch(`${worker.url}/kiln/v1/pool`, {
    headers: { 'kiln-pool-token': token },
  });
  return (await response.json()) as PoolWorkerStatus;
}

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

function outputs(body: Record<string, unknown>): number[] {
  return (body.outputs as { data: number[] }[])[0]!.data;
}

function close(actual: readonly number[], want: readonly number[]): boolean {
  return want.every((p, i) => Math.abs(actual[i]! - p) <= 1e-6 * Math.max(1, Math.abs(p)));
}

test('concurrent first requests share one load; the control calls need the token', async () => {
  const a = await model('a', 'pool-0', 'a#1');
  assert.equal(await assign({ generation: 10, models: [a] }, false), 401);
  assert.equal(await assign({ generation: 10, models: [a] }), 200);
  const answers = await Promise.all(Array.from({ length: 5 }, () => infer('a')));
  for (const answer of answers) {
    assert.equal(answer.status, 200);
    assert.ok(close(outputs(answer.body), expected.predictions['pool-0']!));
  }
  const s = await status();
  assert.equal(s.loads, 1);
  assert.equal(s.misses + s.hits, 5);
  assert.deepEqual(
    s.models.map((m) => m.endpoint),
    ['a'],
  );
  const unauthorized = await fetch(`${worker.url}/kiln/v1/pool`);
  assert.equal(unauthorized.status, 401);
  await unauthorized.arrayBuffer();
});

test('a redeploy drops the old copy; the next request loads the new version', async () => {
  const a2 = await model('a', 'pool-4', 'a#2');
  assert.equal(await assign({ generation: 11, models: [a2] }), 200);
  assert.deepEqual((await status()).models, []);
  const answer = await infer('a');
  assert.equal(answer.status, 200);
  assert.ok(close(outputs(answer.body), expected.predictions['pool-4']!));
  // An older assignment (a push that arrived late) changes nothing.
  const a1 = await model('a', 'pool-0', 'a#1');
  assert.equal(await assign({ generation: 5, models: [a1] }), 200);
  const again = await infer('a');
  assert.ok(close(outputs(again.body), expected.predictions['pool-4']!));
  const s = await status();
  assert.equal(s.generation, 11);
  assert.equal(s.loads, 2);
});

test('a blob that no longer matches its digest fails the load with the reason, not re-hashed per request', async () => {
  const bad = await model('bad', 'pool-2', 'bad#1');
  const blob = store.blobPath(bad.files[0]!.sha256);
  await chmod(blob, 0o644);
  await writeFile(blob, '{"not": "the model"}');
  assert.equal(await assign({ generation: 12, models: [bad] }), 200);
  const first = await infer('bad');
  assert.equal(first.status, 503);
  assert.equal(first.body.code, 'KILN_MODEL_NOT_READY');
  assert.match(String(first.body.error), /model bad is not ready: .*corrupt/);
  const second = await infer('bad');
  assert.equal(second.status, 503);
  const s = await status();
  assert.equal(s.loadFailures, 1, 'the failure is answered from memory for a while');
  assert.equal(s.models.length, 0);
  // And a model no longer assigned is not served.
  const gone = await infer('a');
  assert.equal(gone.status, 404);
  assert.equal(gone.body.code, 'KILN_ENDPOINT_NOT_FOUND');
});
