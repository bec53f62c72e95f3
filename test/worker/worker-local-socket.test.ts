// A worker on the gateway's host also serves its routes on a Unix socket (WorkerSpec
// .channelSocket), and the gateway's channel goes there. A real worker (startWorker, in
// process) serving fixtures/onnx/mlp.onnx: replies over the socket match torch's reference
// outputs; the socket is owner-only and gone after close; a socket the worker cannot make,
// or the gateway cannot reach, leaves TCP working.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, statSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { channelSocketPath } from '../../src/control/backends/local/local-backend.ts';
import { ChannelClient, type ChannelRequester } from '../../src/gateway/channel-client.ts';
import { checkRoutingSnapshot } from '../../src/gateway/snapshot-check.ts';
import { channelPath } from '../../src/protocol/channel/frames.ts';
import { startWorker, type RunningWorker } from '../../src/worker/start-worker.ts';
import type { WorkerEvent, WorkerSpec } from '../../src/worker/worker-spec.ts';
import { readExpected, tolerance } from '../runtimes/onnx/onnx-fixtures.ts';
import { mlpWorkerSpec } from './mlp-worker-spec.ts';

const expected = readExpected('mlp');
const input = expected.inputs[0];
const output = expected.outputs[0];
const width = input?.shape[1] ?? 0;
const outWidth = output?.shape[1] ?? 0;

async function start(
  overrides: (home: string) => Partial<WorkerSpec>,
): Promise<{ worker: RunningWorker; events: WorkerEvent[]; spec: WorkerSpec }> {
  const { spec: base, home } = await mlpWorkerSpec();
  const spec = { ...base, ...overrides(home) };
  const events: WorkerEvent[] = [];
  const worker = await startWorker(spec, (event) => events.push(event));
  await worker.loaded;
  assert.equal(worker.state.phase, 'ready', JSON.stringify(events));
  return { worker, events, spec };
}

class Reply implements ChannelRequester {
  status = 0;
  body: { outputs?: { shape: number[]; data: number[] }[] } = {};
  error: string | null = null;
  private resolve!: () => void;
  readonly settled = new Promise<void>((resolve) => (this.resolve = resolve));
  onChannelReply(status: number, _retryAfter: string | null, body: Buffer): void {
    this.status = status;
    this.body = JSON.parse(body.toString()) as Reply['body'];
    this.resolve();
  }
  onChannelError(error: Error): void {
    this.error = (error as { code?: string }).code ?? error.message;
    this.resolve();
  }
}

/** Sends rows `first…first+rows` of the fixture on `client`; checks torch's outputs. */
async function inferAndCheck(client: ChannelClient, first: number, rows: number): Promise<void> {
  const data = (input?.data ?? []).slice(first * width, (first + rows) * width);
  const reply = new Reply();
  client.send(
    reply,
    Buffer.from(
      JSON.stringify({
        inputs: [{ name: input?.name, datatype: 'FP32', shape: [rows, width], data }],
      }),
    ),
    undefined,
    undefined,
  );
  await reply.settled;
  assert.equal(reply.error, null);
  assert.equal(reply.status, 200, JSON.stringify(reply.body));
  const out = reply.body.outputs?.[0];
  assert.deepEqual(out?.shape, [rows, outWidth]);
  const reference = (output?.data ?? []).slice(first * outWidth, (first + rows) * outWidth);
  out?.data.forEach((value, i) =>
    assert.ok(Math.abs(value - Number(reference[i])) <= tolerance, `row ${first}: ${value}`),
  );
}

