// Store contract, registry: models, versions, aliases, lineage, live blob digests and
// signing, on SQLite and on PostgreSQL (test/helpers/store-kinds.ts). Includes the bar of
// issue 17: registrations racing from two control planes get distinct, gapless versions.

import assert from 'node:assert/strict';
import { KilnError } from '../../src/core/errors.ts';
import { sqliteMigrations } from '../../src/store/sqlite/migrations.ts';
import { postgresMigrations } from '../../src/store/postgres/pg-migrations.ts';
import type { NewVersion } from '../../src/store/store.ts';
import { forEachStore } from '../helpers/store-kinds.ts';
import { placeholderVersion } from '../helpers/stored-version.ts';

function newVersion(overrides: Partial<NewVersion> = {}): NewVersion {
  return { ...placeholderVersion(), metadata: { metrics: { auc: 0.9 } }, ...overrides };
}

function assertKilnError(code: string) {
  return (error: unknown): boolean => {
    assert.ok(error instanceof KilnError, `expected KilnError, got ${String(error)}`);
    assert.equal(error.code, code);
    return true;
  };
}

forEachStore(
  'models: create, duplicate name, get, list with paging and team filter',
  async ({ store }) => {
    for (const name of ['c-model', 'a-model', 'b-model', 'B-model']) {
      await store.createModel({
        name,
        team: name === 'b-model' ? 'risk' : 'default',
        description: '',
      });
    }
    await assert.rejects(
      store.createModel({ name: 'a-model', team: 'x', description: '' }),
      assertKilnError('KILN_MODEL_EXISTS'),
    );
    assert.equal((await store.getModel('a-model'))?.team, 'default');
    assert.equal(await store.getModel('nope'), null);

    // Byte order, whatever the database's locale: upper case first.
    const first = await store.listModels({ limit: 2 });
    assert.deepEqual(
      first.items.map((m) => m.name),
      ['B-model', 'a-model'],
    );
    assert.notEqual(first.nextPageToken, null);
    const second = await store.listModels({ limit: 2, pageToken: first.nextPageToken ?? '' });
    assert.deepEqual(
      second.items.map((m) => m.name),
      ['b-model', 'c-model'],
    );
    assert.equal(second.nextPageToken, null);
    const risk = await store.listModels({ limit: 10, team: 'risk' });
    assert.deepEqual(
      risk.items.map((m) => m.name),
      ['b-model'],
    );
    await assert.rejects(
      store.listModels({ limit: 2, pageToken: 'garbage!!' }),
      assertKilnError('KILN_VALIDATION_FAILED'),
    );
  },
);

forEachStore(
  'versions: numbers increase, are never reused after a delete, and list newest first with paging',
  async ({ store }) => {
    await store.createModel({ name: 'm', team: 'default', description: '' });
    const numbers = [];
    for (let i = 0; i < 5; i++)
      numbers.push((await store.createVersion('m', newVersion())).version);
    assert.deepEqual(numbers, [1, 2, 3, 4, 5]);
    await store.deleteVersion('m', 5);
    assert.equal((await store.createVersion('m', newVersion())).version, 6);

    const page1 = await store.listVersions('m', { limit: 3 });
    assert.deepEqual(
      page1.items.map((v) => v.version),
      [6, 4, 3],
    );
    const page2 = await store.listVersions('m', { limit: 3, pageToken: page1.nextPageToken ?? '' });
    assert.deepEqual(
      page2.items.map((v) => v.version),
      [2, 1],
    );
    assert.equal(page2.nextPageToken, null);
    const all = await store.listVersions('m', { limit: 10, includeDeleted: true });
    assert.deepEqual(
      all.items.map((v) => v.version),
      [6, 5, 4, 3, 2, 1],
    );

    assert.equal(await store.getVersion('m', 5), null);
    assert.notEqual((await store.getVersion('m', 5, { includeDeleted: true }))?.deletedAt, null);
    await assert.rejects(store.deleteVersion('m', 5), assertKilnError('KILN_VERSION_NOT_FOUND'));
    const model = await store.getModel('m');
    assert.equal(model?.latestVersion, 6);
    assert.equal(model?.versionCount, 5);
    await assert.rejects(
      store.createVersion('ghost', newVersion()),
      assertKilnError('KILN_MODEL_NOT_FOUND'),
    );
    await assert.rejects(
      store.listVersions('ghost', { limit: 1 }),
      assertKilnError('KILN_MODEL_NOT_FOUND'),
    );
    assert.equal(await store.getVersion('ghost', 1), null);
  },
);

