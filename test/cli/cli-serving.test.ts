// End to end, serving: the real `kiln` CLI as OS processes against `kiln up --port 0
// --gateway-port 0` in a temp home (API keys required: not --dev). Register the fixture
// models, deploy them and wait for ready, inspect endpoints, create API keys, predict through
// the gateway and check the outputs against the training library's reference values
// (fixtures/registry/expected.json), revoke a key, delete the endpoints. The tests run in
// order and build on each other.

import { promisify } from 'node:util';
import { execFile } from 'node:child_process';
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { Cli, fixtures, startPlatformProcess, type PlatformProcess } from './cli-harness.ts';

const repoRoot = new URL('../../', import.meta.url).pathname;

interface Endpoint {
  name: string;
  team: string;
  model: string;
  version: number;
  ref: string;
  replicas: number;
  config: Record<string, unknown>;
  format: string | null;
  url: string;
  status: {
    ready: boolean;
    readyReplicas: number;
    reason: string | null;
    maxConcurrency: number | null;
    maxConcurrencySource: string | null;
    replicas: Array<{ id: string; state: string; pid: number | null; version: number }>;
  };
}

interface ApiKey {
  id: string;
  name: string;
  team: string | null;
  endpoint: string | null;
  prefix: string;
  key?: string;
}

interface InferResponse {
  model_name: string;
  model_version: string;
  outputs: Array<{ name: string; datatype: string; shape: number[]; data: number[] }>;
}

interface Expected {
  xgboost: { inputs: Array<Array<number | null>>; probabilities: number[] };
  'mlp.onnx': { probe: { input: number[][]; logits: number[][] } };
}

let home = '';
let platform: PlatformProcess | undefined;
let cli: Cli;
let gatewayUrl = '';
let expected: Expected;
/** An API key scoped to the `churn` endpoint, and one for every endpoint of team `risk`. */
let endpointKey = '';
let teamKey: ApiKey;
/** A key for every endpoint of team `vision` (the ONNX endpoint). */
let visionKey = '';
const ok = (args: readonly string[]): Promise<string> => cli.ok(args);
const json = <T>(args: readonly string[]): Promise<T> => cli.json<T>(args);
const fails = (args: readonly string[], exitCode: number): Promise<string> =>
  cli.fails(args, exitCode);

before(async () => {
  home = await mkdtemp(join(tmpdir(), 'kiln-cli-serving-'));
  platform = await startPlatformProcess(home, { gateway: true });
  gatewayUrl = platform.gatewayUrl ?? '';
  cli = new Cli(platform.url, home);
  expected = JSON.parse(await readFile(join(fixtures, 'expected.json'), 'utf8')) as Expected;
});

after(async () => {
  if (platform !== undefined)
    assert.equal(await platform.stop(), 0, 'kiln up should stop cleanly on SIGTERM');
  if (home !== '') await rm(home, { recursive: true, force: true });
});

/** GET {gateway}/v2/models/{name} (model metadata) with a key. */
async function modelMetadata(
  name: string,
  key: string,
): Promise<{ inputs: Array<{ name: string; datatype: string; shape: number[] }> }> {
  const response = await request(`${gatewayUrl}/v2/models/${name}`, {
    headers: { authorization: `Bearer ${key}` },
  });
  const text = await response.body.text();
  assert.equal(response.statusCode, 200, text);
  return JSON.parse(text) as { inputs: Array<{ name: string; datatype: string; shape: number[] }> };
}

void test('kiln up prints where the API and the gateway listen', async () => {
  assert.match(gatewayUrl, /^http:\/\/127\.0\.0\.1:\d+$/);
  assert.notEqual(gatewayUrl, platform?.url);
  assert.match(
    platform?.stdout() ?? '',
    /^Kiln API listening on .*\nKiln gateway listening on .*\nadmin token for the CLI on this machine: .*admin\.token\n/,
  );
  const health = await json<{ gatewayUrl: string }>(['health']);
  assert.equal(health.gatewayUrl, gatewayUrl);
  assert.match(await ok(['health']), new RegExp(`^gateway:\\s+${gatewayUrl}$`, 'm'));
});

