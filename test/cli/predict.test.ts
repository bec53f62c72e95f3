// `kiln predict`: the pure parts (rendering, lenient JSON, v2 error mapping), then the real
// CLI as a process against a fake gateway and a fake control plane (fastify on loopback): the
// request bytes arrive untouched (NaN tokens included), the key travels as a Bearer token,
// the gateway URL comes from --gateway, KILN_GATEWAY_URL or the platform's health.

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify';
import { CliError } from '../../src/cli/errors.ts';
import {
  gatewayError,
  inferPath,
  parseLenientJson,
  postInfer,
} from '../../src/cli/gateway-client.ts';
import { dataPreview, predictText } from '../../src/cli/commands/predict.ts';
import { bin, Cli, freePort, root } from './cli-harness.ts';
import { tempDir } from '../helpers/temp-dir.ts';

void test('data previews: first ten values, six significant digits, a count beyond', () => {
  assert.equal(
    dataPreview({ data: [0.2614428400993347, 0.15362529456615448] }),
    '[0.261443, 0.153625]',
  );
  assert.equal(
    dataPreview({ data: Array.from({ length: 12 }, (_, i) => i) }),
    '[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, …] (12 values)',
  );
  assert.equal(
    dataPreview({
      data: [
        [1, 2],
        [3, 4],
      ],
    }),
    '[1, 2, 3, 4]',
  );
  assert.equal(dataPreview({ data: [Number.NaN, true, 'cat', null] }), '[NaN, true, "cat", null]');
  assert.equal(
    dataPreview({ data: ['a very long string that goes on and on'] }),
    '["a very long string th…"]',
  );
});

void test('predict output: model, version and request id, then one row per output', () => {
  const text = predictText(
    {
      model_name: 'fraud',
      model_version: '3',
      outputs: [
        { name: 'probabilities', datatype: 'FP32', shape: [2, 1], data: [0.26144284, 0.1536253] },
        { name: 'label', datatype: 'INT64', shape: [2], data: [0, 0] },
      ],
    },
    'req-123',
  );
  assert.equal(
    text,
    [
      'model:         fraud',
      'model version: 3',
      'request id:    req-123',
      '',
      'NAME           DATATYPE  SHAPE   DATA',
      'probabilities  FP32      [2, 1]  [0.261443, 0.153625]',
      'label          INT64     [2]     [0, 0]',
      '',
    ].join('\n'),
  );
  assert.match(predictText({ id: 'body-id', outputs: [] }, null), /^request id: +body-id$/m);
});

void test('lenient JSON reads NaN and ±Infinity tokens, never inside strings', () => {
  assert.deepEqual(parseLenientJson('{"a": [1, 2]}'), { a: [1, 2] });
  const parsed = parseLenientJson(
    '{"data": [NaN, Infinity, -Infinity, 1], "s": "NaN \\" Infinity"}',
  );
  assert.deepEqual(parsed, {
    data: [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 1],
    s: 'NaN " Infinity',
  });
  assert.equal(parseLenientJson('<html>bad gateway</html>'), undefined);
  assert.equal(parseLenientJson(''), undefined);
  assert.equal(parseLenientJson('{"a": NaNa}'), undefined);
});

