// Both ends of the worker channel for real: the gateway's ChannelClient talking to a worker
// server (over a stub runtime the test holds and releases). Waits are on state the test can
// see (executions, queue depth, replies), never on time.

import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { ChannelClient, type ChannelRequester } from '../../src/gateway/channel-client.ts';
import {
  channelPath,
  channelProtocol,
  encodeFrame,
  FrameReader,
  frameKind,
  type Frame,
} from '../../src/protocol/channel/frames.ts';
import { encodeTensorRequest } from '../../src/protocol/channel/tensor-frames.ts';
import { parseInferRequest } from '../../src/protocol/v2/decode-request.ts';
import { closeChannels } from '../../src/worker/worker-channel.ts';
import { startStub, type Harness } from './stub-worker.ts';
import { until } from '../helpers/until.ts';

interface Outcome {
  status?: number;
  retryAfter?: string | null;
  body?: { outputs?: { data: number[] }[]; code?: string; model_version?: string };
  errorCode?: string;
}

class Collector implements ChannelRequester {
  readonly outcome: Outcome = {};
  private resolve: (() => void) | null = null;
  readonly settled = new Promise<void>((resolve) => (this.resolve = resolve));
  onChannelReply(status: number, retryAfter: string | null, body: Buffer): void {
    Object.assign(this.outcome, {
      status,
      retryAfter,
      body: JSON.parse(body.toString()) as Outcome['body'],
    });
    this.resolve?.();
  }
  onChannelError(error: Error): void {
    this.outcome.errorCode = (error as { code?: string }).code ?? 'none';
    this.resolve?.();
  }
}

function body(rows: number[][]): Buffer {
  const data = rows.flat();
  const width = rows[0]?.length ?? 0;
  return Buffer.from(
    JSON.stringify({
      inputs: [{ name: 'x', datatype: 'FP32', shape: [rows.length, width], data }],
    }),
  );
}

async function setup(
  t: TestContext,
  held: number,
): Promise<{ harness: Harness; client: ChannelClient }> {
  const harness = await startStub({ maxBatchSize: 8, maxDelayMicros: 0, maxQueue: 16 }, held);
  const client = new ChannelClient(harness.url, channelPath, 30_000, () => performance.now());
  t.after(async () => {
    client.destroy();
    await harness.close();
  });
  return { harness, client };
}

test('infer frames run like HTTP requests and their replies come back by id', async (t) => {
  const { harness, client } = await setup(t, 1);
  const first = new Collector();
  client.send(first, body([[1, 2]]), undefined, undefined);
  await until(() => harness.runtime.executions.length === 1, 'the first execution');
  // Queued behind the held execution, these two form one batch.
  const second = new Collector();
  const third = new Collector();
  client.send(second, body([[3, 4]]), undefined, undefined);
  client.send(third, body([[5, 6]]), undefined, 'high');
  await until(() => harness.state.batcher?.depth === 2, 'two queued');
  harness.runtime.release();
  await Promise.all([first.settled, second.settled, third.settled]);
  assert.deepEqual(first.outcome.body?.outputs?.[0]?.data, [2, 4]);
  assert.deepEqual(second.outcome.body?.outputs?.[0]?.data, [6, 8]);
  assert.deepEqual(third.outcome.body?.outputs?.[0]?.data, [10, 12]);
  assert.equal(first.outcome.body?.model_version, '1');
  assert.deepEqual(harness.runtime.executions, [
    [[1, 2]],
    [
      [5, 6],
      [3, 4],
    ],
  ]); // high first
  assert.equal(client.inFlight, 0);
});

