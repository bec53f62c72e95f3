// The HTTP client against a small fake fastify server: paging, error mapping, streamed PUTs.

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import Fastify from 'fastify';
import { CliError } from '../../src/cli/errors.ts';
import { KilnClient, apiPath } from '../../src/cli/http-client.ts';

const names = Array.from({ length: 7 }, (_, i) => `m${i}`);
const received: Array<{ length: string | undefined; bytes: number }> = [];

const app = Fastify();
app.addContentTypeParser('application/octet-stream', (_request, payload, done) => {
  const chunks: Buffer[] = [];
  payload.on('data', (chunk: Buffer) => chunks.push(chunk));
  payload.on('end', () => done(null, Buffer.concat(chunks)));
});
app.get('/api/v1/models', (request) => {
  const query = request.query as { limit?: string; pageToken?: string };
  const start = Number(query.pageToken ?? 0);
  const limit = Math.min(Number(query.limit ?? 50), 3); // a server with small pages
  const items = names.slice(start, start + limit).map((name) => ({ name }));
  const next = start + limit < names.length ? String(start + limit) : null;
  return { items, nextPageToken: next };
});
app.get('/api/v1/models/:name', (_request, reply) =>
  reply.code(404).send({
    error: { code: 'KILN_MODEL_NOT_FOUND', message: 'model x does not exist', hint: 'list models' },
  }),
);
app.get('/api/v1/broken', (_request, reply) =>
  reply.code(502).type('text/html').send('<html>bad gateway</html>'),
);
app.head('/api/v1/blobs/:sha', (request, reply) =>
  reply.code((request.params as { sha: string }).sha === 'a' ? 200 : 404).send(),
);
app.put('/api/v1/blobs/:sha', (request, reply) => {
  const body = request.body as Buffer;
  received.push({ length: request.headers['content-length'], bytes: body.length });
  return reply
    .code(201)
    .send({ sha256: (request.params as { sha: string }).sha, size: body.length, created: true });
});
app.post('/api/v1/echo', (request) => ({ got: request.body }));
await app.listen({ host: '127.0.0.1', port: 0 });
const address = app.server.address();
const url = `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`;
const client = new KilnClient(url);
after(async () => {
  await client.close();
  await app.close();
});

void test('listAll follows nextPageToken to the end', async () => {
  const page = await client.listAll<{ name: string }>(apiPath('models'));
  assert.deepEqual(
    page.items.map((m) => m.name),
    names,
  );
  assert.equal(page.nextPageToken, null);
});

void test('listAll stops at --limit', async () => {
  const page = await client.listAll<{ name: string }>(apiPath('models'), {}, 4);
  assert.deepEqual(
    page.items.map((m) => m.name),
    ['m0', 'm1', 'm2', 'm3'],
  );
});

void test("API errors keep the platform's code, message and hint", async () => {
  await assert.rejects(client.get(apiPath('models', 'x')), (error: unknown) => {
    assert.ok(error instanceof CliError);
    assert.equal(error.code, 'KILN_MODEL_NOT_FOUND');
    assert.equal(error.message, 'model x does not exist');
    assert.equal(error.hint, 'list models');
    assert.equal(error.status, 404);
    assert.equal(error.exitCode, 1);
    return true;
  });
});

void test('a non-API error response is reported with its status', async () => {
  await assert.rejects(client.get('/api/v1/broken'), (error: unknown) => {
    assert.ok(error instanceof CliError);
    assert.equal(error.code, 'KILN_BAD_RESPONSE');
    assert.match(error.message, /HTTP 502/);
    return true;
  });
});

void test('HEAD says whether a blob exists', async () => {
  assert.equal(await client.exists(apiPath('blobs', 'a')), true);
  assert.equal(await client.exists(apiPath('blobs', 'b')), false);
});

void test('PUT streams the body with its Content-Length', async () => {
  const chunks = [Buffer.alloc(1000, 1), Buffer.alloc(24, 2)];
  const result = await client.putStream<{ size: number }>(apiPath('blobs', 'c'), chunks, 1024);
  assert.equal(result.size, 1024);
  assert.deepEqual(received.at(-1), { length: '1024', bytes: 1024 });
});

void test('JSON bodies round-trip', async () => {
  assert.deepEqual(await client.post(apiPath('echo'), { a: [1, 'x'] }), { got: { a: [1, 'x'] } });
});

void test('a closed port is "cannot reach Kiln … connection refused" with a hint', async () => {
  const port = await freePort();
  const offline = new KilnClient(`http://127.0.0.1:${port}`);
  try {
    await assert.rejects(offline.get('/api/v1/health'), (error: unknown) => {
      assert.ok(error instanceof CliError);
      assert.equal(error.code, 'KILN_UNREACHABLE');
      assert.equal(
        error.message,
        `cannot reach Kiln at http://127.0.0.1:${port}: connection refused`,
      );
      assert.match(error.hint ?? '', /kiln up/);
      return true;
    });
  } finally {
    await offline.close();
  }
});

/** A port nothing listens on: bind one, note it, release it. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return typeof address === 'object' && address !== null ? address.port : 1;
}