void test('gateway errors: the v2 shape {error: string, code} keeps its code', () => {
  const context = { path: '/v2/models/x/infer', endpoint: 'x', hasKey: false };
  const notFound = gatewayError(
    404,
    { error: 'endpoint x does not exist', code: 'KILN_ENDPOINT_NOT_FOUND' },
    context,
  );
  assert.deepEqual(
    [notFound.code, notFound.message, notFound.status, notFound.exitCode],
    ['KILN_ENDPOINT_NOT_FOUND', 'endpoint x does not exist', 404, 1],
  );
  assert.match(notFound.hint ?? '', /kiln endpoints list/);

  // The control plane's shape is understood too, hint included.
  const apiShape = gatewayError(
    400,
    { error: { code: 'KILN_INVALID_INFER_REQUEST', message: 'bad', hint: 'fix it' } },
    context,
  );
  assert.deepEqual([apiShape.code, apiShape.hint], ['KILN_INVALID_INFER_REQUEST', 'fix it']);

  const unauthenticated = gatewayError(
    401,
    { error: 'missing or unknown API key', code: 'KILN_UNAUTHENTICATED' },
    context,
  );
  assert.match(unauthenticated.hint ?? '', /--key or KILN_API_KEY.*kiln keys api create/);
  const revoked = gatewayError(
    401,
    { error: 'x', code: 'KILN_UNAUTHENTICATED' },
    {
      ...context,
      hasKey: true,
    },
  );
  assert.match(revoked.hint ?? '', /unknown or revoked/);
  const forbidden = gatewayError(403, { error: 'no', code: 'KILN_FORBIDDEN' }, context);
  assert.match(forbidden.hint ?? '', /kiln keys api create NAME --endpoint x/);

  const garbage = gatewayError(502, undefined, context);
  assert.deepEqual([garbage.code, garbage.status], ['KILN_BAD_RESPONSE', 502]);
  assert.equal(garbage.message, 'POST /v2/models/x/infer failed with HTTP 502');
});

void test('infer paths are encoded, with an optional version', () => {
  assert.equal(inferPath('fraud'), '/v2/models/fraud/infer');
  assert.equal(inferPath('fraud', 3), '/v2/models/fraud/versions/3/infer');
  assert.equal(inferPath('a b'), '/v2/models/a%20b/infer');
});

// --- against fake servers ---------------------------------------------------------------

interface Received {
  url: string;
  body: string;
  contentType: string | undefined;
  authorization: string | undefined;
}
const received: Received[] = [];
const okResponse = {
  model_name: 'fraud',
  model_version: '3',
  outputs: [{ name: 'probabilities', datatype: 'FP32', shape: [2], data: [0.25, 0.75] }],
};

const gateway = Fastify();
gateway.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) =>
  done(null, body),
);
gateway.post('/v2/models/:name/infer', (request, reply) => answer(request, reply));
gateway.post('/v2/models/:name/versions/:version/infer', (request, reply) =>
  answer(request, reply),
);

function answer(request: FastifyRequest, reply: FastifyReply): unknown {
  const header = (name: string): string | undefined => {
    const value = request.headers[name];
    return Array.isArray(value) ? value[0] : value;
  };
  received.push({
    url: request.url,
    body: String(request.body),
    contentType: header('content-type'),
    authorization: header('authorization'),
  });
  const { name } = request.params as { name: string };
  const version = (request.params as { version?: string }).version;
  if (name === 'locked' && header('authorization') !== 'Bearer sesame') {
    return reply
      .code(401)
      .header('x-request-id', 'r-401')
      .send({ error: 'missing or unknown API key', code: 'KILN_UNAUTHENTICATED' });
  }
  if (name === 'nope') {
    return reply
      .code(404)
      .header('x-request-id', 'r-404')
      .send({ error: 'endpoint nope does not exist', code: 'KILN_ENDPOINT_NOT_FOUND' });
  }
  if (version !== undefined && version !== '3') {
    return reply
      .code(404)
      .header('x-request-id', 'r-v')
      .send({
        error: `endpoint ${name} serves version 3, not version ${version}`,
        code: 'KILN_VERSION_NOT_SERVED',
      });
  }
  if (name === 'nan') {
    return reply
      .code(200)
      .header('x-request-id', 'r-nan')
      .header('content-type', 'application/json')
      .send(
        '{"model_name":"nan","outputs":[{"name":"y","datatype":"FP32","shape":[2],"data":[NaN,1.5]}]}',
      );
  }
  return reply
    .code(200)
    .header('x-request-id', 'r-200')
    .send({ ...okResponse, model_name: name });
}

const control = Fastify();
let reportedGateway = '';
control.get('/api/v1/health', () => ({
  status: 'ok',
  version: '0.1.0',
  store: 'sqlite',
  home: '/tmp/x',
  ...(reportedGateway === '' ? {} : { gatewayUrl: reportedGateway }),
}));

