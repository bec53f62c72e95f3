// End to end through real processes: control plane (in this process), the gateway and the
// worker processes it supervises. Predictions are compared with the training library's.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  call,
  errorCode,
  readArtifact,
  register,
  registerFixture,
  testPlatform,
  type TestPlatform,
} from '../helpers/platform.ts';

const fixtures = new URL('../../fixtures/registry/', import.meta.url).pathname;
const expected = JSON.parse(readFileSync(`${fixtures}expected.json`, 'utf8')) as {
  xgboost: { inputs: number[][]; probabilities: number[] };
  'mlp.onnx': { probe: { input: number[][]; logits: number[][] } };
};

interface EndpointBody {
  status: {
    ready: boolean;
    reason: string | null;
    replicas: { pid: number | null; state: string; restarts: number }[];
  };
}

async function waitUntil(
  what: string,
  check: () => Promise<boolean>,
  timeoutMs = 60_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.fail(`timed out waiting for ${what}`);
}

async function deployAndWait(
  platform: TestPlatform,
  endpoint: string,
  model: string,
  headers: Record<string, string> = {},
): Promise<void> {
  const deployed = await call(platform.url, 'PUT', `/api/v1/endpoints/${endpoint}`, { model });
  assert.ok(deployed.status === 201 || deployed.status === 200, JSON.stringify(deployed.body));
  await waitUntil(`${endpoint} ready at the gateway`, async () => {
    const ready = await fetch(`${platform.gatewayUrl}/v2/models/${endpoint}/ready`, { headers });
    await ready.arrayBuffer();
    return ready.status === 200;
  });
}

function inferBody(name: string, rows: number[][]): string {
  return JSON.stringify({
    inputs: [
      { name, shape: [rows.length, rows[0]?.length ?? 0], datatype: 'FP32', data: rows.flat() },
    ],
  });
}

async function infer(
  platform: TestPlatform,
  endpoint: string,
  body: string,
  headers: Record<string, string> = {},
) {
  const response = await fetch(`${platform.gatewayUrl}/v2/models/${endpoint}/infer`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
  });
  return {
    status: response.status,
    headers: response.headers,
    body: (await response.json()) as Record<string, unknown>,
  };
}

const platform = await testPlatform({ gateway: true });
await registerFixture(platform.url, 'fraud', 'xgboost', 'xgb-binary.json');
await registerFixture(platform.url, 'mlp', 'onnx', 'mlp.onnx');

test('an XGBoost endpoint returns what XGBoost predicts, through the gateway, with ids passed through', async () => {
  await deployAndWait(platform, 'fraud', 'fraud');
  const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
  const result = await infer(platform, 'fraud', inferBody('input', expected.xgboost.inputs), {
    'x-request-id': 'req-123',
    traceparent,
  });
  assert.equal(result.status, 200, JSON.stringify(result.body));
  assert.equal(result.headers.get('x-request-id'), 'req-123');
  assert.equal(result.headers.get('traceparent')?.split('-')[1], traceparent.split('-')[1]);
  assert.equal(result.body.model_name, 'fraud');
  assert.equal(result.body.model_version, '1');
  const [output] = result.body.outputs as { data: number[]; shape: number[] }[];
  assert.deepEqual(output?.shape, [expected.xgboost.inputs.length]);
  expected.xgboost.probabilities.forEach((p, i) => {
    assert.ok(
      Math.abs((output?.data[i] ?? Number.NaN) - p) <= 1e-5,
      `row ${i}: ${output?.data[i]} vs ${p}`,
    );
  });
  // The local backend's worker serves a Unix socket in its folder, the routing snapshot
  // names it, and the request above went there: the worker has a connection on it.
  const snapshot = (await call(platform.url, 'GET', '/api/v1/routing/snapshot?waitMs=0')).body as {
    endpoints: { name: string; replicas: { socketPath?: string }[] }[];
  };
  const socketPath =
    snapshot.endpoints.find((e) => e.name === 'fraud')?.replicas[0]?.socketPath ?? '';
  assert.ok(socketPath.endsWith('/channel.sock'), JSON.stringify(snapshot));
  assert.ok(statSync(socketPath).isSocket());
  // Linux lists an accepted connection under its listener's path: two lines or more.
  const unixSockets = readFileSync('/proc/net/unix', 'utf8').split('\n');
  assert.ok(unixSockets.filter((line) => line.endsWith(` ${socketPath}`)).length >= 2);
});

test('an ONNX endpoint returns what PyTorch computed', async () => {
  await deployAndWait(platform, 'mlp', 'mlp');
  const probe = expected['mlp.onnx'].probe;
  const result = await infer(platform, 'mlp', inferBody('input', probe.input));
  assert.equal(result.status, 200, JSON.stringify(result.body));
  const [output] = result.body.outputs as { data: number[] }[];
  probe.logits
    .flat()
    .forEach((v, i) =>
      assert.ok(Math.abs((output?.data[i] ?? Number.NaN) - v) <= 1e-4, `element ${i}`),
    );
});

