// The C open-loop generator (bench/peers/openloop.c, built by bench/_open-loop.ts with the
// system's cc) against real local servers: it sends the planned requests, counts statuses,
// follows keep-alive and Connection: close servers alike, counts a reset as a failure without
// hanging, and measures latency from the intended send time (a request that waited for a free
// connection shows the wait).

import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { test } from 'node:test';

import { nativeGenerator, openLoopInChild } from '../../bench/_open-loop.ts';

async function withServer(
  handler: (req: IncomingMessage, res: ServerResponse, body: string) => void,
  run: (origin: string) => Promise<void>,
): Promise<void> {
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => handler(req, res, body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    await run(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

const path = '/v2/models/m/infer';
const bodies = ['{"ok":true}', '{"ok":false}'];

void test('the C generator builds with the system compiler', () => {
  const built = nativeGenerator();
  assert.ok(built.ok, built.ok ? '' : built.why);
});

void test('keep-alive server: every planned request is sent, statuses counted, non-2xx kept out of the latencies', async () => {
  const seen: string[] = [];
  await withServer(
    (_req, res, body) => {
      seen.push(body);
      const ok = body.includes('true');
      res.writeHead(ok ? 200 : 503, { 'content-type': 'application/json' });
      res.end(ok ? '{"outputs":[]}' : '{"error":"busy"}');
    },
    async (origin) => {
      const s = await openLoopInChild({ origin, path, bodies }, 200, 500, 8, 'c');
      assert.equal(s.generator, 'c');
      assert.equal(s.planned, 100);
      assert.equal(s.sent, 100);
      assert.equal(s.successes, 50);
      assert.equal(s.failed, 50);
      assert.equal(s.unanswered, 0);
      assert.deepEqual(s.statuses, { '200': 50, '503': 50 });
      assert.ok(s.p50Ms > 0 && s.p99Ms >= s.p50Ms, `p50 ${s.p50Ms} p99 ${s.p99Ms}`);
      assert.ok(s.p99FromSendMs <= s.p99Ms + 1e-9);
      // The planned requests plus one warm-up request per connection (not counted).
      assert.equal(seen.length, 100 + 8);
    },
  );
});

void test('a server that closes every connection (Connection: close) is followed, one connection a request', async () => {
  // Each connection is a socket object of its own (a port number could be reused at once).
  const sockets = new Set<Socket>();
  await withServer(
    (req, res) => {
      sockets.add(req.socket);
      res.writeHead(200, { 'content-type': 'application/json', connection: 'close' });
      res.end('{}');
    },
    async (origin) => {
      const s = await openLoopInChild({ origin, path, bodies: [bodies[0]!] }, 100, 500, 4, 'c');
      assert.equal(s.successes, 50);
      assert.equal(s.failed, 0);
      // 4 warm-up requests and 50 timed ones, each on a new connection.
      assert.equal(sockets.size, 54);
    },
  );
});

void test('a connection reset without an answer is a failure, and the run ends', async () => {
  await withServer(
    (req, res, body) => {
      if (body.includes('false')) {
        req.socket.destroy();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    },
    async (origin) => {
      const s = await openLoopInChild({ origin, path, bodies }, 100, 400, 4, 'c');
      assert.equal(s.planned, 40);
      assert.equal(s.successes, 20);
      assert.equal(s.failed, 20);
      assert.equal(s.statuses['error'], 20);
    },
  );
});

void test('requests that wait for a free connection count the wait from their intended send time', async () => {
  // One connection, a 30 ms answer, a request every 10 ms: the client queues, so latency
  // from the intended time grows while latency from the actual send stays ~30 ms.
  await withServer(
    (_req, res) => {
      setTimeout(() => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{}');
      }, 30);
    },
    async (origin) => {
      const s = await openLoopInChild({ origin, path, bodies: [bodies[0]!] }, 100, 200, 1, 'c');
      assert.equal(s.planned, 20);
      assert.equal(s.successes, 20);
      assert.ok(s.p99FromSendMs >= 29 && s.p99FromSendMs < s.p99Ms, JSON.stringify(s));
      // The last of 20 requests leaves after 19 answers of ≥ 30 ms each, 190 ms after its
      // intended time at most: its latency from the intended time exceeds 19 × 30 − 190.
      assert.ok(s.maxMs >= 19 * 30 - 190 + 30, `max ${s.maxMs}`);
      assert.ok(s.sentRatePerS < 100, `sent ${s.sentRatePerS}/s`);
    },
  );
});