await gateway.listen({ host: '127.0.0.1', port: 0 });
await control.listen({ host: '127.0.0.1', port: 0 });
const gatewayUrl = `http://127.0.0.1:${portOf(gateway.server.address())}`;
const controlUrl = `http://127.0.0.1:${portOf(control.server.address())}`;
reportedGateway = gatewayUrl;
after(async () => {
  await gateway.close();
  await control.close();
});

function portOf(address: unknown): number {
  return typeof address === 'object' && address !== null ? (address as { port: number }).port : 0;
}

const dir = await tempDir('kiln-predict-');
// Not valid JSON for JSON.parse (NaN), exactly what a v2 client may send: must travel as is.
const requestText =
  '{"inputs": [{"name": "input", "datatype": "FP32", "shape": [2, 5],\n' +
  '  "data": [0.1, NaN, 0.3, 0.4, 0.5, 1, 2, 3, 4, 5]}]}\n';
const requestFile = join(dir, 'request.json');
await writeFile(requestFile, requestText);
const cli = new Cli(controlUrl, dir);

void test('postInfer sends the bytes untouched and returns the request id', async () => {
  received.length = 0;
  const reply = await postInfer({
    gatewayUrl,
    endpoint: 'fraud',
    body: Buffer.from(requestText),
    apiKey: 'sesame',
  });
  assert.equal(reply.requestId, 'r-200');
  assert.deepEqual(reply.response, okResponse);
  assert.deepEqual(received, [
    {
      url: '/v2/models/fraud/infer',
      body: requestText,
      contentType: 'application/json',
      authorization: 'Bearer sesame',
    },
  ]);
  await assert.rejects(
    postInfer({ gatewayUrl, endpoint: 'nope', body: Buffer.from('{}') }),
    (error: unknown) =>
      error instanceof CliError && error.code === 'KILN_ENDPOINT_NOT_FOUND' && error.status === 404,
  );
  const port = await freePort();
  await assert.rejects(
    postInfer({ gatewayUrl: `http://127.0.0.1:${port}`, endpoint: 'x', body: Buffer.from('{}') }),
    (error: unknown) =>
      error instanceof CliError &&
      error.code === 'KILN_UNREACHABLE' &&
      error.message ===
        `cannot reach the Kiln gateway at http://127.0.0.1:${port}: connection refused`,
  );
});

void test('kiln predict: gateway from the platform, table output, --json body', async () => {
  received.length = 0;
  const text = await cli.ok(['predict', 'fraud', '--data', requestFile]);
  assert.match(text, /^model version: 3$/m);
  assert.match(text, /^request id:\s+r-200$/m);
  assert.match(text, /^probabilities\s+FP32\s+\[2\]\s+\[0\.25, 0\.75\]$/m);
  assert.equal(received[0]?.body, requestText);
  assert.equal(received[0]?.authorization, undefined);

  const json = await cli.json<typeof okResponse>(['predict', 'fraud', '--data', requestFile]);
  assert.deepEqual(json, okResponse);

  // A body with NaN tokens is printed as received under --json, and as NaN in the table.
  const raw = await cli.ok(['predict', 'nan', '--data', requestFile, '--json']);
  assert.match(raw, /\[NaN,1\.5\]/);
  assert.match(await cli.ok(['predict', 'nan', '--data', requestFile]), /\[NaN, 1\.5\]$/m);
});