test("a LightGBM endpoint answers in double: LightGBM's own predictions within 1e-9", async (t) => {
  // The real user path: registered without a schema, deployed, metadata read, then the rows
  // sent as the metadata says (tritonclient's shape: flat FP64 data).
  const lightgbm = new URL('../../../shared/fixtures/lightgbm/', import.meta.url).pathname;
  if (!existsSync(`${lightgbm}README.md`)) {
    t.skip(`LightGBM reference models not found at ${lightgbm}`);
    return;
  }
  const model = await readArtifact(`${lightgbm}genlin_fmtp_poisson_Frequency.model`);
  assert.equal((await register(platform.url, 'claims', 'lightgbm', model)).status, 201);
  await deployAndWait(platform, 'claims', 'claims');
  const metadata = await call(platform.gatewayUrl, 'GET', '/v2/models/claims');
  const { inputs, outputs } = metadata.body as {
    inputs: { name: string; datatype: string; shape: number[] }[];
    outputs: { datatype: string }[];
  };
  assert.deepEqual(inputs, [{ name: 'input', datatype: 'FP64', shape: [-1, 9] }]);
  assert.equal(outputs[0]?.datatype, 'FP64');
  const table = (file: string): number[][] =>
    readFileSync(`${lightgbm}${file}`, 'utf8')
      .trim()
      .split('\n')
      .map((line) => line.trim().split(/\s+/).map(Number));
  const rows = table('genlin_fmtp_poisson_Frequency_features.tsv');
  const want = table('genlin_fmtp_poisson_Frequency_true_predictions.txt').flat();
  const body = JSON.stringify({
    inputs: [{ name: 'input', shape: [rows.length, 9], datatype: 'FP64', data: rows.flat() }],
  });
  const result = await infer(platform, 'claims', body);
  assert.equal(result.status, 200, JSON.stringify(result.body));
  const [output] = result.body.outputs as { datatype: string; data: number[] }[];
  assert.equal(output?.datatype, 'FP64');
  want.forEach((p, i) => {
    const got = output?.data[i] ?? Number.NaN;
    assert.ok(Math.abs(got - p) <= 1e-9, `row ${i}: ${got} vs ${p}`);
  });
});

test('bad requests are refused by the gateway and never reach the worker', async () => {
  await deployAndWait(platform, 'fraud', 'fraud');
  const workerCount = async (): Promise<string> => {
    const status = (await call(platform.url, 'GET', '/api/v1/endpoints/fraud')).body as {
      status: { replicas: { url: string | null }[] };
    };
    const text = await (await fetch(`${status.status.replicas[0]?.url ?? ''}/metrics`)).text();
    return text
      .split('\n')
      .filter((l) => l.startsWith('kiln_worker_requests_total'))
      .join('\n');
  };
  const before = await workerCount();
  const cases: [string, string][] = [
    ['wrong shape', inferBody('input', [[1, 2, 3]])],
    // (a single input under another name is taken: the model declared none; two are not)
    [
      'wrong names',
      JSON.stringify({
        inputs: [
          { name: 'features', shape: [1], datatype: 'FP32', data: [1] },
          { name: 'extra', shape: [1], datatype: 'FP32', data: [1] },
        ],
      }),
    ],
    ['malformed', '{"inputs": ['],
    [
      'strings',
      JSON.stringify({
        inputs: [
          { name: 'input', shape: [1, 5], datatype: 'BYTES', data: ['a', 'b', 'c', 'd', 'e'] },
        ],
      }),
    ],
  ];
  for (const [label, body] of cases) {
    const result = await infer(platform, 'fraud', body);
    assert.equal(result.status, 400, label);
    assert.ok(
      ['KILN_INPUT_MISMATCH', 'KILN_INVALID_JSON', 'KILN_INVALID_TENSOR'].includes(
        String(result.body.code),
      ),
      `${label}: ${String(result.body.code)}`,
    );
    assert.equal(typeof result.body.error, 'string', label);
  }
  assert.equal(await workerCount(), before);
  const unknown = await infer(platform, 'nope', inferBody('input', [[1]]));
  assert.equal(unknown.status, 404);
  assert.equal(unknown.body.code, 'KILN_ENDPOINT_NOT_FOUND');
});

