// Uploads and everything that can go wrong with them, over real HTTP and raw sockets.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  call,
  errorCode,
  readArtifact,
  register,
  sha256,
  testPlatform,
} from '../helpers/platform.ts';
import { tempDir } from '../helpers/temp-dir.ts';
import { KilnError } from '../../src/core/errors.ts';

const fixtures = new URL('../../fixtures/registry/', import.meta.url).pathname;

async function blobCount(home: string): Promise<number> {
  const base = join(home, 'artifacts', 'blobs', 'sha256');
  let n = 0;
  for (const prefix of await readdir(base)) n += (await readdir(join(base, prefix))).length;
  return n;
}

async function tmpCount(home: string): Promise<number> {
  return (await readdir(join(home, 'artifacts', 'tmp'))).length;
}

/** Sends raw bytes on a socket and returns what came back (or '' if the server hung up). */
function rawRequest(
  url: string,
  head: string,
  body: Buffer,
  options: { endAfterBody: boolean },
): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString()));
    socket.on('error', () => resolve(received));
    socket.on('close', () => resolve(received));
    socket.write(head);
    socket.write(body, () => {
      if (!options.endAfterBody) setImmediate(() => socket.destroy());
    });
  });
}

async function waitFor(predicate: () => Promise<boolean>): Promise<void> {
  // Up to 20 s (it was 200 polls, ~2 s): on a loaded machine the server cleans up late.
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    if (await predicate()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  assert.fail('condition never became true');
}

test('uploads are content-addressed: identical bytes are stored once; HEAD says what exists', async () => {
  const { url, home } = await testPlatform();
  const data = Buffer.from('same bytes');
  const digest = sha256(data);
  assert.equal((await call(url, 'HEAD', `/api/v1/blobs/${digest}`)).status, 404);
  const first = await call(url, 'PUT', `/api/v1/blobs/${digest}`, data, {
    'content-type': 'application/octet-stream',
  });
  assert.equal(first.status, 201);
  assert.deepEqual(first.body, { sha256: digest, size: data.length, created: true });
  const second = await call(url, 'PUT', `/api/v1/blobs/${digest}`, data, {
    'content-type': 'application/octet-stream',
  });
  assert.equal(second.status, 200);
  assert.equal((second.body as { created: boolean }).created, false);
  const head = await call(url, 'HEAD', `/api/v1/blobs/${digest}`);
  assert.equal(head.status, 200);
  assert.equal(head.headers.get('content-length'), String(data.length));
  assert.equal(await blobCount(home), 1);
  assert.equal(errorCode(await call(url, 'HEAD', '/api/v1/blobs/xyz')), undefined); // HEAD has no body
  assert.equal((await call(url, 'HEAD', '/api/v1/blobs/xyz')).status, 400);
  assert.equal(errorCode(await call(url, 'PUT', '/api/v1/blobs/xyz', data)), 'KILN_INVALID_DIGEST');
});

test('bytes that do not hash to the declared digest are refused and not kept', async () => {
  const { url, home } = await testPlatform();
  const response = await call(
    url,
    'PUT',
    `/api/v1/blobs/${sha256('other')}`,
    Buffer.from('these bytes'),
    {
      'content-type': 'application/octet-stream',
    },
  );
  assert.equal(response.status, 400);
  assert.equal(errorCode(response), 'KILN_DIGEST_MISMATCH');
  assert.equal(await blobCount(home), 0);
  assert.equal(await tmpCount(home), 0);
});

test('oversized uploads get 413, whether announced by Content-Length or streamed chunked', async () => {
  const { url, home } = await testPlatform({ maxUploadBytes: 1024 });
  const big = Buffer.alloc(4096, 1);
  const announced = await call(url, 'PUT', `/api/v1/blobs/${sha256(big)}`, big, {
    'content-type': 'application/octet-stream',
  });
  assert.equal(announced.status, 413);
  assert.equal(errorCode(announced), 'KILN_PAYLOAD_TOO_LARGE');

  const chunked = await fetch(`${url}/api/v1/blobs/${sha256(big)}`, {
    method: 'PUT',
    headers: { 'content-type': 'application/octet-stream' },
    body: new ReadableStream({
      start(controller) {
        for (let i = 0; i < 8; i++) controller.enqueue(big.subarray(i * 512, (i + 1) * 512));
        controller.close();
      },
    }),
    duplex: 'half',
  });
  assert.equal(chunked.status, 413);
  assert.equal(
    ((await chunked.json()) as { error: { code: string } }).error.code,
    'KILN_PAYLOAD_TOO_LARGE',
  );
  assert.equal(await blobCount(home), 0);
  await waitFor(async () => (await tmpCount(home)) === 0);
});

test('a truncated upload (client hangs up mid-body) leaves nothing, and nothing can be registered from it', async () => {
  const { url, home } = await testPlatform();
  const full = Buffer.alloc(200_000, 3);
  const digest = sha256(full);
  const head =
    `PUT /api/v1/blobs/${digest} HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n` +
    `Content-Length: ${full.length}\r\n\r\n`;
  await rawRequest(url, head, full.subarray(0, 50_000), { endAfterBody: false });
  await waitFor(async () => (await tmpCount(home)) === 0);
  assert.equal(await blobCount(home), 0);
  assert.equal((await call(url, 'HEAD', `/api/v1/blobs/${digest}`)).status, 404);

  await call(url, 'POST', '/api/v1/models', { name: 'm' });
  const response = await call(url, 'POST', '/api/v1/models/m/versions', {
    format: 'onnx',
    files: [{ path: 'model.onnx', size: full.length, sha256: digest }],
  });
  assert.equal(response.status, 400);
  assert.equal(errorCode(response), 'KILN_BLOB_MISSING');
  assert.equal(
    ((await call(url, 'GET', '/api/v1/models/m')).body as { versionCount: number }).versionCount,
    0,
  );
});

test('paths inside an uploaded folder may not escape it', async () => {
  const { url } = await testPlatform();
  const files = await readArtifact(`${fixtures}tiny-llm`);
  for (const bad of ['../config.json', '/etc/passwd', 'a/../../b', 'dir\\file', 'C:/x']) {
    const moved = files.map((f, i) => (i === 0 ? { ...f, path: bad } : f));
    const response = await register(url, 'llm', 'hf-llm', moved);
    assert.equal(response.status, 400, bad);
    assert.equal(errorCode(response), 'KILN_INVALID_PATH', bad);
  }
  const duplicated = [...files, files[0]!];
  assert.equal(errorCode(await register(url, 'llm', 'hf-llm', duplicated)), 'KILN_INVALID_PATH');
});

test('a manifest whose sizes disagree with the stored blobs is refused', async () => {
  const { url } = await testPlatform();
  const [file] = await readArtifact(`${fixtures}mlp.onnx`);
  const response = await register(url, 'm', 'onnx', [{ ...file!, size: file!.size + 1 }]);
  assert.equal(errorCode(response), 'KILN_SIZE_MISMATCH');
});

test('malformed requests get structured 4xx errors', async () => {
  const { url } = await testPlatform();
  await call(url, 'POST', '/api/v1/models', { name: 'm' });
  const malformed = await call(url, 'POST', '/api/v1/models', '{"name": ', {
    'content-type': 'application/json',
  });
  assert.equal(malformed.status, 400);
  assert.equal(errorCode(malformed), 'KILN_INVALID_JSON');
  assert.match((malformed.body as { error: { message: string } }).error.message, /not valid JSON/);
  const empty = await call(url, 'POST', '/api/v1/models', '', {
    'content-type': 'application/json',
  });
  assert.equal(errorCode(empty), 'KILN_INVALID_JSON');
  const proto = await call(url, 'POST', '/api/v1/models', '{"name":"x","__proto__":{"a":1}}', {
    'content-type': 'application/json',
  });
  assert.equal(errorCode(proto), 'KILN_INVALID_JSON');
  const unknownField = await call(url, 'POST', '/api/v1/models', { name: 'x', colour: 'red' });
  assert.equal(errorCode(unknownField), 'KILN_VALIDATION_FAILED');
  assert.match((unknownField.body as { error: { message: string } }).error.message, /colour/);
  const wrongType = await call(url, 'POST', '/api/v1/models/m/versions', {
    format: 'onnx',
    files: 'model.onnx',
  });
  assert.equal(errorCode(wrongType), 'KILN_VALIDATION_FAILED');
  const badFormat = await call(url, 'POST', '/api/v1/models/m/versions', {
    format: 'pickle',
    files: [],
  });
  assert.equal(errorCode(badFormat), 'KILN_VALIDATION_FAILED');
  const noFiles = await call(url, 'POST', '/api/v1/models/m/versions', {
    format: 'onnx',
    files: [],
  });
  assert.equal(errorCode(noFiles), 'KILN_INVALID_ARTIFACT');
  const text = await call(url, 'POST', '/api/v1/models', 'name=m', {
    'content-type': 'text/plain',
  });
  assert.equal(text.status, 415);
  assert.equal(errorCode(text), 'KILN_UNSUPPORTED_MEDIA_TYPE');
  const route = await call(url, 'GET', '/api/v1/nothing-here');
  assert.equal(route.status, 404);
  assert.equal(errorCode(route), 'KILN_ROUTE_NOT_FOUND');
  const huge = await call(
    url,
    'POST',
    '/api/v1/models',
    JSON.stringify({ name: 'x', description: 'y'.repeat(9 * 1024 * 1024) }),
  );
  assert.equal(huge.status, 413);
  assert.equal(errorCode(huge), 'KILN_PAYLOAD_TOO_LARGE');
});

test('a blob corrupted on disk after registration is refused at load and at verify', async () => {
  const platform = await testPlatform();
  const { url, home } = platform;
  const files = await readArtifact(`${fixtures}tiny-llm`);
  assert.equal((await register(url, 'llm', 'hf-llm', files)).status, 201);
  const ok = await call(url, 'POST', '/api/v1/models/llm/versions/1/verify');
  assert.deepEqual(ok.body, {
    ok: true,
    files: files.length,
    bytes: files.reduce((s, f) => s + f.size, 0),
    signature: 'unsigned',
  });
  const config = files.find((f) => f.path === 'config.json')!;
  await writeFile(
    join(home, 'artifacts', 'blobs', 'sha256', config.sha256.slice(0, 2), config.sha256),
    '{"tampered": true}',
  );

  const verify = await call(url, 'POST', '/api/v1/models/llm/versions/1/verify');
  assert.equal(verify.status, 500);
  assert.equal(errorCode(verify), 'KILN_ARTIFACT_CORRUPT');
  assert.match(
    (verify.body as { error: { message: string } }).error.message,
    /config\.json is corrupt/,
  );
  // Set aside once found: the server reports the blob missing (a load says it was quarantined
  // as corrupt), and uploading the right bytes again (what a client does for a blob HEAD says
  // is absent) repairs the version.
  assert.equal((await call(url, 'HEAD', `/api/v1/blobs/${config.sha256}`)).status, 404);
  const dest = join(await tempDir(), 'load');
  await assert.rejects(platform.registry.loadVersion('llm', 1, dest), (error: unknown) => {
    assert.ok(error instanceof KilnError);
    assert.equal(error.code, 'KILN_ARTIFACT_QUARANTINED');
    return true;
  });
  const upload = await call(url, 'PUT', `/api/v1/blobs/${config.sha256}`, config.data, {
    'content-type': 'application/octet-stream',
  });
  assert.equal(upload.status, 201);
  assert.equal((await call(url, 'POST', '/api/v1/models/llm/versions/1/verify')).status, 200);
  await platform.registry.loadVersion('llm', 1, join(await tempDir(), 'load'));
});

test('garbage collection removes only blobs no live version references', async () => {
  const { url, home } = await testPlatform();
  const onnx = await readArtifact(`${fixtures}mlp.onnx`);
  const xgb = await readArtifact(`${fixtures}xgb-binary.json`);
  await register(url, 'a', 'onnx', onnx);
  await register(url, 'b', 'xgboost', xgb);
  const orphan = Buffer.from('uploaded, never registered');
  await call(url, 'PUT', `/api/v1/blobs/${sha256(orphan)}`, orphan, {
    'content-type': 'application/octet-stream',
  });
  assert.equal(await blobCount(home), 3);

  const graced = (await call(url, 'POST', '/api/v1/gc', {})).body as { removedBlobs: number };
  assert.equal(graced.removedBlobs, 0, 'fresh uploads are kept during the grace period');
  await call(url, 'DELETE', '/api/v1/models/b/versions/1');
  const dry = (await call(url, 'POST', '/api/v1/gc', { graceSeconds: 0, dryRun: true })).body as {
    removedBlobs: number;
  };
  assert.equal(dry.removedBlobs, 2);
  assert.equal(await blobCount(home), 3);
  const real = (await call(url, 'POST', '/api/v1/gc', { graceSeconds: 0 })).body as {
    removedBlobs: number;
    keptBlobs: number;
  };
  assert.deepEqual([real.removedBlobs, real.keptBlobs], [2, 1]);
  assert.equal((await call(url, 'POST', '/api/v1/models/a/versions/1/verify')).status, 200);
});
