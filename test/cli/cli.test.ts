// End to end: the real `kiln` CLI as OS processes against a real platform started with
// `kiln up --port 0` in a temp home, using the real fixture models in fixtures/registry/.
// The tests run in order and build on each other (a registry's life: register, inspect,
// alias, sign, verify, delete, gc).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  Cli,
  fixtures,
  freePort,
  sha256,
  startPlatformProcess,
  type Page,
  type PlatformProcess,
  type Version,
} from './cli-harness.ts';

let home = '';
let platform: PlatformProcess | undefined;
let cli: Cli;
const ok = (args: readonly string[]): Promise<string> => cli.ok(args);
const json = <T>(args: readonly string[]): Promise<T> => cli.json<T>(args);
const fails = (
  args: readonly string[],
  exitCode: number,
  env: Record<string, string> = {},
): Promise<string> => cli.fails(args, exitCode, env);

before(async () => {
  // Not the tempDir helper: its after() would be scoped to this hook's first test, and the
  // platform's home must outlive every test in the file.
  home = await mkdtemp(join(tmpdir(), 'kiln-cli-e2e-'));
  platform = await startPlatformProcess(home);
  cli = new Cli(platform.url, home);
});

after(async () => {
  if (platform !== undefined)
    assert.equal(await platform.stop(), 0, 'kiln up should stop cleanly on SIGTERM');
  if (home !== '') await rm(home, { recursive: true, force: true });
});

void test('health', async () => {
  const health = await json<{ status: string; home: string }>(['health']);
  assert.equal(health.status, 'ok');
  assert.match(await ok(['health']), /^status:\s+ok$/m);
});

void test('register a single file, with metadata, lineage, tags and an alias', async () => {
  const stdout = await ok([
    'models',
    'register',
    join(fixtures, 'xgb-binary.json'),
    '--name',
    'churn',
    '--format',
    'xgboost',
    '--team',
    'growth',
    '--description',
    'churn classifier',
    '--metric',
    'auc=0.91',
    '--meta',
    'metric.f1=0.8',
    '--meta',
    'dep.xgboost=2.1.0',
    '--meta',
    'hardware.cpus=2',
    '--meta',
    'owner=ana',
    '--training-job',
    'job-17',
    '--dependency',
    'numpy=2.0',
    '--tag',
    'stage=dev',
    '--lineage-run',
    'run-1',
    '--dataset',
    's3://data/churn',
    '--dataset-version',
    '2024-05',
    '--experiment',
    'exp-a',
    '--alias',
    'champion',
  ]);
  assert.match(stdout, /^registered churn version 1 \(xgboost, 1 file, 11\.8 KiB\)$/m);
  assert.match(stdout, /^manifest:\s+[0-9a-f]{64}$/m);
  assert.match(stdout, /^alias:\s+champion: none → 1$/m);

  const version = await json<Version>(['models', 'show', 'churn:1']);
  const bytes = await readFile(join(fixtures, 'xgb-binary.json'));
  assert.deepEqual(version.files, [
    { path: 'xgb-binary.json', size: bytes.length, sha256: sha256(bytes) },
  ]);
  assert.deepEqual(version.metadata?.metrics, { auc: 0.91, f1: 0.8 });
  assert.deepEqual(version.metadata?.dependencies, { xgboost: '2.1.0', numpy: '2.0' });
  assert.deepEqual(version.metadata?.hardware, { cpus: 2 });
  assert.deepEqual(version.metadata?.extra, { owner: 'ana' });
  assert.equal(version.metadata?.trainingJobId, 'job-17');
  assert.deepEqual(version.lineage, {
    run: 'run-1',
    datasetUri: 's3://data/churn',
    datasetVersion: '2024-05',
    experiment: 'exp-a',
  });
  assert.deepEqual(version.tags, { stage: 'dev' });
  assert.deepEqual(version.aliases, ['champion']);
});

void test('registering the same bytes again uploads nothing and makes version 2', async () => {
  const stdout = await ok([
    'models',
    'register',
    join(fixtures, 'xgb-binary.json'),
    '--name',
    'churn',
    '--format',
    'xgboost',
  ]);
  assert.match(stdout, /^registered churn version 2 /m);
  assert.match(stdout, /^uploaded:\s+0 new blobs \(0 B\), 1 already stored$/m);
});

