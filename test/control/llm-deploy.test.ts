// Deploying hf-llm versions: the endpoint config's `llm` object checked field by field (a 400
// naming it), settings of the other kind of model refused both ways, the KV budget checked
// against the model's own config.json, and what the worker is launched with (spec.llm with
// the defaults filled in; a change of it is a rollout).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  checkFieldsForFormat,
  checkLlmServingConfig,
  maxLlmThreads,
} from '../../src/control/llm-deploy-check.ts';
import {
  llmReplicaBound,
  workerRevision,
  workerServingSettings,
} from '../../src/control/serving-defaults.ts';
import {
  llmServingDefaults,
  resolveLlmServingConfig,
} from '../../src/llm/serving/llm-serving-config.ts';
import type { WorkerSpec } from '../../src/worker/worker-spec.ts';
import {
  call,
  errorCode,
  readArtifact,
  register,
  registryFixtures,
  sha256,
  testPlatform,
  type JsonResponse,
} from '../helpers/platform.ts';
import { until } from '../helpers/until.ts';

const tinyLlama = new URL('../../fixtures/llm/tiny-llama/', import.meta.url).pathname;

/** One KV block of tiny-llama at block size 16: 2 × 4 layers × 2 KV heads × 16 dims × 4 B × 16. */
const tinyLlamaBlockBytes = 2 * 4 * 2 * 16 * 4 * 16;

void test('each llm field out of range is named; good settings pass', () => {
  assert.equal(checkLlmServingConfig({}), null);
  assert.equal(checkLlmServingConfig({ ...llmServingDefaults, threads: 1 }), null);
  assert.equal(checkLlmServingConfig({ blockSize: 256, maxPausedBlocks: 0 }), null);
  const bad: [Record<string, number>, string][] = [
    [{ kvCacheBytes: 0 }, 'kvCacheBytes'],
    [{ kvCacheBytes: 5 * 2 ** 30 }, 'kvCacheBytes'],
    [{ blockSize: 0 }, 'blockSize'],
    [{ blockSize: 24 }, 'blockSize'],
    [{ blockSize: 512 }, 'blockSize'],
    [{ maxNumSeqs: 0 }, 'maxNumSeqs'],
    [{ maxNumBatchedTokens: 0 }, 'maxNumBatchedTokens'],
    [{ maxWaiting: 0 }, 'maxWaiting'],
    [{ threads: 0 }, 'threads'],
    [{ threads: 5 }, 'threads'], // 2 cores: at most 4
    [{ maxN: 0 }, 'maxN'],
    [{ maxN: 1000 }, 'maxN'],
    [{ streamBufferBytes: 0 }, 'streamBufferBytes'],
    [{ slowReaderTimeoutMs: 0 }, 'slowReaderTimeoutMs'],
    [{ maxPausedBlocks: -1 }, 'maxPausedBlocks'],
    [{ maxNumSeqs: 1.5 }, 'maxNumSeqs'],
    // A step's budget must hold one token per running sequence (the default 512 < 1024).
    [{ maxNumSeqs: 1024 }, 'maxNumBatchedTokens'],
    [{ maxNumSeqs: 16, maxNumBatchedTokens: 8 }, 'maxNumBatchedTokens'],
  ];
  for (const [llm, field] of bad) {
    const problem = checkLlmServingConfig(llm, 2);
    assert.equal(problem?.field, `config.llm.${field}`, JSON.stringify(llm));
  }
  assert.match(checkLlmServingConfig({ blockSize: 24 })?.reason ?? '', /power of two/);
  assert.match(
    checkLlmServingConfig({ maxNumSeqs: 1024 })?.reason ?? '',
    /\(512 \(the default\)\) must be at least maxNumSeqs \(1024\)/,
  );
  assert.equal(maxLlmThreads(2), 4);
  assert.equal(maxLlmThreads(1000), 256);
});

void test('settings of the other kind of model are refused, by name', () => {
  const what = 'm v1';
  assert.equal(checkFieldsForFormat('onnx', { llm: { maxNumSeqs: 4 } }, what)?.field, 'config.llm');
  assert.equal(checkFieldsForFormat('xgboost', { llm: {} }, what)?.field, 'config.llm');
  assert.equal(checkFieldsForFormat('onnx', { batching: { maxBatchSize: 8 } }, what), null);
  const llm = (config: Parameters<typeof checkFieldsForFormat>[1]) =>
    checkFieldsForFormat('hf-llm', config, what)?.field;
  assert.equal(llm({ batching: { maxBatchSize: 8 } }), 'config.batching');
  assert.equal(llm({ intraOpThreads: 2 }), 'config.intraOpThreads');
  assert.equal(llm({ interOpThreads: 2 }), 'config.interOpThreads');
  assert.equal(llm({ graphOptimizationLevel: 'all' }), 'config.graphOptimizationLevel');
  // Off is what an LLM endpoint does anyway; the gateway's and deadline fields apply.
  assert.equal(llm({ batching: null, maxConcurrency: 8, timeoutMs: 100, llm: {} }), undefined);
});

