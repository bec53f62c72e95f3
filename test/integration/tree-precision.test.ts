// Tree models answer in their library's precision on every way a request reaches them, for
// every datatype a client may send. Real workers (in this process) serve real models; two
// real gateways route to them:
//
//   gateway (channels) ─┬─ endpoint M       schema known: decoded there, sent as tensor frames
//                       └─ endpoint M-json  no schema at the gateway: the JSON body on the channel
//   gateway (no channels)   endpoint M      checked there, forwarded as v2 HTTP
//   the worker itself       endpoint M      direct v2 HTTP
//
// Each endpoint has its default schema (what the worker reports), so clients send what its
// metadata says. References: LightGBM's own predictions (../shared/fixtures/lightgbm, within
// 1e-9) and XGBoost's (fixtures/trees/xgb-datatypes.*, made by make_xgboost_datatype_fixtures.py
// from arrays of each numpy dtype, within float32's precision).

import assert from 'node:assert/strict';
import { createReadStream, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test, type TestContext } from 'node:test';
import type { ModelSchema, TensorDatatype } from '../../src/core/tensor.ts';
import type { ModelFormat } from '../../src/registry/formats/artifact-file.ts';
import { ArtifactStore } from '../../src/registry/artifact-store.ts';
import { loadLightgbmModel } from '../../src/runtimes/trees/load-lightgbm-model.ts';
import type { TreePredictor } from '../../src/runtimes/trees/tree-predictor.ts';
import { startWorker, type RunningWorker } from '../../src/worker/start-worker.ts';
import type { WorkerEvent } from '../../src/worker/worker-spec.ts';
import {
  call,
  endpointRoute,
  replicaRoute,
  snapshot,
  testGateway,
} from '../gateway/gateway-harness.ts';
import {
  haveLightgbmFixtures,
  lightgbmFixtures,
  noLightgbmFixtures,
  readJson,
  readTable,
  treeFixtures,
} from '../runtimes/trees/tree-test-helpers.ts';

const maxBodyBytes = 8 << 20;

interface Served {
  readonly name: string;
  readonly format: ModelFormat;
  readonly worker: RunningWorker;
  readonly schema: ModelSchema;
}

const home = await mkdtemp(join(tmpdir(), 'kiln-precision-'));
const store = new ArtifactStore(join(home, 'artifacts'));
await store.init();

/** A worker serving `file` with its default schema (none declared), ready. */
async function serve(name: string, format: ModelFormat, file: string): Promise<Served> {
  const blob = await store.ingest(createReadStream(file), null, { maxBytes: 1 << 30 });
  let reported: ModelSchema | null = null;
  const emit = (event: WorkerEvent): void => {
    if (event.event === 'ready') reported = { inputs: event.inputs, outputs: event.outputs };
  };
  const worker = await startWorker(
    {
      replicaId: `${name}-1`,
      endpoint: name,
      model: name,
      version: 1,
      format,
      files: [{ path: file.split('/').at(-1) ?? 'model', size: blob.size, sha256: blob.sha256 }],
      schema: null,
      artifacts: store.locator,
      workDir: join(home, name),
      host: '127.0.0.1',
      port: 0,
      maxBodyBytes,
      config: {},
      batching: null,
      defaultTimeoutMs: null,
    },
    emit,
  );
  await worker.loaded;
  assert.equal(worker.state.phase, 'ready', worker.state.reason ?? '');
  assert.ok(reported !== null);
  return { name, format, worker, schema: reported };
}

const served: Served[] = [await serve('xgb-gamma', 'xgboost', `${treeFixtures}xgb-datatypes.json`)];
if (haveLightgbmFixtures) {
  served.push(
    await serve('poisson', 'lightgbm', `${lightgbmFixtures}genlin_fmtp_poisson_Frequency.model`),
    await serve('multiclass', 'lightgbm', `${lightgbmFixtures}lgmulticlass.model`),
    await serve('kddcup', 'lightgbm', `${lightgbmFixtures}lg_kddcup99.model`),
  );
}
// One hook: the workers have stopped (and removed their folders) before the home goes.
after(async () => {
  await Promise.all(served.map((s) => s.worker.close(1_000)));
  await rm(home, { recursive: true, force: true });
});