void test('register a folder: recursive, POSIX paths relative to it', async () => {
  const version = await json<Version>([
    'models',
    'register',
    join(fixtures, 'tiny-llm'),
    '--name',
    'tiny',
    '--format',
    'hf-llm',
  ]);
  assert.equal(version.version, 1);
  const names = (await readdir(join(fixtures, 'tiny-llm'))).sort();
  assert.ok(names.includes('config.json') && names.includes('model.safetensors'));
  assert.deepEqual(
    version.files.map((f) => f.path),
    names,
  );
  const sizes = await Promise.all(names.map((f) => stat(join(fixtures, 'tiny-llm', f))));
  assert.equal(
    version.sizeBytes,
    sizes.reduce((sum, s) => sum + s.size, 0),
  );

  // Nested folders: a copy of the fixture under sub/dir/ keeps POSIX paths relative to the root.
  const nested = join(home, 'nested-llm');
  await mkdir(join(nested, 'sub', 'dir'), { recursive: true });
  for (const name of names)
    await copyFile(join(fixtures, 'tiny-llm', name), join(nested, 'sub', 'dir', name));
  await copyFile(join(fixtures, 'tiny-llm', 'config.json'), join(nested, 'config.json'));
  const copy = await json<Version>([
    'models',
    'register',
    nested,
    '--name',
    'tiny-copy',
    '--format',
    'external',
    '--external-image',
    'ghcr.io/x/llm:1',
  ]);
  assert.deepEqual(
    copy.files.map((f) => f.path),
    ['config.json', ...names.map((n) => `sub/dir/${n}`)],
  );
});

void test('register an ONNX model with a schema file', async () => {
  const schemaFile = join(home, 'mlp-schema.json');
  const schema = {
    inputs: [{ name: 'input', datatype: 'FP32', shape: [-1, 4] }],
    outputs: [{ name: 'logits', datatype: 'FP32', shape: [-1, 3] }],
  };
  await writeFile(schemaFile, JSON.stringify(schema));
  const version = await json<Version>([
    'models',
    'register',
    join(fixtures, 'mlp.onnx'),
    '--name',
    'mlp',
    '--format',
    'onnx',
    '--schema',
    schemaFile,
  ]);
  assert.deepEqual(version.schema, schema);
  const shown = await ok(['models', 'show', 'mlp:1']);
  assert.match(shown, /^Schema$/m);
  assert.match(shown, /^input\s+input\s+FP32\s+\[-1, 4\]$/m);

  await writeFile(join(home, 'broken.json'), '{"inputs": [');
  const stderr = await fails(
    [
      'models',
      'register',
      join(fixtures, 'mlp.onnx'),
      '--name',
      'mlp',
      '--format',
      'onnx',
      '--schema',
      join(home, 'broken.json'),
    ],
    1,
  );
  assert.match(stderr, /schema file .*broken\.json is not valid JSON/);
});

void test('register an external model (no PATH)', async () => {
  const version = await json<Version>([
    'models',
    'register',
    '--name',
    'remote-llm',
    '--format',
    'external',
    '--external-url',
    'http://llm.internal:8000',
    '--protocol',
    'openai',
  ]);
  assert.deepEqual(version.files, []);
  assert.deepEqual(version.external, { url: 'http://llm.internal:8000', protocol: 'openai' });
});

void test('list models as a table and as JSON', async () => {
  const table = await ok(['models', 'list']);
  const [header, ...rows] = table.trimEnd().split('\n');
  assert.match(header ?? '', /^NAME\s+TEAM\s+LATEST\s+VERSIONS\s+ALIASES\s+CREATED$/);
  assert.match(
    rows.find((r) => r.startsWith('churn ')) ?? '',
    /^churn\s+growth\s+2\s+2\s+champion→1\s+\d{4}-\d{2}-\d{2} /,
  );

  const page = await json<Page<{ name: string }>>(['models', 'list']);
  assert.deepEqual(
    page.items.map((m) => m.name),
    ['churn', 'mlp', 'remote-llm', 'tiny', 'tiny-copy'],
  );
  const limited = await json<Page<{ name: string }>>(['models', 'list', '--limit', '1']);
  assert.deepEqual(
    limited.items.map((m) => m.name),
    ['churn'],
  );
  const growth = await json<Page<{ name: string }>>(['models', 'list', '--team', 'growth']);
  assert.deepEqual(
    growth.items.map((m) => m.name),
    ['churn'],
  );
});

