// Clients that leave, dawdle or stop reading cannot hold an endpoint's concurrency slots,
// and a request in flight across a snapshot change goes to the replicas of the new one.
// Waits are on what the test can observe (metrics, sockets, replies), never on time alone.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import {
  endpointRoute,
  fakeWorker,
  infer,
  replicaRoute,
  snapshot,
  testGateway,
  validRequest,
} from './gateway-harness.ts';
import { until } from '../helpers/until.ts';

const body = JSON.stringify(validRequest);
const head = (length: number): string =>
  `POST /v2/models/fraud/infer HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${length}\r\n\r\n`;

async function inflight(gateway: { metricsText(): string | Promise<string> }): Promise<number> {
  const text = await gateway.metricsText();
  const match = /kiln_gateway_inflight_requests\{[^}]*endpoint="fraud"[^}]*\} (\d+)/.exec(text);
  return Number(match?.[1] ?? 0);
}

async function open(url: string): Promise<Socket> {
  const { port, hostname } = new URL(url);
  const socket = connect(Number(port), hostname);
  socket.on('error', () => undefined);
  await new Promise((resolve) => socket.once('connect', resolve));
  return socket;
}

test(
  'a pipelined request whose client leaves mid-body gives its slot back',
  { timeout: 30_000 },
  async () => {
    const worker = await fakeWorker('hold');
    const gateway = await testGateway(
      snapshot(1, [endpointRoute({ maxConcurrency: 2, replicas: [replicaRoute(worker, 'r1')] })]),
    );
    const socket = await open(gateway.url);
    // A whole request, then a second one on the same connection with a tenth of its body.
    socket.write(head(body.length) + body + head(body.length) + body.slice(0, 10));
    await worker.waitForRequests(1);
    await until(async () => (await inflight(gateway)) === 2, 'both requests in flight');
    socket.destroy();
    worker.release();
    await until(async () => (await inflight(gateway)) === 0, 'every slot given back');
    // Both slots are free: two requests at once are let in.
    worker.behavior = 'ok';
    const replies = await Promise.all([infer(gateway.url), infer(gateway.url)]);
    assert.deepEqual(
      replies.map((r) => r.status),
      [200, 200],
    );
  },
);

test(
  'a body that does not arrive in time is a 408 and frees the slot',
  { timeout: 30_000 },
  async () => {
    const worker = await fakeWorker('ok');
    const gateway = await testGateway(
      snapshot(1, [endpointRoute({ maxConcurrency: 1, replicas: [replicaRoute(worker, 'r1')] })]),
      { clientTimeoutMs: 300 },
    );
    const socket = await open(gateway.url);
    let answer = '';
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString()));
    const closed = new Promise((resolve) => socket.once('close', resolve));
    socket.write(head(body.length) + body.slice(0, 10)); // and nothing more
    await closed;
    assert.match(answer, /^HTTP\/1\.1 408/);
    await until(async () => (await inflight(gateway)) === 0, 'the slot given back');
    assert.equal((await infer(gateway.url)).status, 200);
    assert.equal(worker.received.length, 1);
  },
);

test(
  'a client that stops reading a streamed answer is cut after the client timeout',
  { timeout: 30_000 },
  async () => {
    // A worker streaming 200 MB with no length: the answer cannot be held, it streams.
    const streaming = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        if (req.headers['x-small'] === '1') {
          res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
          return;
        }
        res.writeHead(200, { 'content-type': 'application/json' });
        const chunk = Buffer.alloc(1 << 20, 0x20);
        let sent = 0;
        const pump = (): void => {
          while (sent < 200) {
            sent += 1;
            if (!res.write(chunk)) {
              res.once('drain', pump);
              return;
            }
          }
          res.end('{}');
        };
        pump();
      });
    });
    await new Promise<void>((resolve) => streaming.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(streaming.address() as AddressInfo).port}`;
    const gateway = await testGateway(
      snapshot(1, [endpointRoute({ maxConcurrency: 1, replicas: [replicaRoute({ url }, 'r1')] })]),
      { clientTimeoutMs: 300 },
    );
    try {
      const socket = await open(gateway.url);
      let received = 0;
      socket.on('data', (chunk: Buffer) => {
        received += chunk.length;
        socket.pause(); // reads the first bytes, then nothing
      });
      const closed = new Promise((resolve) => socket.once('close', resolve));
      socket.write(head(body.length) + body);
      await until(() => received > 0, 'the first bytes');
      await until(async () => (await inflight(gateway)) === 0, 'the slot given back');
      // Cut: what was already on its way is all that comes, then the connection ends.
      socket.removeAllListeners('data');
      socket.on('data', (chunk: Buffer) => (received += chunk.length));
      socket.resume();
      await closed;
      assert.ok(received < 200 * (1 << 20), `${received} bytes read before the cut`);
      const next = await infer(gateway.url, validRequest, { 'x-small': '1' });
      assert.notEqual(next.status, 429);
    } finally {
      streaming.closeAllConnections();
      streaming.close();
    }
  },
);

test(
  'a request still arriving when its replica is replaced goes to the new replica',
  { timeout: 30_000 },
  async () => {
    for (const channel of [false, true]) {
      const old = await fakeWorker('ok', undefined, 200, { channel });
      const replacement = await fakeWorker('ok', undefined, 200, { channel });
      const gateway = await testGateway(
        snapshot(1, [endpointRoute({ replicas: [replicaRoute(old, 'r1')] })]),
      );
      const socket = await open(gateway.url);
      let answer = '';
      socket.on('data', (chunk: Buffer) => (answer += chunk.toString()));
      socket.write(head(body.length) + body.slice(0, 10));
      // The gateway holds the request (it is in flight) when a rollout replaces r1 with r2.
      await until(async () => (await inflight(gateway)) === 1, 'the request in flight');
      gateway.setSnapshot(
        snapshot(2, [endpointRoute({ replicas: [replicaRoute(replacement, 'r2')] })]),
      );
      socket.write(body.slice(10));
      await until(() => /\r\n\r\n/.test(answer), 'the answer');
      assert.match(answer, /^HTTP\/1\.1 200/, channel ? 'over the channel' : 'over HTTP');
      assert.equal(old.received.length, 0);
      assert.equal(replacement.received.length, 1);
      socket.destroy();
    }
  },
);