forEachStore(
  'creating a model with its first version: one created meanwhile for another team is refused',
  async ({ store }) => {
    const create = (team: string) => ({ createModel: { name: 'pay', team, description: '' } });
    // Missing: created with the version, for the team asked.
    assert.equal((await store.createVersion('pay', newVersion(), create('risk'))).version, 1);
    // Created meanwhile for the same team: the version joins it.
    assert.equal((await store.createVersion('pay', newVersion(), create('risk'))).version, 2);
    // For another team: refused, nothing written (its signing policy was not the one checked).
    await assert.rejects(
      store.createVersion('pay', newVersion(), create('secure')),
      assertKilnError('KILN_MODEL_EXISTS'),
    );
    assert.equal((await store.getModel('pay'))?.versionCount, 2);
    assert.equal((await store.createVersion('pay', newVersion())).version, 3, 'no number lost');
  },
);

forEachStore(
  'a version check that throws writes nothing: no model, no version, no number used',
  async ({ store }) => {
    const refused = new Error('blob gone');
    await assert.rejects(
      store.createVersion('pay', newVersion(), {
        createModel: { name: 'pay', team: 'risk', description: '' },
        check: () => {
          throw refused;
        },
      }),
      (error) => error === refused,
    );
    assert.equal(await store.getModel('pay'), null);
    await store.createModel({ name: 'm', team: 'default', description: '' });
    await assert.rejects(
      store.createVersion('m', newVersion(), {
        check: () => {
          throw refused;
        },
      }),
      (error) => error === refused,
    );
    assert.equal((await store.createVersion('m', newVersion())).version, 1);
  },
);

forEachStore('a stored version round-trips every field', async ({ store, clock }) => {
  await store.createModel({ name: 'm', team: 'default', description: 'd' });
  const input = newVersion({
    files: [
      { path: 'model.json', size: 3, sha256: 'a'.repeat(64) },
      { path: 'B.bin', size: 5, sha256: 'b'.repeat(64) },
    ],
    schema: {
      inputs: [{ name: 'x', datatype: 'FP32', shape: [-1, 4] }],
      outputs: [{ name: 'y', datatype: 'FP32', shape: [-1] }],
    },
    metadata: {
      trainingJobId: 'job-1',
      datasetVersion: 'v7',
      metrics: { auc: 0.91 },
      hardware: { cpus: 2, memoryBytes: 1024 },
      dependencies: { xgboost: '1.7.4' },
      extra: { owner: 'risk' },
    },
    lineage: {
      run: 'run-1',
      datasetUri: 's3://data/fraud',
      datasetVersion: 'v7',
      experiment: 'exp',
    },
    tags: { stage: 'dev' },
    formatInfo: { numTrees: 10 },
    external: null,
    signature: { keyId: '0123456789abcdef', signature: 'c2ln' },
  });
  const created = await store.createVersion('m', input);
  assert.deepEqual(
    { ...created, createdAt: undefined },
    {
      model: 'm',
      version: 1,
      format: input.format,
      // Files in path byte order.
      files: [input.files[1], input.files[0]],
      sizeBytes: input.sizeBytes,
      manifestDigest: input.manifestDigest,
      schema: input.schema,
      metadata: input.metadata,
      lineage: input.lineage,
      tags: input.tags,
      formatInfo: input.formatInfo,
      external: null,
      signature: input.signature,
      aliases: [],
      createdAt: undefined,
      deletedAt: null,
    },
  );
  assert.equal(created.createdAt, new Date(clock.ms).toISOString());
  assert.deepEqual(await store.getVersion('m', 1), created);
});

