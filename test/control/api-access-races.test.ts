// A deployer's team is checked before its call runs (preHandler) and again in the store's
// write: an endpoint another team creates, or an admin moves to another team, between the
// two is refused (403), not overwritten or deleted. The store is made to land the other
// write exactly in that window.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { NewEndpoint } from '../../src/store/serving-records.ts';
import { call, errorCode, readArtifact, testPlatform } from '../helpers/platform.ts';

const fixtures = new URL('../../fixtures/registry/', import.meta.url).pathname;
const [artifact] = await readArtifact(`${fixtures}xgb-binary.json`);
if (artifact === undefined) throw new Error('no fixture');

const platform = await testPlatform({ dev: false });
const { url, admin } = platform;
const store = platform.registry.store;

async function ok(response: Promise<{ status: number; body: unknown }>, status: number) {
  const { status: got, body } = await response;
  assert.equal(got, status, JSON.stringify(body));
  return body;
}

await ok(
  call(url, 'PUT', `/api/v1/blobs/${artifact.sha256}`, artifact.data, {
    ...admin,
    'content-type': 'application/octet-stream',
  }),
  201,
);
for (const [model, team] of [
  ['m-risk', 'risk'],
  ['m-ads', 'ads'],
]) {
  await ok(call(url, 'POST', '/api/v1/models', { name: model, team }, admin), 201);
  await ok(
    call(
      url,
      'POST',
      `/api/v1/models/${model}/versions`,
      {
        format: 'xgboost',
        files: [{ path: artifact.path, size: artifact.size, sha256: artifact.sha256 }],
      },
      admin,
    ),
    201,
  );
}
const created = (await ok(
  call(url, 'POST', '/api/v1/tokens', { name: 'ci', role: 'deployer', team: 'risk' }, admin),
  201,
)) as { token: string };
const deployer = { authorization: `Bearer ${created.token}` };

const adsEndpoint = (name: string): NewEndpoint => ({
  name,
  team: 'ads',
  model: 'm-ads',
  version: 1,
  ref: '1',
  replicas: 0,
  config: {},
});

/** The next call to `method` first makes `write` happen, as if just before it. */
function before(method: 'putEndpoint' | 'deleteEndpoint', write: () => Promise<unknown>): void {
  const original = store[method].bind(store) as (...args: unknown[]) => Promise<unknown>;
  (store as unknown as Record<string, unknown>)[method] = async (...args: unknown[]) => {
    (store as unknown as Record<string, unknown>)[method] = original;
    await write();
    return original(...args);
  };
}

test('a deploy does not overwrite an endpoint another team created since its check', async () => {
  const put = store.putEndpoint.bind(store);
  before('putEndpoint', () => put(adsEndpoint('contested')));
  const response = await call(
    url,
    'PUT',
    '/api/v1/endpoints/contested',
    { model: 'm-risk', replicas: 0 },
    deployer,
  );
  assert.equal(response.status, 403, JSON.stringify(response.body));
  assert.equal(errorCode(response), 'KILN_PERMISSION_DENIED');
  const endpoint = await store.getEndpoint('contested');
  assert.deepEqual([endpoint?.team, endpoint?.model], ['ads', 'm-ads']);
});

test('a delete does not remove an endpoint moved to another team since its check', async () => {
  await ok(
    call(url, 'PUT', '/api/v1/endpoints/moving', { model: 'm-risk', replicas: 0 }, deployer),
    201,
  );
  const put = store.putEndpoint.bind(store);
  before('deleteEndpoint', () => put(adsEndpoint('moving')));
  const response = await call(url, 'DELETE', '/api/v1/endpoints/moving', undefined, deployer);
  assert.equal(response.status, 403, JSON.stringify(response.body));
  assert.equal((await store.getEndpoint('moving'))?.team, 'ads');
  // With no race, its own endpoint is its to delete.
  await ok(
    call(url, 'PUT', '/api/v1/endpoints/mine', { model: 'm-risk', replicas: 0 }, deployer),
    201,
  );
  await ok(call(url, 'DELETE', '/api/v1/endpoints/mine', undefined, deployer), 200);
});

/**
 * The first read of model `name` (preHandler's) finds none; another team's model of that name,
 * with one version, exists from the next read on.
 */
function createdAfterCheck(name: string): void {
  const original = store.getModel.bind(store);
  store.getModel = async (wanted) => {
    const found = await original(wanted);
    if (wanted !== name) return found;
    store.getModel = original;
    await platform.registry.registerVersion(name, {
      format: 'xgboost',
      files: [{ path: artifact!.path, size: artifact!.size, sha256: artifact!.sha256 }],
      createModel: { team: 'ads' },
    });
    return found;
  };
}

test('a deployer cannot act on a model another team created after its check found none', async () => {
  const calls: [string, string, string, unknown][] = [
    [
      'late-register',
      'POST',
      '/api/v1/models/late-register/versions',
      {
        format: 'xgboost',
        files: [{ path: artifact.path, size: artifact.size, sha256: artifact.sha256 }],
      },
    ],
    ['late-alias', 'PUT', '/api/v1/models/late-alias/aliases/prod', { version: 1 }],
    ['late-deploy', 'PUT', '/api/v1/endpoints/late', { model: 'late-deploy', replicas: 0 }],
  ];
  const outcomes: [string, number, unknown][] = [];
  for (const [model, method, path, body] of calls) {
    createdAfterCheck(model);
    const response = await call(url, method, path, body, deployer);
    const after = await store.getModel(model);
    outcomes.push([path, response.status, [after?.team, after?.versionCount, after?.aliases]]);
  }
  assert.deepEqual(
    outcomes,
    calls.map(([, , path]) => [path, 403, ['ads', 1, {}]]),
  );
  assert.equal(await store.getEndpoint('late'), null);
});