function routes(withJsonTwin: boolean) {
  return served.flatMap((s) => {
    const replica = replicaRoute({ url: s.worker.url, channel: true }, `${s.name}-r1`, 1);
    const common = { model: s.name, version: 1, format: s.format, maxBodyBytes };
    const own = endpointRoute({ ...common, name: s.name, schema: s.schema, replicas: [replica] });
    if (!withJsonTwin) return [own];
    const twin = endpointRoute({
      ...common,
      name: `${s.name}-json`,
      schema: null,
      replicas: [replica],
    });
    return [own, twin];
  });
}

const channelGateway = await testGateway(snapshot(1, routes(true)));
const httpGateway = await testGateway(snapshot(1, routes(false)), { workerChannels: false });

interface Path {
  readonly name: string;
  url(model: string): string;
}

const paths: readonly Path[] = [
  {
    name: 'gateway → tensor frames',
    url: (m) => `${channelGateway.url}/v2/models/${m}/infer`,
  },
  {
    name: 'gateway → JSON on the channel',
    url: (m) => `${channelGateway.url}/v2/models/${m}-json/infer`,
  },
  { name: 'gateway → v2 HTTP', url: (m) => `${httpGateway.url}/v2/models/${m}/infer` },
  {
    name: 'worker, direct v2 HTTP',
    url: (m) => `${served.find((s) => s.name === m)?.worker.url ?? ''}/v2/models/${m}/infer`,
  },
];

interface Answer {
  readonly status: number;
  readonly body: {
    outputs?: { name: string; datatype: string; shape: number[]; data: (number | null)[] }[];
    error?: string;
    code?: string;
  };
}

async function post(url: string, body: string): Promise<Answer> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
  });
  return { status: response.status, body: (await response.json()) as Answer['body'] };
}

/** The one output of a 200 answer, checked for its datatype. */
function output(answer: Answer, datatype: string, where: string): number[] {
  assert.equal(answer.status, 200, `${where}: ${JSON.stringify(answer.body).slice(0, 300)}`);
  const tensor = answer.body.outputs?.[0];
  assert.ok(tensor !== undefined, `${where}: no output`);
  assert.equal(tensor.datatype, datatype, `${where}: answer datatype`);
  return tensor.data.map((v) => v ?? Number.NaN);
}

/** Largest |got - want| / scale(want); fails naming the row when over `tolerance`. */
function assertClose(
  got: readonly number[],
  want: readonly number[],
  tolerance: number,
  where: string,
  scale: (want: number) => number = () => 1,
): number {
  assert.equal(got.length, want.length, `${where}: ${got.length} values, expected ${want.length}`);
  let worst = 0;
  for (let i = 0; i < want.length; i += 1) {
    const g = got[i] ?? Number.NaN;
    const w = want[i] ?? Number.NaN;
    const error = Math.abs(g - w) / scale(w);
    assert.ok(error <= tolerance, `${where}: value ${i} is ${g}, expected ${w}`);
    worst = Math.max(worst, error);
  }
  return worst;
}

/** A v2 request the way clients write it: tritonclient flat, others rows nested (strings: bad ones). */
function body(
  rows: readonly (readonly (number | boolean | string | null)[])[],
  datatype: TensorDatatype,
  options: { nested?: boolean; parameters?: Record<string, unknown> } = {},
): string {
  const width = rows[0]?.length ?? 0;
  const input = {
    name: 'input',
    shape: [rows.length, width],
    datatype,
    data: options.nested === true ? rows : rows.flat(),
  };
  const request: Record<string, unknown> = { inputs: [input] };
  if (options.parameters !== undefined) request.parameters = options.parameters;
  return JSON.stringify(request);
}

function lightgbmPredictor(file: string): TreePredictor {
  const loaded = loadLightgbmModel(readFileSync(`${lightgbmFixtures}${file}`, 'utf8'));
  assert.ok(loaded.ok, loaded.ok ? '' : loaded.reason);
  return loaded.predictor;
}

function skipWithoutLightgbm(t: TestContext): boolean {
  if (haveLightgbmFixtures) return false;
  t.skip(noLightgbmFixtures);
  return true;
}

