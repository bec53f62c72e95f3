import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { apiKeyFromHeaders, grantCovers } from '../../src/gateway/auth.ts';
import type { ApiKeyGrant } from '../../src/gateway/routing-snapshot.ts';
import {
  call,
  endpointRoute,
  fakeWorker,
  infer,
  replicaRoute,
  snapshot,
  testGateway,
} from './gateway-harness.ts';

const sha = (key: string): string => createHash('sha256').update(key).digest('hex');
const grants: ApiKeyGrant[] = [
  { id: 'k1', sha256: sha('risk-team-key'), team: 'risk', endpoint: null },
  { id: 'k2', sha256: sha('fraud-only-key'), team: null, endpoint: 'fraud' },
  { id: 'k3', sha256: sha('growth-team-key'), team: 'growth', endpoint: null },
  { id: 'k4', sha256: sha('other-endpoint-key'), team: null, endpoint: 'churn' },
];

test('keys come from Authorization: Bearer or x-api-key', () => {
  assert.equal(apiKeyFromHeaders({ authorization: 'Bearer abc' }), 'abc');
  assert.equal(apiKeyFromHeaders({ authorization: 'bearer abc' }), 'abc');
  assert.equal(apiKeyFromHeaders({ 'x-api-key': 'xyz' }), 'xyz');
  assert.equal(apiKeyFromHeaders({ authorization: 'Basic abc', 'x-api-key': 'xyz' }), 'xyz');
  assert.equal(apiKeyFromHeaders({ authorization: 'Bearer ' }), null);
  assert.equal(apiKeyFromHeaders({}), null);
});

test('a grant covers its endpoint or its team', () => {
  const fraud = { name: 'fraud', team: 'risk' };
  assert.deepEqual(
    grants.map((g) => grantCovers(g, fraud)),
    [true, true, false, false],
  );
});

const worker = await fakeWorker();
const gateway = await testGateway(
  snapshot(
    1,
    [
      endpointRoute({ replicas: [replicaRoute(worker, 'r1')] }),
      endpointRoute({ name: 'churn', team: 'growth', replicas: [replicaRoute(worker, 'r1')] }),
    ],
    { auth: 'api-keys', apiKeys: grants },
  ),
);

test('api-keys mode: a missing or unknown key is 401 and reaches no worker', async () => {
  for (const headers of [{}, { authorization: 'Bearer wrong' }, { 'x-api-key': 'wrong' }]) {
    const reply = await infer(gateway.url, undefined, headers);
    assert.equal(reply.status, 401);
    assert.equal((reply.json as { code: string }).code, 'KILN_UNAUTHENTICATED');
  }
  // Metadata and readiness need a key too; health and metrics do not.
  assert.equal((await call(gateway.url, 'GET', '/v2/models/fraud')).status, 401);
  assert.equal((await call(gateway.url, 'GET', '/v2/models/fraud/ready')).status, 401);
  assert.equal((await call(gateway.url, 'GET', '/v2/health/ready')).status, 200);
  assert.equal((await call(gateway.url, 'GET', '/metrics')).status, 200);
  assert.equal(worker.received.length, 0);
});

test('api-keys mode: a key scoped elsewhere is 403', async () => {
  for (const key of ['growth-team-key', 'other-endpoint-key']) {
    const reply = await infer(gateway.url, undefined, { authorization: `Bearer ${key}` });
    assert.equal(reply.status, 403, key);
    assert.deepEqual(reply.json, {
      error: 'this API key may not call endpoint fraud',
      code: 'KILN_FORBIDDEN',
    });
    const metadata = await call(gateway.url, 'GET', '/v2/models/fraud', undefined, {
      'x-api-key': key,
    });
    assert.equal(metadata.status, 403);
  }
  assert.equal(worker.received.length, 0);
});

test('api-keys mode: team-scoped and endpoint-scoped keys pass', async () => {
  const team = await infer(gateway.url, undefined, { authorization: 'Bearer risk-team-key' });
  assert.equal(team.status, 200);
  const endpoint = await infer(gateway.url, undefined, { 'x-api-key': 'fraud-only-key' });
  assert.equal(endpoint.status, 200);
  const churn = await infer(gateway.url, undefined, { 'x-api-key': 'growth-team-key' }, 'churn');
  assert.equal(churn.status, 200);
  assert.equal(worker.received.length, 3);
  const metadata = await call(gateway.url, 'GET', '/v2/models/fraud', undefined, {
    'x-api-key': 'fraud-only-key',
  });
  assert.equal(metadata.status, 200);
});

test('api-keys mode: a valid key for an unknown endpoint is 404', async () => {
  const reply = await infer(gateway.url, undefined, { 'x-api-key': 'risk-team-key' }, 'nope');
  assert.equal(reply.status, 404);
});

test('a new snapshot revokes a key at once', async () => {
  gateway.setSnapshot(
    snapshot(2, [endpointRoute({ replicas: [replicaRoute(worker, 'r1')] })], {
      auth: 'api-keys',
      apiKeys: grants.slice(1),
    }),
  );
  const reply = await infer(gateway.url, undefined, { authorization: 'Bearer risk-team-key' });
  assert.equal(reply.status, 401);
});

test('dev mode serves without keys', async () => {
  const devWorker = await fakeWorker();
  const dev = await testGateway(
    snapshot(1, [endpointRoute({ replicas: [replicaRoute(devWorker, 'r1')] })]),
  );
  assert.equal((await infer(dev.url)).status, 200);
});
