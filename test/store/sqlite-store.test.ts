import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import { KilnError } from '../../src/core/errors.ts';
import type { NewVersion } from '../../src/store/store.ts';
import { FakeClock, tempDir } from '../helpers/temp-dir.ts';

function newVersion(overrides: Partial<NewVersion> = {}): NewVersion {
  return {
    format: 'xgboost',
    files: [{ path: 'model.json', size: 3, sha256: 'a'.repeat(64) }],
    sizeBytes: 3,
    manifestDigest: 'f'.repeat(64),
    schema: null,
    metadata: { metrics: { auc: 0.9 } },
    lineage: {},
    tags: {},
    formatInfo: {},
    external: null,
    signature: null,
    ...overrides,
  };
}

async function openStore(): Promise<{ store: SqliteStore; path: string; clock: FakeClock }> {
  const dir = await tempDir();
  const clock = new FakeClock();
  const path = join(dir, 'kiln.db');
  return { store: SqliteStore.open(path, { clock }), path, clock };
}

function assertKilnError(code: string) {
  return (error: unknown): boolean => {
    assert.ok(error instanceof KilnError, `expected KilnError, got ${String(error)}`);
    assert.equal(error.code, code);
    return true;
  };
}

test('opens in WAL mode with foreign keys and records applied migrations; reopening is a no-op', async () => {
  const { store, path } = await openStore();
  await store.close();
  const again = SqliteStore.open(path);
  await again.close();
  const db = new Database(path, { readonly: true });
  assert.equal(db.pragma('journal_mode', { simple: true }), 'wal');
  const rows = db.prepare('SELECT version, name FROM schema_migrations').all();
  assert.deepEqual(rows, [
    { version: 1, name: 'registry' },
    { version: 2, name: 'endpoints-and-api-keys' },
    { version: 3, name: 'team-limits' },
    { version: 4, name: 'control-tokens-and-audit' },
    { version: 5, name: 'traffic-management' },
    { version: 6, name: 'autoscaling-and-pools' },
    { version: 7, name: 'reference-profiles' },
    { version: 8, name: 'drift-windows' },
    { version: 9, name: 'predictions-and-outcomes' },
    { version: 10, name: 'cost-usage' },
    { version: 11, name: 'slo-alerts' },
    { version: 12, name: 'leader-lease' },
  ]);
  db.close();
});

test('refuses a database whose schema is newer than this code', async () => {
  const { store, path } = await openStore();
  await store.close();
  const db = new Database(path);
  db.prepare(
    "INSERT INTO schema_migrations (version, name, applied_at) VALUES (99, 'future', 'x')",
  ).run();
  db.close();
  assert.throws(() => SqliteStore.open(path), /schema is at version 99/);
});

test('models: create, duplicate name, get, list with paging and team filter', async () => {
  const { store } = await openStore();
  for (const name of ['c-model', 'a-model', 'b-model']) {
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

  const first = await store.listModels({ limit: 2 });
  assert.deepEqual(
    first.items.map((m) => m.name),
    ['a-model', 'b-model'],
  );
  assert.notEqual(first.nextPageToken, null);
  const second = await store.listModels({ limit: 2, pageToken: first.nextPageToken ?? '' });
  assert.deepEqual(
    second.items.map((m) => m.name),
    ['c-model'],
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
});

test('versions: numbers increase, are never reused after a delete, and list newest first with paging', async () => {
  const { store } = await openStore();
  await store.createModel({ name: 'm', team: 'default', description: '' });
  const numbers = [];
  for (let i = 0; i < 5; i++) numbers.push((await store.createVersion('m', newVersion())).version);
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
  const model = await store.getModel('m');
  assert.equal(model?.latestVersion, 6);
  assert.equal(model?.versionCount, 5);
  await assert.rejects(
    store.createVersion('ghost', newVersion()),
    assertKilnError('KILN_MODEL_NOT_FOUND'),
  );
});

test('creating a model with its first version: one created meanwhile for another team is refused', async () => {
  const { store } = await openStore();
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
});

test('a stored version round-trips every field', async () => {
  const { store, clock } = await openStore();
  await store.createModel({ name: 'm', team: 'default', description: 'd' });
  const input = newVersion({
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
    signature: { keyId: '0123456789abcdef', signature: 'c2ln' },
  });
  const created = await store.createVersion('m', input);
  assert.deepEqual(
    { ...created, createdAt: undefined },
    {
      model: 'm',
      version: 1,
      format: input.format,
      files: input.files,
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

test('aliases move atomically, report the previous version, and block deleting their version', async () => {
  const { store } = await openStore();
  await store.createModel({ name: 'm', team: 'default', description: '' });
  await store.createVersion('m', newVersion());
  await store.createVersion('m', newVersion());
  assert.deepEqual(await store.setAlias('m', 'champion', 1), { previousVersion: null });
  assert.deepEqual(await store.setAlias('m', 'champion', 2), { previousVersion: 1 });
  assert.equal(await store.resolveAlias('m', 'champion'), 2);
  assert.deepEqual((await store.getVersion('m', 2))?.aliases, ['champion']);
  assert.deepEqual((await store.getModel('m'))?.aliases, { champion: 2 });

  await assert.rejects(store.deleteVersion('m', 2), (error: unknown) => {
    assert.ok(error instanceof KilnError);
    assert.equal(error.code, 'KILN_VERSION_IN_USE');
    assert.match(error.message, /alias champion/);
    return true;
  });
  await store.deleteVersion('m', 1);
  await assert.rejects(store.setAlias('m', 'staging', 1), assertKilnError('KILN_VERSION_DELETED'));
  await assert.rejects(
    store.setAlias('m', 'staging', 9),
    assertKilnError('KILN_VERSION_NOT_FOUND'),
  );
  assert.deepEqual((await store.deleteAlias('m', 'champion'))?.version, 2);
  assert.equal(await store.deleteAlias('m', 'champion'), null);
  await store.deleteVersion('m', 2);
});

test('lineage queries find versions across models by dataset, run and experiment', async () => {
  const { store } = await openStore();
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
});

test('live blob digests exclude deleted versions', async () => {
  const { store } = await openStore();
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
});

test('trusted keys and signing policy', async () => {
  const { store } = await openStore();
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
  assert.equal((await store.listTrustedKeys()).length, 1);
  assert.deepEqual(await store.getSigningPolicy(), { requireSignature: false, teams: {} });
  await store.setSigningPolicy(null, true);
  const policy = await store.setSigningPolicy('risk', false);
  assert.deepEqual(policy, {
    requireSignature: true,
    teams: { risk: { requireSignature: false } },
  });
  assert.equal((await store.removeTrustedKey('0123456789abcdef'))?.keyId, '0123456789abcdef');
  assert.equal(await store.removeTrustedKey('0123456789abcdef'), null);
});