void test('default schemas: LightGBM FP64 in and out, XGBoost FP32, in the metadata of each path', async (t) => {
  const xgb = await call(channelGateway.url, 'GET', '/v2/models/xgb-gamma');
  assert.equal(xgb.status, 200);
  assert.deepEqual(xgb.json, {
    name: 'xgb-gamma',
    versions: ['1'],
    platform: 'xgboost',
    inputs: [{ name: 'input', datatype: 'FP32', shape: [-1, 6] }],
    outputs: [{ name: 'output', datatype: 'FP32', shape: [-1] }],
  });
  if (skipWithoutLightgbm(t)) return;
  const poisson = served.find((s) => s.name === 'poisson')?.worker.url ?? '';
  for (const [base, path] of [
    [channelGateway.url, '/v2/models/poisson'],
    [poisson, '/v2/models/poisson'],
  ] as const) {
    const metadata = await call(base, 'GET', path);
    assert.equal(metadata.status, 200, path);
    const { inputs, outputs } = metadata.json as ModelSchema;
    assert.deepEqual(inputs, [{ name: 'input', datatype: 'FP64', shape: [-1, 9] }], path);
    assert.deepEqual(outputs, [{ name: 'output', datatype: 'FP64', shape: [-1] }], path);
  }
});

void test("LightGBM, FP64 as the metadata says: LightGBM's own predictions within 1e-9 on every path", async (t) => {
  if (skipWithoutLightgbm(t)) return;
  const poissonRows = readTable(`${lightgbmFixtures}genlin_fmtp_poisson_Frequency_features.tsv`);
  const poissonWant = readTable(
    `${lightgbmFixtures}genlin_fmtp_poisson_Frequency_true_predictions.txt`,
  ).flat();
  const multiRows = readTable(`${lightgbmFixtures}multiclass_test.tsv`, 1);
  const multiWant = readTable(`${lightgbmFixtures}lgmulticlass_true_predictions.txt`).flat();
  const multiRaw = readTable(`${lightgbmFixtures}lgmulticlass_true_raw_predictions.txt`).flat();
  const kddRows = readTable(`${lightgbmFixtures}kddcup99_test.tsv`);
  const kddRaw = readTable(`${lightgbmFixtures}lg_kddcup99_true_predictions.txt`).flat();
  const raw = { parameters: { output_margin: true } };
  const cases = [
    ['poisson', body(poissonRows, 'FP64'), poissonWant],
    ['multiclass', body(multiRows, 'FP64', { nested: true }), multiWant],
    ['multiclass', body(multiRows, 'FP64', raw), multiRaw],
    ['kddcup', body(kddRows, 'FP64', { nested: true, ...raw }), kddRaw],
  ] as const;
  for (const path of paths) {
    for (const [model, request, want] of cases) {
      const where = `${model} via ${path.name}`;
      const got = output(await post(path.url(model), request), 'FP64', where);
      assertClose(got, want, 1e-9, where);
    }
  }
});

void test('LightGBM, every other numeric datatype: converted to double as LightGBM reads it', async (t) => {
  if (skipWithoutLightgbm(t)) return;
  // The poisson model's features are counts (0 … 27,000): exact in every type they fit, so
  // LightGBM's own predictions are the reference for each.
  const rows = readTable(`${lightgbmFixtures}genlin_fmtp_poisson_Frequency_features.tsv`);
  const want = readTable(
    `${lightgbmFixtures}genlin_fmtp_poisson_Frequency_true_predictions.txt`,
  ).flat();
  const fits = (limit: number) => rows.flatMap((r, i) => (Math.max(...r) <= limit ? [i] : []));
  const all = rows.map((_, i) => i);
  const cases: [TensorDatatype, number[]][] = [
    ['FP32', all],
    ['FP16', fits(2048)],
    ['INT8', fits(127)],
    ['UINT8', fits(255)],
    ['INT16', all],
    ['UINT16', all],
    ['INT32', all],
    ['UINT32', all],
    ['INT64', all],
    ['UINT64', all],
  ];
  // BOOL has no LightGBM reference file: the same model in process, on the doubles 0 and 1
  // (that predictor matches LightGBM within 1e-16 on these models, lightgbm-reference.test).
  const bools = rows.slice(0, 64).map((r) => r.map((v) => v > 40));
  const boolWant = lightgbmPredictor('genlin_fmtp_poisson_Frequency.model').predict64(
    Float64Array.from(bools.flat(), Number),
    bools.length,
  );
  // FP32 features with decimals: LightGBM reads the float32 values as doubles.
  const multiRows = readTable(`${lightgbmFixtures}multiclass_test.tsv`, 1).slice(0, 100);
  const multiWant = lightgbmPredictor('lgmulticlass.model').predict64(
    Float64Array.from(multiRows.flat(), Math.fround),
    multiRows.length,
  );
  for (const path of paths) {
    for (const [datatype, picked] of cases) {
      assert.ok(picked.length >= 100, `${datatype}: ${picked.length} rows`);
      const where = `poisson ${datatype} via ${path.name}`;
      const request = body(
        picked.map((i) => rows[i] ?? []),
        datatype,
      );
      const got = output(await post(path.url('poisson'), request), 'FP64', where);
      assertClose(
        got,
        picked.map((i) => want[i] ?? Number.NaN),
        1e-9,
        where,
      );
    }
    const boolGot = output(
      await post(path.url('poisson'), body(bools, 'BOOL', { nested: true })),
      'FP64',
      `poisson BOOL via ${path.name}`,
    );
    assertClose(boolGot, [...boolWant], 0, `poisson BOOL via ${path.name}`);
    const multiGot = output(
      await post(path.url('multiclass'), body(multiRows, 'FP32')),
      'FP64',
      `multiclass FP32 via ${path.name}`,
    );
    assertClose(multiGot, [...multiWant], 1e-12, `multiclass FP32 via ${path.name}`);
  }
});