void test('deploy --wait an XGBoost model by alias', async () => {
  await ok([
    'models',
    'register',
    join(fixtures, 'xgb-binary.json'),
    '--name',
    'churn-xgb',
    '--format',
    'xgboost',
    '--team',
    'risk',
    '--alias',
    'champion',
  ]);
  const stdout = await ok([
    'deploy',
    'churn-xgb@champion',
    '--endpoint',
    'churn',
    '--wait',
    '--timeout-s',
    '60',
  ]);
  assert.equal(
    stdout,
    'endpoint churn → churn-xgb v1 (1 replica)\n' +
      `url: ${gatewayUrl}/v2/models/churn\n` +
      'ready (1/1 replicas)\n',
  );
  // Deploying again updates in place; --json prints the endpoint.
  const endpoint = await json<Endpoint>(['deploy', 'churn-xgb:1', '--endpoint', 'churn', '--wait']);
  assert.equal(endpoint.name, 'churn');
  assert.equal(endpoint.team, 'risk');
  assert.equal(endpoint.version, 1);
  assert.equal(endpoint.replicas, 1);
  assert.equal(endpoint.url, `${gatewayUrl}/v2/models/churn`);
  assert.equal(endpoint.status.ready, true);
  assert.equal(endpoint.status.readyReplicas, 1);
});

void test('deploy --wait an ONNX model on two replicas, with runtime settings', async () => {
  await ok([
    'models',
    'register',
    join(fixtures, 'mlp.onnx'),
    '--name',
    'mlp',
    '--format',
    'onnx',
    '--team',
    'vision',
  ]);
  const endpoint = await json<Endpoint>([
    'deploy',
    'mlp',
    '--endpoint',
    'mlp',
    '--replicas',
    '2',
    '--threads',
    '1',
    '--inter-op-threads',
    '1',
    '--graph-opt',
    'all',
    '--max-body-bytes',
    '65536',
    '--wait',
    '--timeout-s',
    '60',
  ]);
  // --wait returns once every replica is ready, not just the first.
  assert.equal(endpoint.status.ready, true);
  assert.equal(endpoint.status.readyReplicas, 2);
  assert.deepEqual(endpoint.config, {
    intraOpThreads: 1,
    interOpThreads: 1,
    graphOptimizationLevel: 'all',
    maxBodyBytes: 65536,
  });
  // Deploying again with one setting changes that setting only: still two replicas, the
  // runtime settings kept, batching on with the queue given and the platform's defaults.
  // A worker setting is a rollout: --wait, so the tests after this one see it finished (two
  // ready replicas of the new config, not the old ones still serving beside the new).
  const updated = await json<Endpoint>([
    'deploy',
    'mlp',
    '--endpoint',
    'mlp',
    '--queue',
    '64',
    '--wait',
    '--timeout-s',
    '60',
  ]);
  assert.equal(updated.replicas, 2);
  assert.equal(updated.status.readyReplicas, 2);
  assert.deepEqual(updated.config, {
    intraOpThreads: 1,
    interOpThreads: 1,
    graphOptimizationLevel: 'all',
    maxBodyBytes: 65536,
    batching: { maxBatchSize: 32, maxDelayMicros: 0, maxQueue: 64 },
  });
});