test('a cancel frame takes a queued request out: it is never run and never answered', async (t) => {
  const { harness, client } = await setup(t, 1);
  const running = new Collector();
  client.send(running, body([[1, 1]]), undefined, undefined);
  await until(() => harness.runtime.executions.length === 1, 'the first execution');
  const gone = new Collector();
  const id = client.send(gone, body([[9, 9]]), undefined, undefined);
  await until(() => harness.state.batcher?.depth === 1, 'one queued');
  client.cancel(id);
  await until(() => harness.state.batcher?.depth === 0, 'the queue to empty');
  harness.runtime.release();
  await running.settled;
  assert.equal(running.outcome.status, 200);
  assert.deepEqual(harness.runtime.executions, [[[1, 1]]]);
  assert.deepEqual(gone.outcome, {});
  await until(() => harness.state.inflight === 0, 'nothing in flight');
});

test('the deadline and priority headers travel in the frame and are checked as over HTTP', async (t) => {
  const { client } = await setup(t, 0);
  const late = new Collector();
  client.send(late, body([[1, 2]]), '0', undefined);
  const bad = new Collector();
  client.send(bad, body([[1, 2]]), 'soon', undefined);
  const badPriority = new Collector();
  client.send(badPriority, body([[1, 2]]), undefined, 'urgent');
  const malformed = new Collector();
  client.send(malformed, Buffer.from('{"inputs": ['), undefined, undefined);
  await Promise.all([late.settled, bad.settled, badPriority.settled, malformed.settled]);
  assert.equal(late.outcome.status, 504);
  assert.equal(late.outcome.body?.code, 'KILN_DEADLINE_EXCEEDED');
  assert.equal(bad.outcome.status, 400);
  assert.equal(bad.outcome.body?.code, 'KILN_INVALID_INFER_REQUEST');
  assert.equal(badPriority.outcome.status, 400);
  assert.equal(malformed.outcome.status, 400);
  assert.equal(malformed.outcome.body?.code, 'KILN_INVALID_JSON');
});

test('a full queue answers 429 with Retry-After on the channel too', async (t) => {
  const { harness, client } = await setup(t, 1);
  const requests = Array.from({ length: 18 }, () => new Collector());
  client.send(requests[0]!, body([[0, 0]]), undefined, undefined);
  await until(() => harness.runtime.executions.length === 1, 'the first execution');
  for (const request of requests.slice(1))
    client.send(request, body([[1, 1]]), undefined, undefined);
  await until(() => requests.some((r) => r.outcome.status === 429), 'a refusal');
  harness.runtime.release();
  await Promise.all(requests.map((r) => r.settled));
  const refused = requests.filter((r) => r.outcome.status === 429);
  assert.equal(refused.length, 1); // 1 running + 16 queued fit; the 18th does not
  assert.equal(refused[0]?.outcome.retryAfter, '1');
  assert.equal(refused[0]?.outcome.body?.code, 'KILN_QUEUE_FULL');
});

test('the worker refuses a channel at another path or protocol, and while draining', async (t) => {
  const { harness, client } = await setup(t, 0);
  const upgrade = (path: string, protocol: string): Promise<number> =>
    new Promise((resolve, reject) => {
      const req = httpRequest(`${harness.url}${path}`, {
        headers: { connection: 'Upgrade', upgrade: protocol },
      });
      req.on('response', (response) => {
        response.resume();
        resolve(response.statusCode ?? 0);
      });
      req.on('upgrade', (_res, socket) => {
        socket.destroy();
        resolve(101);
      });
      req.on('error', reject);
      req.end();
    });
  assert.equal(await upgrade(channelPath, channelProtocol), 101);
  assert.equal(await upgrade('/elsewhere', channelProtocol), 400);
  assert.equal(await upgrade(channelPath, 'websocket'), 400);
  harness.state.phase = 'draining';
  assert.equal(await upgrade(channelPath, channelProtocol), 503);
  const refused = new Collector();
  client.send(refused, body([[1, 2]]), undefined, undefined);
  await refused.settled;
  assert.equal(refused.outcome.errorCode, 'CHANNEL_CLOSED');
});

