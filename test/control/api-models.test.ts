// The control-plane API over real HTTP: models, versions of every format, aliases, lineage.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { call, errorCode, readArtifact, register, testPlatform } from '../helpers/platform.ts';
import {
  haveLightgbmFixtures,
  lightgbmFixtures,
  noLightgbmFixtures,
} from '../helpers/shared-fixtures.ts';

const fixtures = new URL('../../fixtures/registry/', import.meta.url).pathname;

interface Version {
  version: number;
  format: string;
  sizeBytes: number;
  formatInfo: Record<string, unknown>;
  aliases: string[];
  files: { path: string }[];
}
interface ModelBody {
  name: string;
  latestVersion: number | null;
  versionCount: number;
  aliases: Record<string, number>;
}

test('health', async () => {
  const { url } = await testPlatform();
  const health = await call(url, 'GET', '/api/v1/health');
  assert.equal(health.status, 200);
  assert.deepEqual(
    { ...(health.body as object), home: undefined },
    // started without a gateway: no data-plane URL to report
    { status: 'ok', version: '0.1.0', store: 'sqlite', home: undefined, gatewayUrl: '' },
  );
});

test('models: create, duplicate, invalid name, get, paged list', async () => {
  const { url } = await testPlatform();
  for (const name of ['zeta', 'alpha', 'mid']) {
    assert.equal(
      (await call(url, 'POST', '/api/v1/models', { name, team: 'risk', description: 'd' })).status,
      201,
    );
  }
  const dup = await call(url, 'POST', '/api/v1/models', { name: 'alpha' });
  assert.equal(dup.status, 409);
  assert.equal(errorCode(dup), 'KILN_MODEL_EXISTS');
  const bad = await call(url, 'POST', '/api/v1/models', { name: 'Bad Name!' });
  assert.equal(bad.status, 400);
  assert.equal(errorCode(bad), 'KILN_INVALID_NAME');
  const got = await call(url, 'GET', '/api/v1/models/alpha');
  assert.equal((got.body as ModelBody).latestVersion, null);
  const missing = await call(url, 'GET', '/api/v1/models/nope');
  assert.equal(missing.status, 404);
  assert.equal(errorCode(missing), 'KILN_MODEL_NOT_FOUND');

  const page1 = (await call(url, 'GET', '/api/v1/models?limit=2')).body as {
    items: ModelBody[];
    nextPageToken: string;
  };
  assert.deepEqual(
    page1.items.map((m) => m.name),
    ['alpha', 'mid'],
  );
  const page2 = (await call(url, 'GET', `/api/v1/models?limit=2&pageToken=${page1.nextPageToken}`))
    .body as {
    items: ModelBody[];
    nextPageToken: string | null;
  };
  assert.deepEqual(
    page2.items.map((m) => m.name),
    ['zeta'],
  );
  assert.equal(page2.nextPageToken, null);
  const badLimit = await call(url, 'GET', '/api/v1/models?limit=0');
  assert.equal(errorCode(badLimit), 'KILN_VALIDATION_FAILED');
});

test('registers every format from real files, with computed size and what the format check learned', async () => {
  const { url } = await testPlatform();
  const cases: [string, string, string][] = [
    ['xgb-json', 'xgboost', `${fixtures}xgb-binary.json`],
    ['xgb-ubj', 'xgboost', `${fixtures}xgb-binary.ubj`],
    ['mlp', 'onnx', `${fixtures}mlp.onnx`],
    ['tiny-llm', 'hf-llm', `${fixtures}tiny-llm`],
  ];
  for (const [name, format, path] of cases) {
    const files = await readArtifact(path);
    const response = await register(url, name, format, files);
    assert.equal(response.status, 201, `${name}: ${JSON.stringify(response.body)}`);
    const version = response.body as Version;
    assert.equal(version.version, 1);
    assert.equal(version.format, format);
    assert.equal(
      version.sizeBytes,
      files.reduce((s, f) => s + f.size, 0),
    );
    assert.ok(Object.keys(version.formatInfo).length > 0, `${name} has format info`);
  }
  const onnx = (await call(url, 'GET', '/api/v1/models/mlp/versions/1')).body as Version;
  assert.ok(Array.isArray(onnx.formatInfo.inputs));
  const external = await register(url, 'ext', 'external', [], {
    external: { url: 'http://127.0.0.1:9000', protocol: 'v2' },
  });
  assert.equal(external.status, 201, JSON.stringify(external.body));
});

