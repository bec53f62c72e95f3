// Outside --dev the gateway requires API keys scoped to an endpoint or a team.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { call, readArtifact, register, testPlatform } from '../helpers/platform.ts';

const fixtures = new URL('../../fixtures/registry/', import.meta.url).pathname;
const platform = await testPlatform({ gateway: true, dev: false });
const admin = platform.admin;

async function waitReady(endpoint: string, key: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const response = await fetch(`${platform.gatewayUrl}/v2/models/${endpoint}/ready`, {
      headers: { authorization: `Bearer ${key}` },
    });
    await response.arrayBuffer();
    if (response.status === 200) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.fail(`${endpoint} never became ready`);
}

async function infer(
  endpoint: string,
  headers: Record<string, string>,
): Promise<{ status: number; code: unknown }> {
  const response = await fetch(`${platform.gatewayUrl}/v2/models/${endpoint}/infer`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({
      inputs: [{ name: 'input', shape: [1, 5], datatype: 'FP32', data: [0, 1, 2, 3, 4] }],
    }),
  });
  const body = (await response.json()) as { code?: unknown };
  return { status: response.status, code: body.code };
}

test('API keys: missing or unknown → 401, out of scope → 403, endpoint- and team-scoped keys work, revocation bites', async () => {
  const files = await readArtifact(`${fixtures}xgb-binary.json`);
  await call(platform.url, 'POST', '/api/v1/models', { name: 'risk-model', team: 'risk' }, admin);
  await call(platform.url, 'POST', '/api/v1/models', { name: 'ads-model', team: 'ads' }, admin);
  assert.equal(
    (await register(platform.url, 'risk-model', 'xgboost', files, {}, admin)).status,
    201,
  );
  assert.equal(
    (await register(platform.url, 'ads-model', 'xgboost', files, {}, admin)).status,
    201,
  );
  await call(platform.url, 'PUT', '/api/v1/endpoints/risk', { model: 'risk-model' }, admin);
  await call(platform.url, 'PUT', '/api/v1/endpoints/ads', { model: 'ads-model' }, admin);

  const riskKey = (
    await call(
      platform.url,
      'POST',
      '/api/v1/api-keys',
      { name: 'risk-app', endpoint: 'risk' },
      admin,
    )
  ).body as { key: string; id: string };
  const adsTeamKey = (
    await call(platform.url, 'POST', '/api/v1/api-keys', { name: 'ads-team', team: 'ads' }, admin)
  ).body as { key: string };
  assert.match(riskKey.key, /^kiln_/);
  const listed = (await call(platform.url, 'GET', '/api/v1/api-keys', undefined, admin)).body as {
    items: Record<string, unknown>[];
  };
  assert.equal(listed.items.length, 2);
  assert.ok(
    listed.items.every((k) => !('key' in k) && !('sha256' in k)),
    'keys are never listed',
  );
  await waitReady('risk', riskKey.key);
  await waitReady('ads', adsTeamKey.key);

  assert.deepEqual(await infer('risk', {}), { status: 401, code: 'KILN_UNAUTHENTICATED' });
  assert.deepEqual(await infer('risk', { authorization: 'Bearer kiln_not-a-real-key' }), {
    status: 401,
    code: 'KILN_UNAUTHENTICATED',
  });
  assert.deepEqual(await infer('ads', { authorization: `Bearer ${riskKey.key}` }), {
    status: 403,
    code: 'KILN_FORBIDDEN',
  });
  assert.deepEqual(await infer('risk', { authorization: `Bearer ${adsTeamKey.key}` }), {
    status: 403,
    code: 'KILN_FORBIDDEN',
  });
  assert.equal((await infer('risk', { authorization: `Bearer ${riskKey.key}` })).status, 200);
  assert.equal((await infer('ads', { 'x-api-key': adsTeamKey.key })).status, 200);

  assert.equal(
    (await call(platform.url, 'DELETE', `/api/v1/api-keys/${riskKey.id}`, undefined, admin)).status,
    200,
  );
  const deadline = Date.now() + 10_000;
  let status = 200;
  while (Date.now() < deadline && status === 200) {
    status = (await infer('risk', { authorization: `Bearer ${riskKey.key}` })).status;
    if (status === 200) await new Promise((r) => setTimeout(r, 50));
  }
  assert.equal(status, 401);
});
