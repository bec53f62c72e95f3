// The request forms clients already send, end to end through the gateway (real platform,
// gateway and worker processes, default schema and datatypes): a single input under another
// name, MLServer-style named features, and the KServe v1 / TensorFlow Serving predict
// protocol. Each must give the numbers the plain v2 request gives, which match the training
// library's reference predictions.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import {
  haveLightgbmFixtures,
  lightgbmFixtures,
  noLightgbmFixtures,
} from '../runtimes/trees/tree-test-helpers.ts';
import {
  call,
  readArtifact,
  register,
  registerFixture,
  testPlatform,
} from '../helpers/platform.ts';

const fixtures = new URL('../../fixtures/registry/', import.meta.url).pathname;
const expected = JSON.parse(readFileSync(`${fixtures}expected.json`, 'utf8')) as {
  xgboost: { inputs: (number | null)[][]; probabilities: number[]; featureNames: string[] };
};
const rows = expected.xgboost.inputs;
const features = expected.xgboost.featureNames; // age, income, score, tenure, visits

interface Answer {
  readonly status: number;
  readonly body: Record<string, unknown>;
  readonly text: string;
}

const platform = await testPlatform({ gateway: true });

async function post(path: string, body: unknown): Promise<Answer> {
  const response = await fetch(`${platform.gatewayUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: JSON.parse(text) as Record<string, unknown>, text };
}

async function deploy(endpoint: string, model: string): Promise<void> {
  const deployed = await call(platform.url, 'PUT', `/api/v1/endpoints/${endpoint}`, { model });
  assert.ok(deployed.status === 201 || deployed.status === 200, JSON.stringify(deployed.body));
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    const ready = await fetch(`${platform.gatewayUrl}/v1/models/${endpoint}`);
    await ready.arrayBuffer();
    if (ready.status === 200) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.fail(`${endpoint} never became ready at the gateway`);
}

function plainBody(name: string, data: (number | null)[][]): unknown {
  return { inputs: [{ name, datatype: 'FP32', shape: [data.length, 5], data }] };
}

/** One input per feature, in the order given (MLServer's pandas style). */
function namedBody(order: readonly string[], data: (number | null)[][]): unknown {
  return {
    inputs: order.map((feature) => {
      const column = features.indexOf(feature);
      return {
        name: feature,
        datatype: 'FP64',
        shape: [data.length],
        data: data.map((row) => row[column]),
      };
    }),
  };
}

function objectRows(order: readonly string[], data: (number | null)[][]): unknown[] {
  return data.map((row) => Object.fromEntries(order.map((f) => [f, row[features.indexOf(f)]])));
}

function outputData(answer: Answer): number[] {
  assert.equal(answer.status, 200, answer.text);
  const [output] = answer.body.outputs as { data: number[] }[];
  return output?.data ?? [];
}

function errorOf(answer: Answer): string {
  return String(answer.body.error);
}

await registerFixture(platform.url, 'fraud', 'xgboost', 'xgb-binary.json');
await deploy('fraud', 'fraud');
const plain = outputData(await post('/v2/models/fraud/infer', plainBody('input', rows)));

test('the plain v2 request gives what XGBoost predicts', () => {
  expected.xgboost.probabilities.forEach((p, i) => {
    assert.ok(Math.abs((plain[i] ?? Number.NaN) - p) <= 1e-6, `row ${i}: ${plain[i]} vs ${p}`);
  });
});

test('a single-input model without a declared name answers an input of any name', async () => {
  const renamed = await post('/v2/models/fraud/infer', plainBody('predict', rows));
  assert.deepEqual(outputData(renamed), plain);
  // Its metadata still names the input as the model does.
  const metadata = (await (await fetch(`${platform.gatewayUrl}/v2/models/fraud`)).json()) as {
    inputs: { name: string }[];
  };
  assert.equal(metadata.inputs[0]?.name, 'input');
});

test('named features (one input a feature, any order) give the plain request numbers', async () => {
  const shuffled = ['visits', 'age', 'tenure', 'income', 'score'];
  assert.deepEqual(
    outputData(await post('/v2/models/fraud/infer', namedBody(shuffled, rows))),
    plain,
  );
  // [N, 1] columns too.
  const columns = namedBody(features, rows) as { inputs: { shape: number[]; data: unknown[] }[] };
  for (const input of columns.inputs) {
    input.shape = [rows.length, 1];
    input.data = input.data.map((v) => [v]);
  }
  assert.deepEqual(outputData(await post('/v2/models/fraud/infer', columns)), plain);
});

test('v1 instances, as lists and as objects, give the plain request numbers', async () => {
  const lists = await post('/v1/models/fraud:predict', { instances: rows });
  assert.equal(lists.status, 200, lists.text);
  assert.deepEqual(lists.body, { predictions: plain });
  const shuffled = ['score', 'visits', 'income', 'age', 'tenure'];
  const objects = await post('/v1/models/fraud:predict', { instances: objectRows(shuffled, rows) });
  assert.equal(objects.status, 200, objects.text);
  assert.deepEqual(objects.body, { predictions: plain });
  // The same digits as v2 writes them, not just the same doubles.
  const v2Text = (await post('/v2/models/fraud/infer', plainBody('input', rows))).text;
  const v2Digits = /"data":\[([^\]]*)\]/.exec(v2Text)?.[1];
  assert.equal(lists.text, `{"predictions":[${v2Digits}]}`);
  // A version path (TensorFlow Serving's) and the status route.
  const versioned = await post('/v1/models/fraud/versions/1:predict', { instances: rows });
  assert.deepEqual(versioned.body, { predictions: plain });
  const status = await fetch(`${platform.gatewayUrl}/v1/models/fraud`);
  assert.deepEqual(await status.json(), { name: 'fraud', ready: true });
});

test('a missing feature is a 400 naming it, or a missing value when the request allows it', async () => {
  const noIncome = features.filter((f) => f !== 'income');
  const named = await post('/v2/models/fraud/infer', namedBody(noIncome, rows));
  assert.equal(named.status, 400, named.text);
  assert.equal(named.body.code, 'KILN_INPUT_MISMATCH');
  assert.match(errorOf(named), /missing feature income; .*allow_missing_features/);
  const v1 = await post('/v1/models/fraud:predict', { instances: objectRows(noIncome, rows) });
  assert.equal(v1.status, 400, v1.text);
  assert.match(errorOf(v1), /instances\[0\]: missing feature income/);

  // Allowed: the same as sending null (a missing value) in that column.
  const withNulls = rows.map((row) => row.map((v, c) => (c === 1 ? null : v)));
  const reference = outputData(await post('/v2/models/fraud/infer', plainBody('input', withNulls)));
  const allowedNamed = {
    ...(namedBody(noIncome, rows) as object),
    parameters: { allow_missing_features: true },
  };
  assert.deepEqual(outputData(await post('/v2/models/fraud/infer', allowedNamed)), reference);
  const allowedV1 = await post('/v1/models/fraud:predict', {
    instances: objectRows(noIncome, rows),
    parameters: { allow_missing_features: true },
  });
  assert.deepEqual(allowedV1.body, { predictions: reference });
});

test('bad input in the new forms is a 400 naming the problem', async () => {
  const cases: [string, unknown, string, RegExp][] = [
    [
      '/v2/models/fraud/infer',
      namedBody(['age', 'income', 'score', 'tenure', 'colour'], rows),
      'KILN_INPUT_MISMATCH',
      /unknown feature 'colour'; the model's features are: age, income, score, tenure, visits/,
    ],
    [
      '/v2/models/fraud/infer',
      namedBody(['age', 'age', 'income', 'score', 'tenure', 'visits'], rows),
      'KILN_INVALID_INFER_REQUEST',
      /feature 'age' appears twice/,
    ],
    [
      '/v2/models/fraud/infer',
      { instances: rows },
      'KILN_INVALID_INFER_REQUEST',
      /'instances' is the v1 protocol's field/,
    ],
    [
      '/v2/models/fraud/infer',
      { ...(plainBody('input', rows) as object), instances: rows },
      'KILN_INVALID_INFER_REQUEST',
      /mixes v1 'instances' with v2 'inputs'/,
    ],
    [
      '/v1/models/fraud:predict',
      { ...(plainBody('input', rows) as object), instances: rows },
      'KILN_INVALID_INFER_REQUEST',
      /mixes v1 'instances' with v2 'inputs'/,
    ],
    [
      '/v1/models/fraud:predict',
      plainBody('input', rows),
      'KILN_INVALID_INFER_REQUEST',
      /v1 predict takes \{"instances": \[\.\.\.\]\}; 'inputs' is not taken here/,
    ],
    [
      '/v1/models/fraud:predict',
      { instances: [rows[0], rows[1]?.slice(0, 3)] },
      'KILN_INVALID_INFER_REQUEST',
      /ragged: instances\[1\] has 3 values, instances\[0\] has 5 values/,
    ],
    [
      '/v1/models/fraud:predict',
      { instances: [[1, 2, 'three', 4, 5]] },
      'KILN_INVALID_TENSOR',
      /element 2 \(index \[0, 2\]\) is a string/,
    ],
    [
      '/v1/models/fraud:predict',
      { instances: [{ age: 1, income: '2', score: 3, tenure: 4, visits: 5 }] },
      'KILN_INVALID_TENSOR',
      /instances\[0\]: feature 'income' is a string, expected a number/,
    ],
    [
      '/v1/models/fraud:predict',
      { instances: [{ age: 1, income: 2, score: 3, tenure: 4, visits: 5, zip: 6 }] },
      'KILN_INPUT_MISMATCH',
      /instances\[0\]: unknown feature 'zip'/,
    ],
    [
      '/v1/models/fraud:predict',
      { instances: [rows[0], { age: 1 }] },
      'KILN_INVALID_INFER_REQUEST',
      /mixes objects \(rows keyed by name\) and lists/,
    ],
    [
      '/v2/models/fraud/infer',
      {
        inputs: [
          ...(namedBody(['age', 'income'], rows) as { inputs: unknown[] }).inputs,
          { name: 'score', datatype: 'BYTES', shape: [rows.length], data: rows.map(() => 'x') },
        ],
      },
      'KILN_INPUT_MISMATCH',
      /feature 'score': datatype BYTES cannot carry a feature/,
    ],
  ];
  for (const [path, body, code, message] of cases) {
    const answer = await post(path, body);
    assert.equal(answer.status, 400, `${path} ${JSON.stringify(body)}: ${answer.text}`);
    assert.equal(answer.body.code, code, answer.text);
    assert.match(errorOf(answer), message);
  }
});

test('v1 predict requests count in the endpoint metrics like v2 ones', async () => {
  const counted = async (): Promise<number> => {
    const text = await (await fetch(`${platform.gatewayUrl}/metrics`)).text();
    const line = text
      .split('\n')
      .find(
        (l) =>
          l.startsWith('kiln_gateway_requests_total{') &&
          l.includes('endpoint="fraud"') &&
          l.includes('code="200"'),
      );
    return Number(line?.split(' ').at(-1) ?? 0);
  };
  const before = await counted();
  assert.equal((await post('/v1/models/fraud:predict', { instances: rows })).status, 200);
  assert.equal(await counted(), before + 1);
});

test('a declared input name is enforced', async () => {
  const files = await readArtifact(`${fixtures}xgb-binary.json`);
  const schema = {
    inputs: [{ name: 'features', datatype: 'FP32', shape: [-1, 5] }],
    outputs: [{ name: 'probability', datatype: 'FP32', shape: [-1] }],
  };
  assert.equal(
    (await register(platform.url, 'declared', 'xgboost', files, { schema })).status,
    201,
  );
  await deploy('declared', 'declared');
  const wrong = await post('/v2/models/declared/infer', plainBody('input', rows));
  assert.equal(wrong.status, 400, wrong.text);
  assert.match(errorOf(wrong), /unknown input 'input'; the model takes: features/);
  assert.deepEqual(
    outputData(await post('/v2/models/declared/infer', plainBody('features', rows))),
    plain,
  );
  // The model's feature names still address its columns, and v1 still works.
  assert.deepEqual(
    outputData(await post('/v2/models/declared/infer', namedBody(features, rows))),
    plain,
  );
  const v1 = await post('/v1/models/declared:predict', { instances: objectRows(features, rows) });
  assert.deepEqual(v1.body, { predictions: plain });
});

test(
  'a LightGBM classifier: v1 predictions are one list of class probabilities a row',
  { skip: haveLightgbmFixtures ? false : noLightgbmFixtures },
  async () => {
    const model = readFileSync(`${lightgbmFixtures}lgmulticlass.model`);
    const files = [
      {
        path: 'model.txt',
        size: model.length,
        sha256: (await import('node:crypto')).createHash('sha256').update(model).digest('hex'),
        data: model,
      },
    ];
    assert.equal((await register(platform.url, 'classes', 'lightgbm', files)).status, 201);
    await deploy('classes', 'classes');
    const table = readFileSync(`${lightgbmFixtures}multiclass_test.tsv`, 'utf8')
      .trim()
      .split('\n')
      .slice(0, 20)
      .map((line) => line.split('\t').slice(1).map(Number));
    const reference = readFileSync(`${lightgbmFixtures}lgmulticlass_true_predictions.txt`, 'utf8')
      .trim()
      .split('\n')
      .slice(0, 20)
      .map((line) => line.split('\t').map(Number));
    const width = table[0]?.length ?? 0;
    const v2 = await post('/v2/models/classes/infer', {
      inputs: [{ name: 'input', datatype: 'FP32', shape: [table.length, width], data: table }],
    });
    const [output] = v2.body.outputs as { shape: number[]; data: number[] }[];
    assert.deepEqual(output?.shape, [table.length, 5]);
    const v2Rows = table.map((_, r) => output?.data.slice(r * 5, r * 5 + 5));
    const v1 = await post('/v1/models/classes:predict', { instances: table });
    assert.deepEqual(v1.body, { predictions: v2Rows });
    const names = Array.from({ length: width }, (_, c) => `Column_${c}`);
    const objects = table.map((row) => Object.fromEntries(names.map((n, c) => [n, row[c]])));
    const byName = await post('/v1/models/classes:predict', { instances: objects });
    assert.deepEqual(byName.body, { predictions: v2Rows });
    // FP32 inputs (the default schema's datatype) against LightGBM's double predictions.
    reference.forEach((probabilities, r) =>
      probabilities.forEach((p, k) => {
        const got = v2Rows[r]?.[k] ?? Number.NaN;
        assert.ok(Math.abs(got - p) <= 1e-5, `row ${r} class ${k}: ${got} vs ${p}`);
      }),
    );
  },
);

test('a schema declared as one input per feature names the features (MLServer model-settings style)', async () => {
  const files = await readArtifact(`${fixtures}xgb-binary.json`);
  // Names of our own (not the model file's), datatypes and column shapes mixed.
  const columns = ['years', 'income', 'score', 'tenure', 'visits'];
  const schema = {
    inputs: [
      { name: 'years', datatype: 'FP32', shape: [-1] },
      { name: 'income', datatype: 'FP64', shape: [-1] },
      { name: 'score', datatype: 'FP32', shape: [-1, 1] },
      { name: 'tenure', datatype: 'FP64', shape: [-1] },
      { name: 'visits', datatype: 'FP32', shape: [-1] },
    ],
    outputs: [{ name: 'probability', datatype: 'FP32', shape: [-1] }],
  };
  assert.equal((await register(platform.url, 'columns', 'xgboost', files, { schema })).status, 201);
  await deploy('columns', 'columns');
  const metadata = (await (await fetch(`${platform.gatewayUrl}/v2/models/columns`)).json()) as {
    inputs: { name: string }[];
  };
  assert.deepEqual(
    metadata.inputs.map((i) => i.name),
    columns,
  );
  const v2 = (data: (number | null)[][], skip = -1): unknown => ({
    inputs: schema.inputs
      .map((spec, c) => ({
        name: spec.name,
        datatype: spec.datatype,
        shape: spec.shape.length === 1 ? [data.length] : [data.length, 1],
        data: data.map((row) => (spec.shape.length === 1 ? row[c] : [row[c]])),
      }))
      .filter((_, c) => c !== skip),
  });
  assert.deepEqual(outputData(await post('/v2/models/columns/infer', v2(rows))), plain);
  const lists = await post('/v1/models/columns:predict', { instances: rows });
  assert.deepEqual(lists.body, { predictions: plain });
  const objects = rows.map((row) => Object.fromEntries(columns.map((n, c) => [n, row[c]])));
  assert.deepEqual((await post('/v1/models/columns:predict', { instances: objects })).body, {
    predictions: plain,
  });

  // A missing column: 400 naming it, or missing values when the request allows it.
  const refused = await post('/v2/models/columns/infer', v2(rows, 1));
  assert.equal(refused.status, 400, refused.text);
  assert.match(errorOf(refused), /missing feature income; .*allow_missing_features/);
  const withNulls = rows.map((row) => row.map((v, c) => (c === 1 ? null : v)));
  const reference = outputData(await post('/v2/models/fraud/infer', plainBody('input', withNulls)));
  const allowed = { ...(v2(rows, 1) as object), parameters: { allow_missing_features: true } };
  assert.deepEqual(outputData(await post('/v2/models/columns/infer', allowed)), reference);
  const partial = objects.map(({ income: _income, ...rest }) => rest);
  const v1Refused = await post('/v1/models/columns:predict', { instances: partial });
  assert.match(errorOf(v1Refused), /instances\[0\]: missing feature income/);
  const v1Allowed = await post('/v1/models/columns:predict', {
    instances: partial,
    parameters: { allow_missing_features: true },
  });
  assert.deepEqual(v1Allowed.body, { predictions: reference });
  const short = await post('/v1/models/columns:predict', { instances: [rows[0]?.slice(0, 4)] });
  assert.match(errorOf(short), /instances\[0\] has 4 values; the model takes 5 features a row/);
});