void test('endpoints list and show', async () => {
  const table = await ok(['endpoints', 'list']);
  assert.match(table, /^NAME\s+MODEL\s+VERSION\s+REPLICAS\s+READY\s+URL$/m);
  assert.match(
    table,
    new RegExp(`^churn\\s+churn-xgb\\s+1\\s+1/1\\s+yes\\s+${gatewayUrl}/v2/models/churn$`, 'm'),
  );
  assert.match(table, /^mlp\s+mlp\s+1\s+2\/2\s+yes\s+/m);
  const list = await json<{ items: Endpoint[] }>(['endpoints', 'list']);
  assert.deepEqual(list.items.map((e) => e.name).sort(), ['churn', 'mlp']);

  const shown = await ok(['endpoints', 'show', 'churn']);
  assert.match(shown, /^name:\s+churn$/m);
  assert.match(shown, /^team:\s+risk$/m);
  assert.match(shown, /^model:\s+churn-xgb$/m);
  assert.match(shown, /^ready:\s+yes$/m);
  // No --max-concurrency: the bound derived from its one unbatched replica.
  assert.match(shown, /^max concurrency:\s+64 \(derived from the ready replicas\)$/m);
  // Placement puts every replica on a node: without an inventory, this machine (its hostname).
  assert.match(shown, /^Replicas\nID\s+VERSION\s+STATE\s+NODE\s+PID\s+RESTARTS\s+REASON$/m);
  assert.match(shown, /^\S+\s+1\s+ready\s+\S+\s+\d+\s+0\s+-$/m);
  const endpoint = await json<Endpoint>(['endpoints', 'show', 'churn']);
  assert.equal(endpoint.status.replicas.length, 1);
  assert.equal(endpoint.status.replicas[0]?.state, 'ready');
  assert.equal(endpoint.status.maxConcurrency, 64);
  assert.equal(endpoint.status.maxConcurrencySource, 'derived');

  assert.match(await fails(['endpoints', 'show', 'nope'], 1), /KILN_ENDPOINT_NOT_FOUND/);
});

void test('keys api create, list', async () => {
  const created = await ok(['keys', 'api', 'create', 'ci', '--endpoint', 'churn']);
  assert.match(created, /^created API key \S+ \(ci, endpoint churn\)$/m);
  assert.match(created, /shown only now/);
  endpointKey = /^key: (\S+)$/m.exec(created)?.[1] ?? '';
  assert.notEqual(endpointKey, '');

  teamKey = await json<ApiKey>(['keys', 'api', 'create', 'risk-team', '--team', 'risk']);
  assert.equal(teamKey.team, 'risk');
  assert.equal(teamKey.endpoint, null);
  assert.ok(teamKey.key?.startsWith(teamKey.prefix));
  visionKey =
    (await json<ApiKey>(['keys', 'api', 'create', 'vision-team', '--team', 'vision'])).key ?? '';

  const table = await ok(['keys', 'api', 'list']);
  assert.match(table, /^ID\s+NAME\s+TEAM\s+ENDPOINT\s+PREFIX\s+CREATED$/m);
  assert.match(table, /^\S+\s+ci\s+-\s+churn\s+\S+\s+\d{4}-/m);
  const list = await json<{ items: ApiKey[] }>(['keys', 'api', 'list']);
  assert.deepEqual(list.items.map((k) => k.name).sort(), ['ci', 'risk-team', 'vision-team']);
  assert.ok(
    list.items.every((k) => k.key === undefined),
    'list never shows the key',
  );

  await fails(['keys', 'api', 'create', 'x'], 2);
  await fails(['keys', 'api', 'create', 'x', '--team', 'a', '--endpoint', 'b'], 2);
});

