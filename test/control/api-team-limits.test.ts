// Per-team rate limits over the API, and the routing snapshot the reconciler publishes:
// team limits and each endpoint's concurrency bound (configured or derived) reach the gateways.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { call, errorCode, readArtifact, register, testPlatform } from '../helpers/platform.ts';
import type { RoutingSnapshot } from '../../src/gateway/routing-snapshot.ts';

const fixtures = new URL('../../fixtures/registry/', import.meta.url).pathname;

async function currentSnapshot(url: string): Promise<RoutingSnapshot> {
  const reply = await call(url, 'GET', '/api/v1/routing/snapshot');
  assert.equal(reply.status, 200);
  return reply.body as RoutingSnapshot;
}

test('team limits: PUT creates or replaces, GET lists, DELETE removes; the snapshot follows', async () => {
  const { url } = await testPlatform();
  assert.deepEqual((await call(url, 'GET', '/api/v1/teams/limits')).body, { items: [] });
  assert.deepEqual((await currentSnapshot(url)).teamLimits, []);

  const put = await call(url, 'PUT', '/api/v1/teams/risk/limits', {
    requestsPerSecond: 20,
    burst: 40,
  });
  assert.equal(put.status, 200);
  assert.deepEqual(
    { ...(put.body as Record<string, unknown>), updatedAt: undefined },
    { team: 'risk', requestsPerSecond: 20, burst: 40, updatedAt: undefined },
  );
  await call(url, 'PUT', '/api/v1/teams/growth/limits', { requestsPerSecond: 0.5, burst: 1 });
  await call(url, 'PUT', '/api/v1/teams/risk/limits', { requestsPerSecond: 25, burst: 50 });

  const listed = (await call(url, 'GET', '/api/v1/teams/limits')).body as {
    items: { team: string; requestsPerSecond: number; burst: number }[];
  };
  assert.deepEqual(
    listed.items.map(({ team, requestsPerSecond, burst }) => ({ team, requestsPerSecond, burst })),
    [
      { team: 'growth', requestsPerSecond: 0.5, burst: 1 },
      { team: 'risk', requestsPerSecond: 25, burst: 50 },
    ],
  );
  assert.deepEqual((await currentSnapshot(url)).teamLimits, [
    { team: 'growth', requestsPerSecond: 0.5, burst: 1 },
    { team: 'risk', requestsPerSecond: 25, burst: 50 },
  ]);

  const removed = await call(url, 'DELETE', '/api/v1/teams/growth/limits');
  assert.equal(removed.status, 200);
  assert.equal((removed.body as { team: string }).team, 'growth');
  const missing = await call(url, 'DELETE', '/api/v1/teams/growth/limits');
  assert.equal(missing.status, 404);
  assert.equal(errorCode(missing), 'KILN_TEAM_LIMIT_NOT_FOUND');
  assert.deepEqual((await currentSnapshot(url)).teamLimits, [
    { team: 'risk', requestsPerSecond: 25, burst: 50 },
  ]);
});

test('team limits: bodies are schema-checked and team names checked', async () => {
  const { url } = await testPlatform();
  for (const body of [
    {},
    { requestsPerSecond: 0, burst: 1 },
    { requestsPerSecond: -1, burst: 1 },
    { requestsPerSecond: 1, burst: 0 },
    { requestsPerSecond: 1, burst: 1.5 },
    { requestsPerSecond: 1, burst: 1, extra: true },
    { requestsPerSecond: 1 },
  ]) {
    const reply = await call(url, 'PUT', '/api/v1/teams/risk/limits', body);
    assert.equal(reply.status, 400, JSON.stringify(body));
    assert.equal(errorCode(reply), 'KILN_VALIDATION_FAILED', JSON.stringify(body));
  }
  const badName = await call(url, 'PUT', '/api/v1/teams/Bad%20Team/limits', {
    requestsPerSecond: 1,
    burst: 1,
  });
  assert.equal(badName.status, 400);
  assert.equal(errorCode(badName), 'KILN_INVALID_NAME');
  assert.deepEqual((await call(url, 'GET', '/api/v1/teams/limits')).body, { items: [] });
});

test("the snapshot carries each endpoint's bound: configured, else derived from what its replicas hold; the endpoint view shows the same", async () => {
  const platform = await testPlatform();
  const files = await readArtifact(`${fixtures}mlp.onnx`);
  assert.equal((await register(platform.url, 'm', 'onnx', files)).status, 201);
  const store = platform.registry.store;
  // No replica is ready (none wanted): the derived bound is one replica's worth.
  const base = { team: 'risk', model: 'm', version: 1, ref: '1', replicas: 0 };
  const batching = { maxBatchSize: 4, maxDelayMicros: 0, maxQueue: 10 };
  await store.putEndpoint({ ...base, name: 'limited', config: { maxConcurrency: 8 } });
  await store.putEndpoint({ ...base, name: 'open', config: {} });
  await store.putEndpoint({ ...base, name: 'queued', config: { batching } });
  await store.putEndpoint({ ...base, name: 'unbatched', config: { batching: null } });
  await platform.reconciler.trigger();
  const endpoints = (await currentSnapshot(platform.url)).endpoints;
  const expected = [
    ['limited', 8, 'configured'],
    ['open', 256, 'derived'], // ONNX batches by default: its queue of 256
    ['queued', 10, 'derived'],
    ['unbatched', 64, 'derived'],
  ];
  assert.deepEqual(
    endpoints.map((e) => [e.name, e.maxConcurrency, e.maxConcurrencySource]),
    expected,
  );
  for (const [name, limit, source] of expected) {
    const view = await call(platform.url, 'GET', `/api/v1/endpoints/${String(name)}`);
    const status = (
      view.body as { status: { maxConcurrency: number; maxConcurrencySource: string } }
    ).status;
    assert.deepEqual(
      [name, status.maxConcurrency, status.maxConcurrencySource],
      [name, limit, source],
    );
  }
});