test('registers the real LightGBM models', async (t) => {
  if (!haveLightgbmFixtures) {
    t.skip(noLightgbmFixtures);
    return;
  }
  const { url } = await testPlatform();
  for (const file of [
    'lgmulticlass.model',
    'lg_kddcup99.model',
    'lg_rf_iris.model',
    'model_simple.txt',
  ]) {
    const response = await register(
      url,
      'lgb',
      'lightgbm',
      await readArtifact(lightgbmFixtures + file),
    );
    assert.equal(response.status, 201, `${file}: ${JSON.stringify(response.body)}`);
  }
});

test('an artifact that does not parse as its declared format is refused and nothing is registered', async () => {
  const { url } = await testPlatform();
  const xgb = await readArtifact(`${fixtures}xgb-binary.json`);
  for (const format of ['onnx', 'lightgbm', 'hf-llm']) {
    const response = await register(url, 'wrong', format, xgb);
    assert.equal(response.status, 422, format);
    assert.equal(errorCode(response), 'KILN_INVALID_ARTIFACT');
    assert.match(
      (response.body as { error: { message: string } }).error.message,
      new RegExp(`not a valid ${format} model`),
    );
  }
  const onnx = await readArtifact(`${fixtures}mlp.onnx`);
  const truncated = [{ ...onnx[0]!, data: onnx[0]!.data.subarray(0, 100) }].map((f) => ({
    ...f,
    size: f.data.length,
    sha256: require256(f.data),
  }));
  assert.equal(errorCode(await register(url, 'wrong', 'onnx', truncated)), 'KILN_INVALID_ARTIFACT');
  const model = (await call(url, 'GET', '/api/v1/models/wrong')).body as ModelBody;
  assert.equal(model.versionCount, 0);
  assert.equal(model.latestVersion, null);
});