void test('predict the XGBoost endpoint: NaN in the request, reference probabilities out', async () => {
  const metadata = await modelMetadata('churn', endpointKey);
  const input = metadata.inputs[0];
  assert.ok(input !== undefined);
  assert.equal(input.datatype, 'FP32');
  // Rows 3 (two missing values, sent as NaN tokens) and 0 of the reference probe.
  const rows = [3, 0];
  const values = rows.flatMap((r) => expected.xgboost.inputs[r] ?? []);
  assert.equal(values.length, 10);
  const requestText =
    `{"inputs": [{"name": ${JSON.stringify(input.name)}, "datatype": "FP32", "shape": [2, 5], ` +
    `"data": [${values.map((v) => (v === null ? 'NaN' : String(v))).join(', ')}]}]}`;
  const requestFile = join(home, 'churn-request.json');
  await writeFile(requestFile, requestText);

  const response = await json<InferResponse>([
    'predict',
    'churn',
    '--data',
    requestFile,
    '--key',
    endpointKey,
  ]);
  assert.equal(response.model_version, '1');
  const probabilities = response.outputs[0]?.data ?? [];
  assert.equal(probabilities.length, 2);
  rows.forEach((row, i) => {
    const want = expected.xgboost.probabilities[row] ?? Number.NaN;
    assert.ok(Math.abs((probabilities[i] ?? Number.NaN) - want) < 1e-6, `row ${row}`);
  });

  const text = await cli.run(['predict', 'churn', '--data', requestFile], {
    KILN_API_KEY: teamKey.key ?? '',
  });
  assert.equal(text.code, 0, text.stderr);
  assert.match(text.stdout, /^model version:\s+1$/m);
  assert.match(text.stdout, /^request id:\s+\S+$/m);
  assert.match(text.stdout, /^NAME\s+DATATYPE\s+SHAPE\s+DATA$/m);

  // Asking for the version it serves works; another version does not.
  await ok(['predict', 'churn', '--data', requestFile, '--key', endpointKey, '--version', '1']);
  assert.match(
    await fails(
      ['predict', 'churn', '--data', requestFile, '--key', endpointKey, '--version', '2'],
      1,
    ),
    /KILN_VERSION_NOT_SERVED/,
  );
});

void test('predict the ONNX endpoint: reference logits out', async () => {
  const metadata = await modelMetadata('mlp', visionKey);
  const input = metadata.inputs[0];
  assert.ok(input !== undefined);
  const { probe } = expected['mlp.onnx'];
  const requestFile = join(home, 'mlp-request.json');
  await writeFile(
    requestFile,
    JSON.stringify({
      inputs: [{ name: input.name, datatype: 'FP32', shape: [2, 4], data: probe.input.flat() }],
    }),
  );
  const response = await json<InferResponse>([
    'predict',
    'mlp',
    '--data',
    requestFile,
    '--key',
    visionKey,
  ]);
  const logits = response.outputs[0];
  assert.deepEqual(logits?.shape, [2, 3]);
  probe.logits.flat().forEach((want, i) => {
    assert.ok(Math.abs((logits?.data[i] ?? Number.NaN) - want) < 1e-5, `logit ${i}`);
  });
});

void test('predict failures: no key, wrong scope, unknown endpoint', async () => {
  const requestFile = join(home, 'churn-request.json');
  const unauthenticated = await fails(['predict', 'churn', '--data', requestFile], 1);
  assert.match(unauthenticated, /^error: .* \(KILN_UNAUTHENTICATED\)$/m);
  assert.match(unauthenticated, /^hint: .*--key.*kiln keys api create/m);

  const forbidden = await fails(['predict', 'mlp', '--data', requestFile, '--key', endpointKey], 1);
  assert.match(forbidden, /\(KILN_FORBIDDEN\)$/m);

  const missing = await fails(['predict', 'nope', '--data', requestFile, '--key', endpointKey], 1);
  assert.match(missing, /^error: .*nope.* \(KILN_ENDPOINT_NOT_FOUND\)$/m);
});