forEachStore(
  'aliases move atomically, report the previous version, and block deleting their version',
  async ({ store }) => {
    await store.createModel({ name: 'm', team: 'default', description: '' });
    await store.createVersion('m', newVersion());
    await store.createVersion('m', newVersion());
    assert.deepEqual(await store.setAlias('m', 'champion', 1), { previousVersion: null });
    assert.deepEqual(await store.setAlias('m', 'champion', 2), { previousVersion: 1 });
    assert.deepEqual(await store.setAlias('m', 'Beta', 2), { previousVersion: null });
    assert.equal(await store.resolveAlias('m', 'champion'), 2);
    assert.equal(await store.resolveAlias('m', 'nope'), null);
    assert.deepEqual((await store.getVersion('m', 2))?.aliases, ['Beta', 'champion']);
    assert.deepEqual((await store.getModel('m'))?.aliases, { Beta: 2, champion: 2 });
    assert.deepEqual(
      (await store.listAliases('m')).map((a) => [a.alias, a.version]),
      [
        ['Beta', 2],
        ['champion', 2],
      ],
    );

    await assert.rejects(store.deleteVersion('m', 2), (error: unknown) => {
      assert.ok(error instanceof KilnError);
      assert.equal(error.code, 'KILN_VERSION_IN_USE');
      assert.match(error.message, /alias Beta, alias champion/);
      return true;
    });
    await store.deleteVersion('m', 1);
    await assert.rejects(
      store.setAlias('m', 'staging', 1),
      assertKilnError('KILN_VERSION_DELETED'),
    );
    await assert.rejects(
      store.setAlias('m', 'staging', 9),
      assertKilnError('KILN_VERSION_NOT_FOUND'),
    );
    await assert.rejects(
      store.setAlias('ghost', 'staging', 1),
      assertKilnError('KILN_MODEL_NOT_FOUND'),
    );
    assert.deepEqual((await store.deleteAlias('m', 'champion'))?.version, 2);
    assert.equal(await store.deleteAlias('m', 'champion'), null);
    await store.deleteAlias('m', 'Beta');
    await store.deleteVersion('m', 2);
  },
);

forEachStore(
  'lineage queries find versions across models by dataset, run and experiment',
  async ({ store }) => {
    await store.createModel({ name: 'a', team: 'default', description: '' });
    await store.createModel({ name: 'b', team: 'default', description: '' });
    await store.createVersion(
      'a',
      newVersion({ lineage: { datasetUri: 'ds://x', datasetVersion: '1', run: 'r1' } }),
    );
    await store.createVersion(
      'b',
      newVersion({
        lineage: { datasetUri: 'ds://x', datasetVersion: '2', run: 'r2', experiment: 'e' },
      }),
    );
    await store.createVersion('b', newVersion({ lineage: { datasetUri: 'ds://y', run: 'r3' } }));

    const byDataset = await store.findByLineage({ datasetUri: 'ds://x' }, { limit: 10 });
    assert.deepEqual(
      byDataset.items.map((v) => `${v.model}:${v.version}`),
      ['a:1', 'b:1'],
    );
    const byDatasetVersion = await store.findByLineage(
      { datasetUri: 'ds://x', datasetVersion: '2' },
      { limit: 10 },
    );
    assert.deepEqual(
      byDatasetVersion.items.map((v) => `${v.model}:${v.version}`),
      ['b:1'],
    );
    const byRun = await store.findByLineage({ run: 'r3' }, { limit: 10 });
    assert.deepEqual(
      byRun.items.map((v) => `${v.model}:${v.version}`),
      ['b:2'],
    );
    const byExperiment = await store.findByLineage({ experiment: 'e' }, { limit: 10 });
    assert.deepEqual(
      byExperiment.items.map((v) => `${v.model}:${v.version}`),
      ['b:1'],
    );
    const paged = await store.findByLineage({ datasetUri: 'ds://x' }, { limit: 1 });
    assert.equal(paged.items.length, 1);
    const rest = await store.findByLineage(
      { datasetUri: 'ds://x' },
      { limit: 1, pageToken: paged.nextPageToken ?? '' },
    );
    assert.deepEqual(
      rest.items.map((v) => v.model),
      ['b'],
    );
    assert.equal(rest.nextPageToken, null);
    await store.deleteVersion('a', 1);
    assert.deepEqual(
      (await store.findByLineage({ datasetUri: 'ds://x' }, { limit: 10 })).items.map(
        (v) => v.model,
      ),
      ['b'],
      'deleted versions are not found',
    );
  },
);