function require256(data: Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

test('pickle files are refused by content, even renamed, with a message that says why', async () => {
  const { url } = await testPlatform();
  for (const file of [
    'model.pkl',
    'weights.pt',
    'pytorch_model.bin',
    'model.joblib',
    'legacy.bin',
  ]) {
    const response = await register(url, 'pickled', 'onnx', await readArtifact(fixtures + file));
    assert.equal(response.status, 422, file);
    assert.equal(errorCode(response), 'KILN_UNSAFE_ARTIFACT', file);
    const message = (response.body as { error: { message: string; hint: string } }).error;
    assert.match(message.message, /executes arbitrary code/);
    assert.match(message.hint, /ONNX|safetensors/);
  }
  // the same bytes under innocent names
  const renamed = await readArtifact(`${fixtures}weights.pt`, 'model.onnx');
  assert.equal(errorCode(await register(url, 'pickled', 'onnx', renamed)), 'KILN_UNSAFE_ARTIFACT');
  const hf = await readArtifact(`${fixtures}tiny-llm`);
  const sneaky = [
    ...hf,
    ...(await readArtifact(`${fixtures}pytorch_model.bin`, 'extra/weights.dat')),
  ];
  assert.equal(errorCode(await register(url, 'pickled', 'hf-llm', sneaky)), 'KILN_UNSAFE_ARTIFACT');
});

test('versions: list, get by number and alias, aliases move atomically, soft delete only when unused', async () => {
  const { url } = await testPlatform();
  const files = await readArtifact(`${fixtures}xgb-binary.json`);
  for (let i = 0; i < 3; i++)
    assert.equal((await register(url, 'fraud', 'xgboost', files)).status, 201);

  assert.deepEqual(
    (await call(url, 'PUT', '/api/v1/models/fraud/aliases/champion', { version: 1 })).body,
    {
      alias: 'champion',
      version: 1,
      previousVersion: null,
    },
  );
  assert.deepEqual(
    (await call(url, 'PUT', '/api/v1/models/fraud/aliases/champion', { version: 2 })).body,
    {
      alias: 'champion',
      version: 2,
      previousVersion: 1,
    },
  );
  assert.equal(
    ((await call(url, 'GET', '/api/v1/models/fraud/versions/champion')).body as Version).version,
    2,
  );
  assert.equal(
    errorCode(await call(url, 'PUT', '/api/v1/models/fraud/aliases/42', { version: 1 })),
    'KILN_INVALID_NAME',
  );
  assert.equal(
    errorCode(await call(url, 'PUT', '/api/v1/models/fraud/aliases/staging', { version: 9 })),
    'KILN_VERSION_NOT_FOUND',
  );
  assert.equal(
    errorCode(await call(url, 'GET', '/api/v1/models/fraud/versions/nope')),
    'KILN_ALIAS_NOT_FOUND',
  );
  assert.equal(
    errorCode(await call(url, 'GET', '/api/v1/models/fraud/versions/7')),
    'KILN_VERSION_NOT_FOUND',
  );
  assert.equal(
    errorCode(await call(url, 'GET', '/api/v1/models/ghost/versions/1')),
    'KILN_MODEL_NOT_FOUND',
  );

  const inUse = await call(url, 'DELETE', '/api/v1/models/fraud/versions/2');
  assert.equal(inUse.status, 409);
  assert.equal(errorCode(inUse), 'KILN_VERSION_IN_USE');
  const deleted = await call(url, 'DELETE', '/api/v1/models/fraud/versions/3');
  assert.equal(deleted.status, 200);
  assert.notEqual((deleted.body as { deletedAt: string | null }).deletedAt, null);
  assert.equal(
    errorCode(await call(url, 'DELETE', '/api/v1/models/fraud/versions/3')),
    'KILN_VERSION_NOT_FOUND',
  );
  const list = (await call(url, 'GET', '/api/v1/models/fraud/versions')).body as {
    items: Version[];
  };
  assert.deepEqual(
    list.items.map((v) => v.version),
    [2, 1],
  );
  const all = (await call(url, 'GET', '/api/v1/models/fraud/versions?includeDeleted=true'))
    .body as { items: Version[] };
  assert.deepEqual(
    all.items.map((v) => v.version),
    [3, 2, 1],
  );
  assert.equal(
    ((await call(url, 'GET', '/api/v1/models/fraud/aliases')).body as { items: unknown[] }).items
      .length,
    1,
  );
  assert.deepEqual((await call(url, 'DELETE', '/api/v1/models/fraud/aliases/champion')).body, {
    alias: 'champion',
    version: 2,
  });
  assert.equal((await call(url, 'DELETE', '/api/v1/models/fraud/versions/2')).status, 200);
  // the next version number is never reused
  assert.equal(((await register(url, 'fraud', 'xgboost', files)).body as Version).version, 4);
});

test('metadata, lineage and tags are stored, and lineage queries find versions across models', async () => {
  const { url } = await testPlatform();
  const files = await readArtifact(`${fixtures}xgb-binary.json`);
  const meta = {
    metadata: {
      trainingJobId: 'job-7',
      datasetVersion: '2026-11',
      metrics: { auc: 0.93, logloss: 0.21 },
      hardware: { cpus: 1, memoryBytes: 268435456 },
      dependencies: { xgboost: '1.7.4' },
    },
    lineage: {
      run: 'run-42',
      datasetUri: 's3://lake/fraud',
      datasetVersion: '2026-11',
      experiment: 'fraud-q4',
    },
    tags: { owner: 'risk' },
    schema: {
      inputs: [{ name: 'features', datatype: 'FP32', shape: [-1, 4] }],
      outputs: [{ name: 'p', datatype: 'FP32', shape: [-1] }],
    },
  };
  const created = (await register(url, 'fraud', 'xgboost', files, meta)).body as Record<
    string,
    unknown
  >;
  for (const key of ['metadata', 'lineage', 'tags', 'schema'] as const)
    assert.deepEqual(created[key], meta[key]);
  await register(url, 'other', 'xgboost', files, {
    lineage: { run: 'run-43', datasetUri: 's3://lake/fraud', datasetVersion: '2026-10' },
  });

  const byDataset = (await call(url, 'GET', '/api/v1/lineage?dataset=s3://lake/fraud')).body as {
    items: { model: string }[];
  };
  assert.deepEqual(
    byDataset.items.map((v) => v.model),
    ['fraud', 'other'],
  );
  const byVersion = (
    await call(url, 'GET', '/api/v1/lineage?dataset=s3://lake/fraud&datasetVersion=2026-10')
  ).body as {
    items: { model: string }[];
  };
  assert.deepEqual(
    byVersion.items.map((v) => v.model),
    ['other'],
  );
  const byRun = (await call(url, 'GET', '/api/v1/lineage?run=run-42')).body as {
    items: { model: string }[];
  };
  assert.deepEqual(
    byRun.items.map((v) => v.model),
    ['fraud'],
  );
  assert.equal(errorCode(await call(url, 'GET', '/api/v1/lineage')), 'KILN_VALIDATION_FAILED');

  const dupTensor = {
    schema: {
      inputs: [
        { name: 'a', datatype: 'FP32', shape: [1] },
        { name: 'a', datatype: 'FP32', shape: [1] },
      ],
      outputs: [],
    },
  };
  assert.equal(
    errorCode(await register(url, 'fraud', 'xgboost', files, dupTensor)),
    'KILN_VALIDATION_FAILED',
  );
  const badType = {
    schema: { inputs: [{ name: 'a', datatype: 'FLOAT', shape: [1] }], outputs: [] },
  };
  assert.equal(
    errorCode(await register(url, 'fraud', 'xgboost', files, badType)),
    'KILN_VALIDATION_FAILED',
  );
});

test('createModel makes the model together with its first version, and a refused registration leaves no model', async () => {
  const { url } = await testPlatform();
  const files = await readArtifact(`${fixtures}xgb-binary.json`);
  for (const f of files) {
    await call(url, 'PUT', `/api/v1/blobs/${f.sha256}`, f.data, {
      'content-type': 'application/octet-stream',
    });
  }
  const manifest = files.map(({ path, size, sha256 }) => ({ path, size, sha256 }));
  const absent = await call(url, 'POST', '/api/v1/models/new-model/versions', {
    format: 'xgboost',
    files: manifest,
  });
  assert.equal(errorCode(absent), 'KILN_MODEL_NOT_FOUND');

  const refused = await call(url, 'POST', '/api/v1/models/new-model/versions', {
    format: 'onnx',
    files: manifest,
    createModel: { team: 'risk' },
  });
  assert.equal(errorCode(refused), 'KILN_INVALID_ARTIFACT');
  assert.equal(
    errorCode(await call(url, 'GET', '/api/v1/models/new-model')),
    'KILN_MODEL_NOT_FOUND',
  );

  const created = await call(url, 'POST', '/api/v1/models/new-model/versions', {
    format: 'xgboost',
    files: manifest,
    createModel: { team: 'risk', description: 'made with its first version' },
  });
  assert.equal(created.status, 201);
  const model = (await call(url, 'GET', '/api/v1/models/new-model')).body as ModelBody & {
    team: string;
  };
  assert.deepEqual([model.team, model.latestVersion], ['risk', 1]);
  // createModel is ignored once the model exists
  const again = await call(url, 'POST', '/api/v1/models/new-model/versions', {
    format: 'xgboost',
    files: manifest,
    createModel: { team: 'other' },
  });
  assert.equal((again.body as Version).version, 2);
  assert.equal(
    ((await call(url, 'GET', '/api/v1/models/new-model')).body as { team: string }).team,
    'risk',
  );
});

test('a URL that cannot be decoded gets the registry error shape, not the framework one', async () => {
  const { url } = await testPlatform();
  const response = await call(url, 'GET', '/api/v1/models/%');
  assert.equal(response.status, 400, JSON.stringify(response.body));
  assert.equal(errorCode(response), 'KILN_VALIDATION_FAILED');
  assert.match(JSON.stringify(response.body), /not a valid url/i);
});