/** GET `path` on the worker's Unix socket. */
function getOnSocket(socketPath: string, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ socketPath, path, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

test('the channel runs over the worker’s Unix socket, owner-only, gone after close', async () => {
  const { worker, events, spec } = await start((home) => ({
    channelSocket: join(home, 'sock', 'channel.sock'),
  }));
  const socketPath = spec.channelSocket ?? '';
  const listening = events.find((e) => e.event === 'listening');
  assert.deepEqual(listening, { event: 'listening', url: worker.url, socketPath });
  assert.ok(statSync(socketPath).isSocket());
  assert.equal(statSync(socketPath).mode & 0o777, 0o600);
  assert.equal(await getOnSocket(socketPath, '/v2/health/ready'), 200);

  // The URL given is not the worker's: only the socket can answer.
  const client = new ChannelClient('http://127.0.0.1:9', channelPath, 30_000, () =>
    performance.now(),
  );
  const viaSocket = new ChannelClient(
    'http://127.0.0.1:9',
    channelPath,
    30_000,
    () => performance.now(),
    socketPath,
  );
  try {
    await Promise.all([
      inferAndCheck(viaSocket, 0, 1),
      inferAndCheck(viaSocket, 1, 3),
      inferAndCheck(viaSocket, 4, 2),
    ]);
    assert.equal(viaSocket.transport, 'unix');
    // The same port-9 URL over TCP is refused: the replies above came over the socket.
    const refused = new Reply();
    client.send(refused, Buffer.from('{}'), undefined, undefined);
    await refused.settled;
    assert.equal(refused.error, 'ECONNREFUSED');
  } finally {
    viaSocket.destroy();
    client.destroy();
    await worker.close(1_000);
  }
  assert.equal(existsSync(socketPath), false);
  await assert.rejects(getOnSocket(socketPath, '/v2/health/ready'));
});

test('a socket path that cannot be reached: the channel falls back to TCP for good', async () => {
  const { worker, spec } = await start(() => ({ channelSocket: null }));
  const gone = join(spec.workDir, 'never-made.sock');
  const client = new ChannelClient(worker.url, channelPath, 30_000, () => performance.now(), gone);
  try {
    await Promise.all([inferAndCheck(client, 0, 2), inferAndCheck(client, 2, 1)]);
    assert.equal(client.transport, 'tcp');
    await inferAndCheck(client, 3, 1);
  } finally {
    client.destroy();
    await worker.close(1_000);
  }
});

test('a socket the worker cannot make is not fatal: it serves TCP and says so', async () => {
  // Longer than a socket path may be: refused before listening (libuv may bind a truncated
  // path), so nothing is made at all.
  const { worker, events, spec } = await start((home) => ({
    channelSocket: join(home, 'x'.repeat(120), 'channel.sock'),
  }));
  try {
    const listening = events.find((e) => e.event === 'listening');
    assert.deepEqual(listening, { event: 'listening', url: worker.url });
    assert.equal(existsSync(dirname(spec.channelSocket ?? '')), false);
    const client = new ChannelClient(worker.url, channelPath, 30_000, () => performance.now());
    try {
      await inferAndCheck(client, 0, 1);
    } finally {
      client.destroy();
    }
  } finally {
    await worker.close(1_000);
  }
});

test('the local backend gives a replica a socket only where its path fits', () => {
  assert.equal(
    channelSocketPath('/home/k/.kiln/run/replicas/a-v1-r0-1'),
    '/home/k/.kiln/run/replicas/a-v1-r0-1/channel.sock',
  );
  assert.equal(channelSocketPath(`/home/${'k'.repeat(100)}/run/replicas/a`), null);
});

test('a routing snapshot whose socket path is not absolute is refused', () => {
  const snapshot = (socketPath: unknown): unknown => ({
    version: 1,
    generatedAt: new Date(0).toISOString(),
    auth: 'dev',
    apiKeys: [],
    teamLimits: [],
    endpoints: [
      {
        name: 'e',
        team: 'default',
        model: 'm',
        version: 1,
        format: 'onnx',
        schema: null,
        maxBodyBytes: 1000,
        maxConcurrency: null,
        replicas: [
          { id: 'r', url: 'http://127.0.0.1:1', version: 1, channel: channelPath, socketPath },
        ],
      },
    ],
  });
  assert.equal(checkRoutingSnapshot(snapshot('/run/r/channel.sock')).ok, true);
  const relative = checkRoutingSnapshot(snapshot('run/channel.sock'));
  assert.equal(relative.ok, false);
  assert.match(JSON.stringify(relative), /socketPath is not an absolute path/);
});