test('kill -9 of one endpoint worker under load: the other endpoint loses nothing, the first recovers', async () => {
  await deployAndWait(platform, 'fraud', 'fraud');
  await deployAndWait(platform, 'mlp', 'mlp');
  const fraudStatus = (await call(platform.url, 'GET', '/api/v1/endpoints/fraud'))
    .body as EndpointBody;
  const pid = fraudStatus.status.replicas.find((r) => r.state === 'ready')?.pid;
  assert.ok(typeof pid === 'number');

  const mlpBody = inferBody('input', expected['mlp.onnx'].probe.input);
  const fraudBody = inferBody('input', expected.xgboost.inputs);
  let mlpOk = 0;
  let mlpFailed = 0;
  const fraudStatuses = new Map<number, number>();
  let stop = false;
  const loops = [
    ...Array.from({ length: 4 }, async () => {
      while (!stop) {
        const r = await infer(platform, 'mlp', mlpBody);
        if (r.status === 200) mlpOk++;
        else mlpFailed++;
      }
    }),
    ...Array.from({ length: 2 }, async () => {
      while (!stop) {
        const r = await infer(platform, 'fraud', fraudBody);
        fraudStatuses.set(r.status, (fraudStatuses.get(r.status) ?? 0) + 1);
        if (r.status !== 200) {
          assert.equal(r.status, 503, JSON.stringify(r.body));
          assert.equal(r.headers.get('retry-after'), '1');
        }
      }
    }),
  ];
  // Conditions, not pauses: load on both endpoints before the kill, a replica restarted and
  // ready after it (restarts >= 1 says it is not the killed one), and fraud answering again.
  const fraudOk = (): number => fraudStatuses.get(200) ?? 0;
  await waitUntil('answers from both endpoints', () => Promise.resolve(mlpOk > 0 && fraudOk() > 0));
  process.kill(pid, 'SIGKILL');
  await waitUntil('fraud to recover', async () => {
    const s = (await call(platform.url, 'GET', '/api/v1/endpoints/fraud')).body as EndpointBody;
    return s.status.ready && s.status.replicas.some((r) => r.restarts >= 1 && r.state === 'ready');
  });
  const okBeforeRecovery = fraudOk();
  await waitUntil('fraud answering again', () => Promise.resolve(fraudOk() > okBeforeRecovery));
  stop = true;
  await Promise.all(loops);
  assert.equal(mlpFailed, 0, `mlp: ${mlpOk} ok, ${mlpFailed} failed`);
  assert.ok(mlpOk > 0);
  assert.ok((fraudStatuses.get(200) ?? 0) > 0);
  const after = await infer(platform, 'fraud', fraudBody);
  assert.equal(after.status, 200);
});

test('a corrupted blob keeps the endpoint not ready, with the reason in kiln endpoints show, until it is uploaded again', async () => {
  const files = await readArtifact(`${fixtures}xgb-binary.json`);
  // Different bytes from the 'fraud' model's (trailing whitespace), so no blob is shared.
  const altered = { ...files[0]!, data: Buffer.concat([files[0]!.data, Buffer.from('\n')]) };
  const { createHash } = await import('node:crypto');
  const file = {
    ...altered,
    size: altered.data.length,
    sha256: createHash('sha256').update(altered.data).digest('hex'),
  };
  assert.equal((await register(platform.url, 'fragile', 'xgboost', [file])).status, 201);
  await writeFile(
    join(platform.home, 'artifacts', 'blobs', 'sha256', file.sha256.slice(0, 2), file.sha256),
    'garbage',
  );
  assert.equal(
    (await call(platform.url, 'PUT', '/api/v1/endpoints/fragile', { model: 'fragile' })).status,
    201,
  );
  const status = async (): Promise<EndpointBody> =>
    (await call(platform.url, 'GET', '/api/v1/endpoints/fragile')).body as EndpointBody;
  await waitUntil(
    'the replica to fail',
    async () => (await status()).status.reason?.includes('corrupt') === true,
  );
  // From then on every look names the corruption, whatever the phase of its restart cycle
  // (failed, waiting, starting again: the worker then finds the blob quarantined).
  for (let i = 0; i < 5; i++) {
    const seen = await status();
    assert.equal(seen.status.ready, false);
    assert.match(seen.status.reason ?? '', /corrupt on disk/, JSON.stringify(seen.status));
  }
  // Asynchronously: the API that the CLI calls is served by this very process.
  const { execFile } = await import('node:child_process');
  const { promisify } = await import('node:util');
  const { stdout: shown } = await promisify(execFile)(
    process.execPath,
    ['bin/kiln.js', 'endpoints', 'show', 'fragile', '--url', platform.url],
    { cwd: new URL('../../', import.meta.url).pathname, encoding: 'utf8' },
  );
  assert.match(shown, /reason: +.*corrupt on disk/);
  const result = await infer(platform, 'fragile', inferBody('input', expected.xgboost.inputs));
  assert.equal(result.status, 503);
  assert.equal(result.body.code, 'KILN_NO_READY_REPLICA');
  assert.equal(
    errorCode(await call(platform.url, 'DELETE', '/api/v1/models/fragile/versions/1')),
    'KILN_VERSION_IN_USE',
  );
  // The repair: the right bytes uploaded again. A corrupt blob waits minutes between starts
  // (it would fail the same way); the upload starts it again at once.
  const upload = await call(platform.url, 'PUT', `/api/v1/blobs/${file.sha256}`, file.data, {
    'content-type': 'application/octet-stream',
  });
  assert.equal(upload.status, 201, JSON.stringify(upload.body));
  await waitUntil(
    'fragile ready after the upload',
    async () => {
      const ready = await fetch(`${platform.gatewayUrl}/v2/models/fragile/ready`);
      await ready.arrayBuffer();
      return ready.status === 200;
    },
    45_000,
  );
  const repaired = await infer(platform, 'fragile', inferBody('input', expected.xgboost.inputs));
  assert.equal(repaired.status, 200, JSON.stringify(repaired.body));
  assert.equal((await call(platform.url, 'DELETE', '/api/v1/endpoints/fragile')).status, 200);
});