void test("XGBoost, every numeric datatype: XGBoost's own predictions from arrays of that dtype", async () => {
  const expected = readJson<{
    cases: { datatype: TensorDatatype; rows: (number | boolean)[][]; predictions: number[] }[];
  }>(`${treeFixtures}xgb-datatypes.expected.json`);
  assert.equal(expected.cases.length, 12);
  // float32's precision: one unit in the last place of the prediction (values in the hundreds).
  const ulp32 = (v: number): number => 2 ** (Math.floor(Math.log2(Math.abs(v))) - 23);
  for (const path of paths) {
    for (const { datatype, rows, predictions } of expected.cases) {
      const where = `xgb-gamma ${datatype} via ${path.name}`;
      const got = output(await post(path.url('xgb-gamma'), body(rows, datatype)), 'FP32', where);
      assertClose(got, predictions, 1, where, ulp32);
    }
  }
});

void test('missing values (Python NaN tokens, null) go where LightGBM sends them', async (t) => {
  if (skipWithoutLightgbm(t)) return;
  const rows = readTable(`${lightgbmFixtures}multiclass_test.tsv`, 1).slice(0, 20);
  const holes = rows.map((r, i) => r.map((v, j) => ((i + j) % 5 === 0 ? Number.NaN : v)));
  const want = lightgbmPredictor('lgmulticlass.model').predict64(
    Float64Array.from(holes.flat()),
    holes.length,
  );
  // json.dumps writes NaN as a bare token; other clients send null.
  const withTokens = body(holes, 'FP64', { nested: true }).replaceAll('null', 'NaN');
  for (const path of paths) {
    for (const request of [withTokens, body(holes, 'FP64')]) {
      const where = `multiclass with missing values via ${path.name}`;
      assertClose(
        output(await post(path.url('multiclass'), request), 'FP64', where),
        [...want],
        0,
        where,
      );
    }
  }
});

void test('strings where numbers are expected: 400 naming the input and the element', async () => {
  const row = [1, 2, 3, 4, 5, 6];
  const cases = [
    [
      body([row, ['7', 8, 9, 10, 11, 12]], 'FP64'),
      'KILN_INVALID_TENSOR',
      /^input 'input': element 6 \(index \[1, 0\]\) is a string, expected FP64 numbers/,
    ],
    [
      JSON.stringify({
        inputs: [{ name: 'input', datatype: 'INT32', shape: [1, 6], data: [['1', 2, 3, 4, 5, 6]] }],
      }),
      'KILN_INVALID_TENSOR',
      /^input 'input': element 0 \(index \[0, 0\]\) is a string, expected INT32/,
    ],
    [
      JSON.stringify({
        inputs: [{ name: 'input', datatype: 'BYTES', shape: [1, 6], data: row.map(String) }],
      }),
      'KILN_INPUT_MISMATCH',
      /^input 'input': datatype BYTES does not hold numbers; the model takes FP32/,
    ],
  ] as const;
  for (const path of paths) {
    for (const [request, code, message] of cases) {
      const answer = await post(path.url('xgb-gamma'), request);
      const where = `${path.name}: ${JSON.stringify(answer.body)}`;
      assert.equal(answer.status, 400, where);
      assert.equal(answer.body.code, code, where);
      assert.match(answer.body.error ?? '', message, where);
    }
  }
});