void test('show a model, a version and an alias', async () => {
  const model = await json<{
    name: string;
    latestVersion: number;
    aliases: Record<string, number>;
  }>(['models', 'show', 'churn']);
  assert.equal(model.latestVersion, 2);
  assert.deepEqual(model.aliases, { champion: 1 });
  assert.match(await ok(['models', 'show', 'churn']), /^latest version:\s+2$/m);

  const byAlias = await json<Version>(['models', 'show', 'churn@champion']);
  assert.equal(byAlias.version, 1);
  const text = await ok(['models', 'show', 'churn:1']);
  assert.match(text, /^Files\nPATH\s+SIZE\s+SHA256\nxgb-binary\.json\s+11\.8 KiB\s+[0-9a-f]{64}$/m);
  assert.match(text, /^Lineage$/m);
  assert.match(text, /^ {2}dataset:\s+s3:\/\/data\/churn$/m);
  assert.match(text, /^ {2}metrics:\s+auc=0\.91, f1=0\.8$/m);
});

void test('versions, newest first', async () => {
  const table = await ok(['models', 'versions', 'churn']);
  assert.match(table, /^VERSION\s+FORMAT\s+SIZE\s+FILES\s+ALIASES\s+CREATED$/m);
  const page = await json<Page<Version>>(['models', 'versions', 'churn']);
  assert.deepEqual(
    page.items.map((v) => v.version),
    [2, 1],
  );
});

void test('alias: set, move, list, delete', async () => {
  assert.equal(await ok(['models', 'alias', 'churn', 'champion', '2']), 'alias champion: 1 → 2\n');
  assert.equal(await ok(['models', 'alias', 'churn', 'canary', '1']), 'alias canary: none → 1\n');
  const aliases = await json<{ items: Array<{ alias: string; version: number }> }>([
    'models',
    'alias',
    'churn',
  ]);
  assert.deepEqual(aliases.items.map((a) => [a.alias, a.version]).sort(), [
    ['canary', 1],
    ['champion', 2],
  ]);
  assert.match(await ok(['models', 'alias', 'churn']), /^ALIAS\s+VERSION\s+UPDATED$/m);
  assert.match(
    await ok(['models', 'alias', 'churn', 'canary', '--delete']),
    /removed alias canary/,
  );
  await fails(['models', 'alias', 'churn', 'champion', 'two'], 2);
});

void test('lineage queries', async () => {
  const page = await json<Page<Version>>(['models', 'lineage', '--dataset', 's3://data/churn']);
  assert.deepEqual(
    page.items.map((v) => `${v.model}:${v.version}`),
    ['churn:1'],
  );
  const table = await ok(['models', 'lineage', '--experiment', 'exp-a']);
  assert.match(table, /^MODEL\s+VERSION\s+FORMAT\s+RUN\s+DATASET\s+EXPERIMENT\s+CREATED$/m);
  assert.match(table, /^churn\s+1\s+xgboost\s+run-1\s+s3:\/\/data\/churn@2024-05\s+exp-a\s+/m);
  const none = await json<Page<Version>>(['models', 'lineage', '--run', 'no-such-run']);
  assert.deepEqual(none.items, []);
  await fails(['models', 'lineage'], 2);
});

void test('pickles are refused: loading them executes code', async () => {
  const stderr = await fails(
    ['models', 'register', join(fixtures, 'model.pkl'), '--name', 'legacy', '--format', 'onnx'],
    1,
  );
  assert.match(stderr, /KILN_UNSAFE_ARTIFACT/);
  assert.match(stderr, /execut\w* (arbitrary )?code/);
  // the refused first version did not leave an empty model behind
  assert.match(await fails(['models', 'show', 'legacy'], 1), /KILN_MODEL_NOT_FOUND/);
});