void test('the worker gets llm resolved and no batching; a change of llm is a rollout', () => {
  const settings = workerServingSettings('hf-llm', {
    llm: { maxNumSeqs: 8 },
    maxConcurrency: 10,
    maxBodyBytes: 4096,
  });
  assert.deepEqual(settings, {
    config: {},
    maxBodyBytes: 4096,
    batching: null,
    defaultTimeoutMs: null,
    llm: { ...llmServingDefaults, maxNumSeqs: 8 },
  });
  assert.deepEqual(workerServingSettings('hf-llm', {}).llm, llmServingDefaults);
  assert.equal(workerServingSettings('onnx', {}).llm, null);
  const endpoint = { model: 'm', version: 1, config: { llm: { maxNumSeqs: 8 } } };
  assert.notEqual(
    workerRevision(endpoint),
    workerRevision({ ...endpoint, config: { llm: { maxNumSeqs: 16 } } }),
  );
  // One replica holds what its engine runs plus what waits (the gateway's derived bound).
  assert.equal(llmReplicaBound(resolveLlmServingConfig({})), 64 + 256);
  assert.equal(
    llmReplicaBound(resolveLlmServingConfig({ threads: 2, maxNumSeqs: 4, maxWaiting: 10 })),
    18,
  );
});

interface EndpointBody {
  readonly format: string | null;
  readonly url: string;
  readonly config: Record<string, unknown>;
}

function refusal(response: JsonResponse): {
  code: string | undefined;
  field: string | undefined;
  message: string;
} {
  const error = (response.body as { error: { code: string; message: string; details?: unknown } })
    .error;
  return {
    code: errorCode(response),
    field: (error.details as { field?: string } | undefined)?.field,
    message: error.message,
  };
}

void test('PUT /api/v1/endpoints with hf-llm: stored, checked per field, per format, per model', async () => {
  const platform = await testPlatform();
  const llm = await register(platform.url, 'tiny', 'hf-llm', await readArtifact(tinyLlama));
  assert.equal(llm.status, 201, JSON.stringify(llm.body));
  const onnx = await register(
    platform.url,
    'mlp',
    'onnx',
    await readArtifact(`${registryFixtures}mlp.onnx`),
  );
  assert.equal(onnx.status, 201, JSON.stringify(onnx.body));
  const deploy = (model: string, config: unknown) =>
    call(platform.url, 'PUT', `/api/v1/endpoints/${model}-e`, { model, replicas: 0, config });

  const stored = await deploy('tiny', {
    llm: { kvCacheBytes: 2 ** 20, maxNumSeqs: 8, prefixCaching: false },
    maxConcurrency: 16,
  });
  assert.equal(stored.status, 201, JSON.stringify(stored.body));
  const body = stored.body as EndpointBody;
  assert.deepEqual(body.config, {
    llm: { kvCacheBytes: 2 ** 20, maxNumSeqs: 8, prefixCaching: false },
    maxConcurrency: 16,
  });
  assert.equal(body.format, 'hf-llm');
  assert.match(body.url, /\/v1$/);
  const shown = await call(platform.url, 'GET', '/api/v1/endpoints/tiny-e');
  assert.equal((shown.body as EndpointBody).format, 'hf-llm');

  const refused: [string, unknown, string][] = [
    ['tiny', { llm: { blockSize: 24 } }, 'config.llm.blockSize'],
    ['tiny', { llm: { kvCacheBytes: 0 } }, 'config.llm.kvCacheBytes'],
    ['tiny', { llm: { maxNumSeqs: 0 } }, 'config.llm.maxNumSeqs'],
    ['tiny', { llm: { maxNumBatchedTokens: 0 } }, 'config.llm.maxNumBatchedTokens'],
    ['tiny', { llm: { maxWaiting: 0 } }, 'config.llm.maxWaiting'],
    ['tiny', { llm: { threads: 100_000 } }, 'config.llm.threads'],
    ['tiny', { llm: { maxN: 0 } }, 'config.llm.maxN'],
    ['tiny', { llm: { streamBufferBytes: 0 } }, 'config.llm.streamBufferBytes'],
    ['tiny', { llm: { slowReaderTimeoutMs: 0 } }, 'config.llm.slowReaderTimeoutMs'],
    ['tiny', { llm: { maxPausedBlocks: -1 } }, 'config.llm.maxPausedBlocks'],
    [
      'tiny',
      { llm: { maxNumSeqs: 64, maxNumBatchedTokens: 32 } },
      'config.llm.maxNumBatchedTokens',
    ],
    // The schema's part: types and unknown fields, named the same way.
    ['tiny', { llm: { prefixCaching: 'sometimes' } }, 'config.llm.prefixCaching'],
    ['tiny', { llm: { maxSeqs: 8 } }, 'config.llm.maxSeqs'],
    // Against the model: one block of tiny-llama takes 16 KiB.
    ['tiny', { llm: { kvCacheBytes: tinyLlamaBlockBytes - 1 } }, 'config.llm.kvCacheBytes'],
    ['tiny', { llm: { kvCacheBytes: 4 * 2 ** 30 } }, 'config.llm.kvCacheBytes'],
    // The other kind of model's settings.
    ['tiny', { batching: { maxBatchSize: 8 } }, 'config.batching'],
    ['tiny', { intraOpThreads: 2 }, 'config.intraOpThreads'],
    ['mlp', { llm: { maxNumSeqs: 8 } }, 'config.llm'],
  ];
  for (const [model, config, field] of refused) {
    const response = await deploy(model, config);
    const what = JSON.stringify(config);
    assert.equal(response.status, 400, what);
    const { code, field: named, message } = refusal(response);
    assert.equal(code, 'KILN_VALIDATION_FAILED', what);
    assert.equal(named, field, `${what}: ${message}`);
  }
  const small = refusal(await deploy('tiny', { llm: { kvCacheBytes: 1000 } }));
  assert.match(
    small.message,
    /holds no KV block of tiny v1: one block of 16 positions takes 16384 bytes/,
  );
  const wrongKind = refusal(await deploy('mlp', { llm: {} }));
  assert.match(wrongKind.message, /config\.llm applies only to hf-llm versions; mlp v1 is onnx/);
  // A block of 1 position takes a sixteenth: the budget is checked at the block size asked.
  const tiny = await deploy('tiny', {
    llm: { kvCacheBytes: tinyLlamaBlockBytes / 16, blockSize: 1 },
  });
  assert.equal(tiny.status, 200, JSON.stringify(tiny.body));
  // Nothing refused was stored.
  assert.deepEqual(
    ((await call(platform.url, 'GET', '/api/v1/endpoints/tiny-e')).body as EndpointBody).config,
    { llm: { kvCacheBytes: tinyLlamaBlockBytes / 16, blockSize: 1 } },
  );
});

