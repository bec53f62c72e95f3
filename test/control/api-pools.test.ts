// /api/v1/pools with tokens: a deployer manages pools of its own team only, deploys its
// team's endpoints only onto its team's pools; bodies are schema-checked; names checked.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { call, errorCode, readArtifact, register, testPlatform } from '../helpers/platform.ts';

const fixtures = new URL('../../fixtures/pools/', import.meta.url).pathname;
const platform = await testPlatform({ dev: false });
const { url, admin } = platform;

async function token(name: string, role: string, team?: string): Promise<Record<string, string>> {
  const created = await call(
    url,
    'POST',
    '/api/v1/tokens',
    { name, role, ...(team === undefined ? {} : { team }) },
    admin,
  );
  assert.equal(created.status, 201, JSON.stringify(created.body));
  return { authorization: `Bearer ${(created.body as { token: string }).token}` };
}

test('a deployer manages and uses only its own team’s pools', async () => {
  const risk = await token('ci-risk', 'deployer', 'risk');
  const reader = await token('viewer', 'reader');
  const budget = { workers: 1, memoryBudgetBytes: 1 << 22 };

  const own = await call(url, 'PUT', '/api/v1/pools/risk-pool', { ...budget, team: 'risk' }, risk);
  assert.equal(own.status, 201, JSON.stringify(own.body));
  const other = await call(
    url,
    'PUT',
    '/api/v1/pools/growth-pool',
    { ...budget, team: 'growth' },
    risk,
  );
  assert.equal(other.status, 403);
  assert.equal(errorCode(other), 'KILN_PERMISSION_DENIED');
  // Created by an admin for another team: the deployer cannot change or delete it.
  assert.equal(
    (await call(url, 'PUT', '/api/v1/pools/growth-pool', { ...budget, team: 'growth' }, admin))
      .status,
    201,
  );
  assert.equal((await call(url, 'PUT', '/api/v1/pools/growth-pool', budget, risk)).status, 403);
  assert.equal(
    (await call(url, 'DELETE', '/api/v1/pools/growth-pool', undefined, risk)).status,
    403,
  );
  // Readers read, and only read.
  const listed = await call(url, 'GET', '/api/v1/pools', undefined, reader);
  assert.equal(listed.status, 200);
  assert.deepEqual(
    (listed.body as { items: { name: string }[] }).items.map((p) => p.name),
    ['growth-pool', 'risk-pool'],
  );
  assert.equal((await call(url, 'PUT', '/api/v1/pools/x', budget, reader)).status, 403);

  // A risk model onto the growth pool: refused, naming both teams.
  const files = await readArtifact(`${fixtures}pool-0.json`, 'model.json');
  await call(url, 'POST', '/api/v1/models', { name: 'scorer', team: 'risk' }, admin);
  assert.equal((await register(url, 'scorer', 'xgboost', files, {}, admin)).status, 201);
  const across = await call(
    url,
    'PUT',
    '/api/v1/endpoints/scorer',
    { model: 'scorer', config: { pool: 'growth-pool' } },
    risk,
  );
  assert.equal(across.status, 400, JSON.stringify(across.body));
  assert.match(
    JSON.stringify(across.body),
    /pool growth-pool belongs to team growth, the endpoint to team risk/,
  );
  const onOwn = await call(
    url,
    'PUT',
    '/api/v1/endpoints/scorer',
    { model: 'scorer', config: { pool: 'risk-pool' } },
    risk,
  );
  assert.equal(onOwn.status, 201, JSON.stringify(onOwn.body));
  // Its team cannot change while the endpoint is on it.
  const moved = await call(
    url,
    'PUT',
    '/api/v1/pools/risk-pool',
    { ...budget, team: 'growth' },
    admin,
  );
  assert.equal(moved.status, 409);
  assert.equal(errorCode(moved), 'KILN_POOL_IN_USE');
});

test('pool bodies and names are checked', async () => {
  for (const body of [
    { workers: 0, memoryBudgetBytes: 1024 },
    { workers: 65, memoryBudgetBytes: 1024 },
    { workers: 1, memoryBudgetBytes: 0 },
    { workers: 1 },
    { workers: 1, memoryBudgetBytes: 1024, extra: true },
  ]) {
    const refused = await call(url, 'PUT', '/api/v1/pools/p', body, admin);
    assert.equal(refused.status, 400, JSON.stringify(body));
    assert.equal(errorCode(refused), 'KILN_VALIDATION_FAILED');
  }
  const badName = await call(
    url,
    'PUT',
    '/api/v1/pools/Bad_Name',
    { workers: 1, memoryBudgetBytes: 1024 },
    admin,
  );
  assert.equal(badName.status, 400);
  assert.equal(errorCode(badName), 'KILN_INVALID_NAME');
  const missing = await call(url, 'GET', '/api/v1/pools/none', undefined, admin);
  assert.equal(missing.status, 404);
  assert.equal(errorCode(missing), 'KILN_POOL_NOT_FOUND');
});