void test('signing: keys create + trust, policy require, unsigned refused, signed accepted, verify', async () => {
  const created = await json<{
    keyId: string;
    privateKeyPath: string;
    publicKeyPath: string;
    trusted: { keyId: string } | null;
  }>(['keys', 'create', 'release', '--trust']);
  assert.equal(created.privateKeyPath, join(home, 'keys', 'release.key'));
  assert.equal((await stat(created.privateKeyPath)).mode & 0o777, 0o600);
  assert.equal(created.trusted?.keyId, created.keyId);
  assert.match(await fails(['keys', 'create', 'release'], 1), /already exists/);

  const keys = await json<{ items: Array<{ keyId: string; name: string }> }>(['keys', 'list']);
  assert.deepEqual(
    keys.items.map((k) => [k.keyId, k.name]),
    [[created.keyId, 'release']],
  );

  assert.match(
    await ok(['policy', 'set', '--require-signature', 'true']),
    /^require signature:\s+yes/m,
  );
  const policy = await json<{ signing: { requireSignature: boolean } }>(['policy', 'show']);
  assert.equal(policy.signing.requireSignature, true);

  const refused = await fails(
    ['models', 'register', join(fixtures, 'mlp.onnx'), '--name', 'mlp', '--format', 'onnx'],
    1,
  );
  assert.match(refused, /KILN_SIGNATURE_REQUIRED/);
  assert.match(refused, /^hint: .*--sign-key/m);

  const signedOut = await ok([
    'models',
    'register',
    join(fixtures, 'mlp.onnx'),
    '--name',
    'mlp',
    '--format',
    'onnx',
    '--sign-key',
    created.privateKeyPath,
  ]);
  assert.match(signedOut, /^registered mlp version 2 /m);
  assert.match(signedOut, new RegExp(`^signature:\\s+key ${created.keyId}$`, 'm'));
  const signed = await json<Version>(['models', 'show', 'mlp:2']);
  assert.equal(signed.signature?.keyId, created.keyId);

  const verified = await json<{ ok: boolean; files: number; signature: string }>([
    'models',
    'verify',
    'mlp',
  ]);
  assert.deepEqual([verified.ok, verified.files, verified.signature], [true, 1, 'valid']);
  assert.match(
    await ok(['models', 'verify', 'mlp:2']),
    /^verified mlp:2: 1 file, .* intact, signature valid$/m,
  );

  assert.match(
    await ok(['policy', 'set', '--require-signature', 'false']),
    /^require signature:\s+no/m,
  );
  await fails(['policy', 'set', '--require-signature', 'maybe'], 2);
});

void test('keys trust a .pub file for one team, then revoke it', async () => {
  const other = await json<{ keyId: string; publicKeyPath: string; trusted: null }>([
    'keys',
    'create',
    'ci',
    '--dir',
    join(home, 'other-keys'),
  ]);
  assert.equal(other.trusted, null);
  const trusted = await json<{ keyId: string; name: string; team: string | null }>([
    'keys',
    'trust',
    other.publicKeyPath,
    '--team',
    'growth',
  ]);
  assert.deepEqual(trusted, { ...trusted, keyId: other.keyId, name: 'ci', team: 'growth' });
  assert.match(await ok(['keys', 'list']), /^KEY ID\s+NAME\s+TEAM\s+CREATED$/m);
  assert.equal(await ok(['keys', 'revoke', other.keyId]), `revoked key ${other.keyId} (ci)\n`);
  await fails(['keys', 'trust', join(fixtures, 'mlp.onnx')], 1);
});

void test('delete: refused while aliased, then soft-deleted and listed with --all', async () => {
  assert.match(await fails(['models', 'delete', 'churn:2'], 1), /KILN_VERSION_IN_USE/);
  await ok(['models', 'alias', 'churn', 'champion', '1']);
  const deleted = await json<Version>(['models', 'delete', 'churn:2']);
  assert.notEqual(deleted.deletedAt, null);
  const live = await json<Page<Version>>(['models', 'versions', 'churn']);
  assert.deepEqual(
    live.items.map((v) => v.version),
    [1],
  );
  const all = await json<Page<Version>>(['models', 'versions', 'churn', '--all']);
  assert.deepEqual(
    all.items.map((v) => v.version),
    [2, 1],
  );
  assert.match(
    await ok(['models', 'versions', 'churn', '--all']),
    /^VERSION\s+FORMAT\s+SIZE\s+FILES\s+ALIASES\s+CREATED\s+DELETED$/m,
  );
  await fails(['models', 'delete', 'churn'], 2);
});