void test('keys api revoke: the gateway refuses the key from then on', async () => {
  const requestFile = join(home, 'churn-request.json');
  assert.match(
    await ok(['keys', 'api', 'revoke', teamKey.id]),
    new RegExp(`^revoked API key ${teamKey.id} \\(risk-team, team risk\\)$`, 'm'),
  );
  // The next routing snapshot drops it; give the long-poll a moment.
  let last = '';
  for (let attempt = 0; attempt < 40; attempt++) {
    const run = await cli.run([
      'predict',
      'churn',
      '--data',
      requestFile,
      '--key',
      teamKey.key ?? '',
    ]);
    last = run.stderr;
    if (run.code === 1 && /KILN_UNAUTHENTICATED/.test(run.stderr)) break;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  assert.match(last, /KILN_UNAUTHENTICATED/);
  const list = await json<{ items: ApiKey[] }>(['keys', 'api', 'list']);
  assert.ok(!list.items.some((k) => k.id === teamKey.id));
  assert.match(await fails(['keys', 'api', 'revoke', teamKey.id], 1), /KILN_API_KEY_NOT_FOUND/);
});

void test('deploy refusals', async () => {
  assert.match(
    await fails(['deploy', 'no-such-model', '--endpoint', 'x'], 1),
    /KILN_MODEL_NOT_FOUND/,
  );
  await fails(['deploy', 'churn-xgb', '--endpoint', 'x', '--graph-opt', 'max'], 2);
  await fails(['deploy', 'churn-xgb'], 2); // --endpoint is required
  await fails(['deploy', 'churn-xgb:two', '--endpoint', 'x'], 2);
});

void test('endpoints delete', async () => {
  assert.equal(
    await ok(['endpoints', 'delete', 'churn']),
    'deleted endpoint churn (was churn-xgb v1)\n',
  );
  const deleted = await json<Endpoint>(['endpoints', 'delete', 'mlp']);
  assert.equal(deleted.name, 'mlp');
  assert.equal(await ok(['endpoints', 'list']), 'no endpoints (create one with `kiln deploy`)\n');
  assert.match(await fails(['endpoints', 'delete', 'churn'], 1), /KILN_ENDPOINT_NOT_FOUND/);
});

void test('kiln up --dev: demo endpoints, no API keys, and the printed examples work', async () => {
  const devHome = await mkdtemp(join(tmpdir(), 'kiln-cli-dev-'));
  const dev = await startPlatformProcess(devHome, { gateway: true, args: ['--dev'] });
  try {
    const devCli = new Cli(dev.url, devHome);
    // The examples follow the two listening lines; wait until the last one is printed (a
    // deadline, not a count of polls: a loaded machine prints them late).
    const printedBy = Date.now() + 60_000;
    while (!/--replicas 2 --wait\n/.test(dev.stdout()) && Date.now() < printedBy) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const printed = dev.stdout();
    const list = await devCli.json<{ items: Endpoint[] }>(['endpoints', 'list']);
    assert.ok(list.items.some((e) => e.name === 'fraud-xgb'));
    assert.ok(list.items.some((e) => e.name === 'digits-cnn'));
    // The demo LLM is deployed beside them (whether its replica is ready is the worker's
    // part), and its streamed chat curl line is printed.
    assert.ok(list.items.some((e) => e.name === 'tiny-llm' && e.format === 'hf-llm'));
    assert.ok(printed.includes(`  curl -N ${dev.gatewayUrl ?? ''}/v1/chat/completions `), printed);
    await devCli.ok(['deploy', 'fraud-xgb@champion', '--endpoint', 'fraud-xgb', '--wait']);
    await devCli.ok(['deploy', 'digits-cnn@champion', '--endpoint', 'digits-cnn', '--wait']);

    // Run the printed curl and predict lines exactly as a user would paste them.
    const shell = async (line: string): Promise<string> =>
      (await promisify(execFile)('sh', ['-c', line], { cwd: repoRoot, encoding: 'utf8' })).stdout;
    const curlLines = printed.split('\n').filter((l) => l.startsWith('  curl -s '));
    assert.equal(curlLines.length, 2, printed);
    const fraud = JSON.parse(await shell(curlLines[0]!)) as InferResponse;
    assert.deepEqual(fraud.outputs[0]?.shape, [2]);
    const digits = JSON.parse(await shell(curlLines[1]!)) as InferResponse & {
      outputs: { name: string; data: number[] }[];
    };
    const probabilities = digits.outputs.find((o) => o.name === 'probabilities')?.data ?? [];
    assert.equal(probabilities.indexOf(Math.max(...probabilities)), 8, 'the demo image is an 8');
    const predictLine = printed.split('\n').find((l) => l.includes('npx kiln predict fraud-xgb'));
    assert.ok(predictLine !== undefined, printed);
    assert.match(await shell(predictLine.trim()), /output/);
  } finally {
    assert.equal(await dev.stop(), 0);
    await rm(devHome, { recursive: true, force: true });
  }
});