void test('kiln predict: --gateway, KILN_GATEWAY_URL, --version, --key and KILN_API_KEY', async () => {
  received.length = 0;
  const unreachable = `http://127.0.0.1:${await freePort()}`;
  // --gateway and KILN_GATEWAY_URL win over the platform (which is not even asked).
  await cli.ok([
    '--url',
    unreachable,
    'predict',
    'locked',
    '--data',
    requestFile,
    '--gateway',
    gatewayUrl,
    '--key',
    'sesame',
  ]);
  const viaEnv = await cli.run(['predict', 'locked', '--data', requestFile, '--url', unreachable], {
    KILN_GATEWAY_URL: gatewayUrl,
    KILN_API_KEY: 'sesame',
  });
  assert.equal(viaEnv.code, 0, viaEnv.stderr);
  assert.deepEqual(
    received.map((r) => r.authorization),
    ['Bearer sesame', 'Bearer sesame'],
  );

  // --version is predict's own option (not the program's), in the URL.
  await cli.ok(['predict', 'fraud', '--data', requestFile, '--version', '3']);
  assert.equal(received.at(-1)?.url, '/v2/models/fraud/versions/3/infer');
  const wrong = await cli.fails(['predict', 'fraud', '--data', requestFile, '--version', '2'], 1);
  assert.match(
    wrong,
    /^error: endpoint fraud serves version 3, not version 2 \(KILN_VERSION_NOT_SERVED\)$/m,
  );
});

void test('kiln predict: gateway errors are one line with their code, and a hint', async () => {
  const missing = await cli.fails(['predict', 'nope', '--data', requestFile], 1);
  assert.equal(
    missing,
    'error: endpoint nope does not exist (KILN_ENDPOINT_NOT_FOUND)\n' +
      'hint: list endpoints with `kiln endpoints list`, or create one with `kiln deploy`\n',
  );
  const locked = await cli.fails(['predict', 'locked', '--data', requestFile], 1);
  assert.match(locked, /^error: missing or unknown API key \(KILN_UNAUTHENTICATED\)$/m);
  assert.match(locked, /^hint: .*--key.*kiln keys api create/m);
  const badKey = await cli.fails(['predict', 'locked', '--data', requestFile, '--key', 'x'], 1);
  assert.match(badKey, /unknown or revoked/);
});

void test('kiln predict: request from stdin with -', async () => {
  received.length = 0;
  const run = await new Promise<{ code: number | null; stdout: string; stderr: string }>(
    (resolve, reject) => {
      const child = spawn(process.execPath, [bin, 'predict', 'fraud', '--data', '-', '--json'], {
        cwd: root,
        env: { ...process.env, KILN_URL: controlUrl, KILN_GATEWAY_URL: '' },
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
      child.on('error', reject);
      child.on('close', (code) => resolve({ code, stdout, stderr }));
      child.stdin.end(requestText);
    },
  );
  assert.equal(run.code, 0, run.stderr);
  assert.deepEqual(JSON.parse(run.stdout), okResponse);
  assert.equal(received[0]?.body, requestText);
});

void test('kiln predict: local and usage failures', async () => {
  assert.match(
    await cli.fails(['predict', 'fraud', '--data', join(dir, 'missing.json')], 1),
    /^error: cannot read request .*missing\.json: no such file or directory \(KILN_LOCAL_FILE\)$/m,
  );
  const empty = join(dir, 'empty.json');
  await writeFile(empty, '');
  assert.match(await cli.fails(['predict', 'fraud', '--data', empty], 1), /is empty/);
  await cli.fails(['predict', 'fraud'], 2); // --data is required
  await cli.fails(['predict', 'fraud', '--data', requestFile, '--version', 'two'], 2);
  await cli.fails(['predict', 'fraud', '--data', requestFile, '--gateway', 'ftp://x'], 2);
  // A platform without a gateway URL in its health.
  reportedGateway = '';
  try {
    assert.match(
      await cli.fails(['predict', 'fraud', '--data', requestFile], 1),
      /does not report a gateway URL \(KILN_BAD_RESPONSE\)\nhint: pass --gateway/,
    );
  } finally {
    reportedGateway = gatewayUrl;
  }
});

void test('global options still work after the command name', async () => {
  const health = await cli.run(['health', '--url', controlUrl, '--json'], { KILN_URL: '' });
  assert.equal(health.code, 0, health.stderr);
  assert.equal((JSON.parse(health.stdout) as { gatewayUrl: string }).gatewayUrl, gatewayUrl);
  const version = await cli.run(['--version']);
  assert.match(version.stdout, /^\d+\.\d+\.\d+\n$/);
});