void test('gc: dry run, then collect', async () => {
  await ok(['models', 'delete', 'tiny:1']);
  await ok(['models', 'delete', 'tiny-copy:1']);
  // Garbage now: the tiny-llm files (both copies hold the same bytes), plus the pickle that
  // was uploaded before its registration was refused.
  const garbage = (await readdir(join(fixtures, 'tiny-llm'))).length + 1;
  const dry = await json<{
    removedBlobs: number;
    removedBytes: number;
    keptBlobs: number;
    dryRun: boolean;
  }>(['gc', '--dry-run', '--grace-seconds', '0']);
  assert.equal(dry.dryRun, true);
  assert.equal(dry.removedBlobs, garbage);
  assert.match(
    await ok(['gc', '--dry-run', '--grace-seconds', '0']),
    new RegExp(`^would remove ${garbage} blobs \\(.+\\), kept ${dry.keptBlobs}$`, 'm'),
  );
  assert.match(
    await ok(['gc', '--grace-seconds', '0']),
    new RegExp(`^removed ${garbage} blobs \\(.+\\), kept ${dry.keptBlobs}$`, 'm'),
  );
  const again = await json<{ removedBlobs: number }>(['gc', '--grace-seconds', '0']);
  assert.equal(again.removedBlobs, 0);
  const verified = await json<{ ok: boolean }>(['models', 'verify', 'churn@champion']);
  assert.equal(verified.ok, true);
});

void test('unknown model', async () => {
  const stderr = await fails(['models', 'show', 'nope'], 1);
  assert.match(stderr, /^error: .*nope.* \(KILN_MODEL_NOT_FOUND\)$/m);
  assert.match(await fails(['models', 'versions', 'nope'], 1), /KILN_MODEL_NOT_FOUND/);
});

void test('usage errors exit 2 with one line', async () => {
  await fails(['models', 'lst'], 2);
  await fails(['models', 'list', '--bogus'], 2);
  await fails(
    ['models', 'register', join(fixtures, 'mlp.onnx'), '--name', 'm', '--format', 'pytorch'],
    2,
  );
  await fails(
    [
      'models',
      'register',
      join(fixtures, 'mlp.onnx'),
      '--name',
      'm',
      '--format',
      'onnx',
      '--meta',
      'metric.auc=high',
    ],
    2,
  );
  await fails(
    [
      'models',
      'register',
      join(fixtures, 'mlp.onnx'),
      '--name',
      'm',
      '--format',
      'onnx',
      '--meta',
      'no-equals',
    ],
    2,
  );
  await fails(['models', 'register', '--name', 'm', '--format', 'onnx'], 2);
  await fails(['models', 'show'], 2);
  await fails(['models', 'show', 'churn:x'], 2);
});

void test('unreadable local files exit 1', async () => {
  assert.match(
    await fails(
      ['models', 'register', join(home, 'missing.onnx'), '--name', 'm', '--format', 'onnx'],
      1,
    ),
    /no such file or directory/,
  );
  assert.match(
    await fails(
      [
        'models',
        'register',
        join(fixtures, 'mlp.onnx'),
        '--name',
        'm',
        '--format',
        'onnx',
        '--sign-key',
        join(fixtures, 'mlp.onnx'),
      ],
      1,
    ),
    /not an ed25519 private key/,
  );
});

void test('an unreachable platform', async () => {
  const port = await freePort();
  const stderr = await fails(['models', 'list'], 1, { KILN_URL: `http://127.0.0.1:${port}` });
  assert.equal(
    stderr,
    `error: cannot reach Kiln at http://127.0.0.1:${port}: connection refused (KILN_UNREACHABLE)\n` +
      'hint: start it with `kiln up`, or point --url / KILN_URL at it\n',
  );
  assert.match(
    await fails(['--url', `http://127.0.0.1:${port}`, 'health'], 1),
    /cannot reach Kiln/,
  );
});

void test('keys create --trust with the platform down: the error says the keys were written and how to finish', async () => {
  const down = new Cli('http://127.0.0.1:1', home);
  const stderr = await down.fails(['keys', 'create', 'offline', '--trust'], 1);
  assert.match(stderr, /\(the key pair was written\) \(KILN_UNREACHABLE\)/);
  assert.match(
    stderr,
    /hint: the keys are in .*; trust the public key with `kiln keys trust .*offline\.pub`/,
  );
  assert.equal((await stat(join(home, 'keys', 'offline.pub'))).isFile(), true);
});