forEachStore('live blob digests exclude deleted versions', async ({ store }) => {
  await store.createModel({ name: 'm', team: 'default', description: '' });
  const shared = { path: 'a', size: 1, sha256: '1'.repeat(64) };
  await store.createVersion(
    'm',
    newVersion({ files: [shared, { path: 'b', size: 1, sha256: '2'.repeat(64) }] }),
  );
  await store.createVersion(
    'm',
    newVersion({ files: [shared, { path: 'c', size: 1, sha256: '3'.repeat(64) }] }),
  );
  await store.deleteVersion('m', 1);
  assert.deepEqual([...(await store.liveBlobDigests())].sort(), ['1'.repeat(64), '3'.repeat(64)]);
  const seen = await store.withLiveBlobDigests((live) => [...live].sort());
  assert.deepEqual(seen, ['1'.repeat(64), '3'.repeat(64)]);
});

forEachStore('trusted keys and signing policy', async ({ store }) => {
  const key = await store.addTrustedKey({
    keyId: '0123456789abcdef',
    name: 'ci',
    team: null,
    publicKey: 'PEM',
  });
  assert.equal(key.name, 'ci');
  await assert.rejects(
    store.addTrustedKey({ keyId: '0123456789abcdef', name: 'x', team: null, publicKey: 'PEM' }),
    assertKilnError('KILN_KEY_EXISTS'),
  );
  await store.addTrustedKey({
    keyId: 'fedcba9876543210',
    name: 'CD',
    team: 'risk',
    publicKey: 'P',
  });
  assert.deepEqual(
    (await store.listTrustedKeys()).map((k) => k.name),
    ['CD', 'ci'],
  );
  assert.deepEqual(await store.getTrustedKey('0123456789abcdef'), key);
  assert.equal(await store.getTrustedKey('ffffffffffffffff'), null);
  assert.deepEqual(await store.getSigningPolicy(), { requireSignature: false, teams: {} });
  await store.setSigningPolicy(null, true);
  const policy = await store.setSigningPolicy('risk', false);
  assert.deepEqual(policy, {
    requireSignature: true,
    teams: { risk: { requireSignature: false } },
  });
  assert.deepEqual(await store.getSigningPolicy(), policy);
  assert.equal((await store.removeTrustedKey('0123456789abcdef'))?.keyId, '0123456789abcdef');
  assert.equal(await store.removeTrustedKey('0123456789abcdef'), null);
});

forEachStore(
  '50 registrations at once from two control planes: distinct, gapless versions 1..50',
  async (subject) => {
    const { store } = subject;
    const planes = [store, await subject.openAnother()];
    const create = { createModel: { name: 'fraud', team: 'risk', description: '' } };
    const registered = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        (planes[i % 2] ?? store).createVersion('fraud', newVersion(), create),
      ),
    );
    assert.deepEqual(
      registered.map((v) => v.version).sort((a, b) => a - b),
      Array.from({ length: 50 }, (_, i) => i + 1),
    );
    for (const plane of planes) {
      const model = await plane.getModel('fraud');
      assert.equal(model?.versionCount, 50);
      assert.equal(model?.latestVersion, 50);
    }
    const listed = await planes[1]?.listVersions('fraud', { limit: 100 });
    assert.equal(listed?.items.length, 50);
    assert.equal((await store.createVersion('fraud', newVersion())).version, 51);
  },
);

forEachStore(
  'a database whose schema is newer than this code is refused (KILN_STORE_SCHEMA_NEWER)',
  async (subject) => {
    const { kind, store } = subject;
    await store.createModel({ name: 'm', team: 'default', description: '' });
    const older = (kind === 'sqlite' ? sqliteMigrations : postgresMigrations).slice(0, 5);
    await assert.rejects(subject.openAnother({ migrations: older }), (error: unknown) => {
      assertKilnError('KILN_STORE_SCHEMA_NEWER')(error);
      assert.match((error as Error).message, /knows only up to 5/);
      return true;
    });
    assert.notEqual(await store.getModel('m'), null, 'the database is left as it was');
  },
);