test('a worker closing its channels fails the requests waiting on them as lost', async (t) => {
  const { harness, client } = await setup(t, 1);
  const waiting = new Collector();
  client.send(waiting, body([[1, 2]]), undefined, undefined);
  await until(() => harness.runtime.executions.length === 1, 'the execution');
  closeChannels(harness.server);
  await waiting.settled;
  assert.equal(waiting.outcome.errorCode, 'CHANNEL_CLOSED');
  // The next request opens a new channel.
  harness.runtime.release();
  const next = new Collector();
  client.send(next, body([[2, 2]]), undefined, undefined);
  await next.settled;
  assert.equal(next.outcome.status, 200);
});

test('a tensors frame runs without the worker parsing JSON; a malformed one is a 400', async (t) => {
  const { harness, client } = await setup(t, 0);
  const parsed = parseInferRequest(body([[1, 2]]), null);
  assert.ok(parsed.ok);
  const frame = encodeTensorRequest(parsed.request, undefined, undefined);
  assert.ok(frame !== null);
  const good = new Collector();
  client.sendTensors(good, frame);
  const bad = new Collector();
  client.sendTensors(bad, { meta: '{"i":[["x","FP32",[1,2],0,8]]}', body: Buffer.alloc(4) });
  await Promise.all([good.settled, bad.settled]);
  assert.equal(good.outcome.status, 200);
  assert.deepEqual(good.outcome.body?.outputs?.[0]?.data, [2, 4]);
  assert.deepEqual(harness.runtime.executions, [[[1, 2]]]);
  assert.equal(bad.outcome.status, 400);
  assert.equal(bad.outcome.body?.code, 'KILN_INVALID_INFER_REQUEST');
});

/** A channel opened by hand, to send frames no gateway would and to read replies at will. */
async function rawChannel(url: string): Promise<{
  socket: Socket;
  replies: { id: number; meta: string; body: string }[];
  closed: Promise<void>;
}> {
  const socket = await new Promise<Socket>((resolve, reject) => {
    const upgrade = httpRequest(new URL(channelPath, url), {
      headers: { connection: 'Upgrade', upgrade: channelProtocol },
    });
    upgrade.on('upgrade', (_response, upgraded: Socket) => resolve(upgraded));
    upgrade.on('response', () => reject(new Error('the worker refused the channel')));
    upgrade.on('error', reject);
    upgrade.end();
  });
  const replies: { id: number; meta: string; body: string }[] = [];
  const reader = new FrameReader(64 << 20, (frame: Frame) =>
    replies.push({ id: frame.id, meta: frame.meta, body: frame.body.toString() }),
  );
  socket.on('data', (chunk: Buffer) => assert.equal(reader.push(chunk), null));
  const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
  return { socket, replies, closed };
}

test(
  'frames with meta no gateway sends are refused or ignored; the worker stays up',
  { timeout: 20_000 },
  async (t) => {
    const { harness } = await setup(t, 0);
    // Closed by the test itself: the harness's own close waits for every connection.
    const channel = await rawChannel(harness.url);
    const tensors = (id: number, meta: string): Buffer =>
      encodeFrame(frameKind.tensors, id, meta, Buffer.alloc(8));
    channel.socket.write(tensors(1, 'null'));
    channel.socket.write(tensors(2, '{"i":[null]}'));
    channel.socket.write(tensors(3, '{"i":[["x","FP32",[1,2],0,8]],"o":5}'));
    channel.socket.write(tensors(4, '{"i":[["x","FP32",[1,2],0,8,"p"]]}'));
    // An infer frame whose meta is JSON but not an object: run as if it had none.
    channel.socket.write(encodeFrame(frameKind.infer, 5, 'null', body([[3, 4]])));
    await until(() => channel.replies.length === 5, 'five replies');
    const byId = new Map(channel.replies.map((r) => [r.id, r]));
    for (const id of [1, 2, 3, 4]) {
      assert.deepEqual(JSON.parse(byId.get(id)!.meta), { s: 400 }, `frame ${id}`);
      assert.match(byId.get(id)!.body, /KILN_INVALID_INFER_REQUEST/);
    }
    assert.deepEqual(JSON.parse(byId.get(5)!.meta), { s: 200 });
    assert.deepEqual(harness.runtime.executions, [[[3, 4]]]);
    channel.socket.destroy();
  },
);

