// Store contract, serving: endpoints (the reconciler's desired state) and API keys, on SQLite
// and on PostgreSQL. What an endpoint's traffic state does to its writes and deletes is in
// contract-traffic.test.ts (rollouts, experiments) and pg-store.test.ts.

import assert from 'node:assert/strict';
import { KilnError } from '../../src/core/errors.ts';
import type { NewEndpoint } from '../../src/store/serving-records.ts';
import type { Store } from '../../src/store/store.ts';
import { forEachStore } from '../helpers/store-kinds.ts';
import { placeholderVersion } from '../helpers/stored-version.ts';

function kilnCode(code: string) {
  return (error: unknown): boolean => {
    assert.ok(error instanceof KilnError, `expected KilnError, got ${String(error)}`);
    assert.equal(error.code, code, error.message);
    return true;
  };
}

function endpoint(name: string, version: number, overrides: Partial<NewEndpoint> = {}) {
  return {
    name,
    team: 'default',
    model: 'iris',
    version,
    ref: String(version),
    replicas: 1,
    config: {},
    ...overrides,
  };
}

async function withVersions(store: Store, count: number): Promise<void> {
  await store.createModel({ name: 'iris', team: 'default', description: '' });
  for (let i = 0; i < count; i++) await store.createVersion('iris', placeholderVersion());
}

forEachStore(
  'endpoints: put creates then replaces, get and list by name, config round-trips',
  async ({ store, clock }) => {
    await withVersions(store, 2);
    const config = { batching: { maxBatchSize: 8, maxDelayMicros: 500, maxQueue: 64 } };
    const first = await store.putEndpoint(endpoint('iris', 1, { config }));
    assert.equal(first.created, true);
    assert.deepEqual(first.endpoint, {
      name: 'iris',
      team: 'default',
      model: 'iris',
      version: 1,
      ref: '1',
      replicas: 1,
      config,
      createdAt: new Date(clock.ms).toISOString(),
      updatedAt: new Date(clock.ms).toISOString(),
    });
    clock.advance(1000);
    const second = await store.putEndpoint(endpoint('iris', 2, { ref: '@champion', replicas: 3 }));
    assert.equal(second.created, false);
    assert.equal(second.endpoint.version, 2);
    assert.equal(second.endpoint.ref, '@champion');
    assert.equal(second.endpoint.replicas, 3);
    assert.deepEqual(second.endpoint.config, {});
    assert.equal(second.endpoint.createdAt, first.endpoint.createdAt, 'created once');
    assert.equal(second.endpoint.updatedAt, new Date(clock.ms).toISOString());
    assert.deepEqual(await store.getEndpoint('iris'), second.endpoint);
    assert.equal(await store.getEndpoint('nope'), null);

    await store.putEndpoint(endpoint('b-iris', 1));
    await store.putEndpoint(endpoint('Z-iris', 1));
    assert.deepEqual(
      (await store.listEndpoints()).map((e) => e.name),
      ['Z-iris', 'b-iris', 'iris'],
    );
  },
);

forEachStore(
  'endpoints: a missing or deleted version is refused; a served version cannot be deleted',
  async ({ store }) => {
    await withVersions(store, 2);
    await assert.rejects(
      store.putEndpoint(endpoint('iris', 9)),
      kilnCode('KILN_VERSION_NOT_FOUND'),
    );
    await assert.rejects(
      store.putEndpoint(endpoint('iris', 1, { model: 'ghost' })),
      kilnCode('KILN_VERSION_NOT_FOUND'),
    );
    await store.deleteVersion('iris', 2);
    await assert.rejects(
      store.putEndpoint(endpoint('iris', 2)),
      kilnCode('KILN_VERSION_NOT_FOUND'),
    );
    assert.deepEqual(await store.listEndpoints(), [], 'nothing written');

    await store.putEndpoint(endpoint('iris', 1));
    await store.putEndpoint(endpoint('iris-b', 1));
    await assert.rejects(store.deleteVersion('iris', 1), (error: unknown) => {
      kilnCode('KILN_VERSION_IN_USE')(error);
      assert.match((error as Error).message, /endpoint iris, endpoint iris-b/);
      return true;
    });
    assert.equal((await store.deleteEndpoint('iris'))?.name, 'iris');
    assert.equal(await store.deleteEndpoint('iris'), null);
    await store.deleteEndpoint('iris-b');
    assert.notEqual((await store.deleteVersion('iris', 1)).deletedAt, null);
  },
);

forEachStore(
  'endpoint writes: the check sees the endpoint as it is in the transaction, and what it throws writes nothing',
  async ({ store }) => {
    await withVersions(store, 2);
    const seen: (string | null)[] = [];
    const refused = new Error('another team');
    await store.putEndpoint(endpoint('iris', 1), {
      check: (existing) => void seen.push(existing?.team ?? null),
    });
    await assert.rejects(
      store.putEndpoint(endpoint('iris', 2, { team: 'risk' }), {
        check: (existing) => {
          seen.push(existing?.team ?? null);
          throw refused;
        },
      }),
      (error) => error === refused,
    );
    assert.equal((await store.getEndpoint('iris'))?.version, 1, 'the put wrote nothing');
    await assert.rejects(
      store.deleteEndpoint('iris', {
        check: (existing) => {
          seen.push(existing?.name ?? null);
          throw refused;
        },
      }),
      (error) => error === refused,
    );
    assert.notEqual(await store.getEndpoint('iris'), null, 'the delete removed nothing');
    await store.deleteEndpoint('nope', {
      check: (existing) => void seen.push(existing?.name ?? null),
    });
    assert.deepEqual(seen, [null, 'default', 'iris', null]);
  },
);

forEachStore('API keys: added, listed live by name, revoked once', async ({ store, clock }) => {
  const key = (id: string, name: string, scope: { team: string } | { endpoint: string }) => ({
    id,
    name,
    sha256: id.repeat(64).slice(0, 64),
    prefix: `kiln_${id}`,
    team: 'team' in scope ? scope.team : null,
    endpoint: 'endpoint' in scope ? scope.endpoint : null,
  });
  const ci = await store.addApiKey(key('a', 'ci', { team: 'risk' }));
  assert.deepEqual(ci, {
    ...key('a', 'ci', { team: 'risk' }),
    createdAt: new Date(clock.ms).toISOString(),
  });
  await store.addApiKey(key('b', 'Batch', { endpoint: 'iris' }));
  await store.addApiKey(key('c', 'ci', { team: 'growth' }));
  // The same digest twice is refused (a key is found by it).
  await assert.rejects(store.addApiKey({ ...key('d', 'x', { team: 'risk' }), sha256: ci.sha256 }));
  assert.deepEqual(
    (await store.listApiKeys()).map((k) => k.id),
    ['b', 'a', 'c'],
  );
  assert.equal((await store.revokeApiKey('a'))?.id, 'a');
  assert.equal(await store.revokeApiKey('a'), null, 'revoked once');
  assert.equal(await store.revokeApiKey('nope'), null);
  assert.deepEqual(
    (await store.listApiKeys()).map((k) => k.id),
    ['b', 'c'],
  );
});