void test('an hf-llm config.json the engine cannot run is refused at deploy (422)', async () => {
  const platform = await testPlatform();
  const files = await readArtifact(tinyLlama);
  const config = JSON.parse(
    files.find((f) => f.path === 'config.json')!.data.toString('utf8'),
  ) as Record<string, unknown>;
  const gelu = Buffer.from(JSON.stringify({ ...config, hidden_act: 'gelu' }));
  const changed = files.map((f) =>
    f.path === 'config.json' ? { ...f, data: gelu, size: gelu.length, sha256: sha256(gelu) } : f,
  );
  assert.equal((await register(platform.url, 'gelu', 'hf-llm', changed)).status, 201);
  const response = await call(platform.url, 'PUT', '/api/v1/endpoints/gelu', {
    model: 'gelu',
    replicas: 0,
  });
  assert.equal(response.status, 422, JSON.stringify(response.body));
  assert.equal(errorCode(response), 'KILN_MODEL_NOT_SERVABLE');
  assert.match(refusal(response).message, /gelu v1 cannot be served: config\.json: .*hidden_act/);
});

void test("the worker's spec carries the endpoint's llm settings, defaults filled", async () => {
  const platform = await testPlatform();
  assert.equal(
    (await register(platform.url, 'tiny', 'hf-llm', await readArtifact(tinyLlama))).status,
    201,
  );
  const deployed = await call(platform.url, 'PUT', '/api/v1/endpoints/chat', {
    model: 'tiny',
    replicas: 1,
    config: { llm: { kvCacheBytes: 2 ** 20, maxNumSeqs: 4 } },
  });
  assert.equal(deployed.status, 201, JSON.stringify(deployed.body));
  // The local backend writes the spec before it spawns the worker (which may or may not load
  // the model: that is the worker's part).
  const replicas = join(platform.home, 'run', 'replicas');
  let spec: WorkerSpec | null = null;
  await until(
    async () => {
      const folders = await readdir(replicas).catch(() => []);
      for (const folder of folders) {
        const text = await readFile(join(replicas, folder, 'spec.json'), 'utf8').catch(() => null);
        if (text !== null) spec = JSON.parse(text) as WorkerSpec;
      }
      return spec !== null;
    },
    'a worker spec',
    50,
  );
  const written = spec as unknown as WorkerSpec;
  assert.equal(written.format, 'hf-llm');
  assert.deepEqual(written.llm, { ...llmServingDefaults, kvCacheBytes: 2 ** 20, maxNumSeqs: 4 });
  assert.equal(written.batching, null);
  assert.deepEqual(written.config, {});
});