test('a tensors frame may be larger than the JSON body limit it came within', async (t) => {
  const { harness, client } = await setup(t, 0);
  // 150,000 × 2 zeros: ~600 KB of JSON, under the 1 MB body limit; 1.2 MB as FP32.
  const rows = Array.from({ length: 150_000 }, () => [0, 0]);
  const json = body(rows);
  assert.ok(json.length < 1_000_000);
  const parsed = parseInferRequest(json, null);
  assert.ok(parsed.ok);
  const frame = encodeTensorRequest(parsed.request, undefined, undefined);
  assert.ok(frame !== null && frame.body.length > 1_000_000 + 64 * 1024);
  const reply = new Collector();
  client.sendTensors(reply, frame);
  await reply.settled;
  assert.equal(reply.outcome.status, 200);
  assert.equal(harness.runtime.executions[0]?.length, 150_000);
});

test('a request cancelled while the channel is still connecting never runs', async (t) => {
  const { harness, client } = await setup(t, 0);
  const cancelled = new Collector();
  const id = client.send(cancelled, body([[7, 7]]), undefined, undefined);
  client.cancel(id);
  const next = new Collector();
  client.send(next, body([[8, 8]]), undefined, undefined);
  await next.settled;
  assert.equal(next.outcome.status, 200);
  // Frames run in order: had the first been sent, it would have run before the second.
  assert.deepEqual(harness.runtime.executions, [[[8, 8]]]);
});

test('closing a drained worker’s channels delivers every reply already written', async (t) => {
  const { harness } = await setup(t, 0);
  const channel = await rawChannel(harness.url); // closed by the worker below
  channel.socket.pause(); // the gateway is slow to read: replies pile up in the worker
  const requests = 8;
  const big = body(Array.from({ length: 200_000 }, () => [1, 1])); // ~800 KB each way
  for (let id = 1; id <= requests; id++)
    channel.socket.write(encodeFrame(frameKind.infer, id, '', big));
  await until(() => harness.runtime.executions.length === requests, 'every execution');
  await until(() => harness.state.inflight === 0, 'every reply written');
  closeChannels(harness.server);
  channel.socket.resume();
  await channel.closed;
  assert.deepEqual(
    channel.replies.map((r) => r.id),
    Array.from({ length: requests }, (_, i) => i + 1),
  );
});

test('a reply whose meta is not a worker’s is answered 502, not a crash', async (t) => {
  // A fake worker: accepts the channel and answers every frame with meta that is no status.
  const metas = ['null', '{}', '{"s":"200"}', '{"s":42}'];
  const server = createServer();
  server.on('upgrade', (_request, socket: Socket) => {
    socket.write(
      `HTTP/1.1 101 Switching Protocols\r\nconnection: upgrade\r\nupgrade: ${channelProtocol}\r\n\r\n`,
    );
    let n = 0;
    const reader = new FrameReader(1 << 20, (frame) =>
      socket.write(encodeFrame(frameKind.reply, frame.id, metas[n++ % metas.length]!, '{}')),
    );
    socket.on('data', (chunk: Buffer) => reader.push(chunk));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const client = new ChannelClient(`http://127.0.0.1:${port}`, channelPath, 30_000, () =>
    performance.now(),
  );
  t.after(() => {
    client.destroy();
    server.closeAllConnections();
    server.close();
  });
  const collectors = metas.map(() => new Collector());
  for (const collector of collectors) client.send(collector, body([[1, 1]]), undefined, undefined);
  await Promise.all(collectors.map((c) => c.settled));
  for (const collector of collectors) assert.equal(collector.outcome.status, 502);
});
