// A draining worker finishes what it accepted: a request whose body is still arriving when
// the drain begins is run (not refused), and a large answer counts as in flight until it
// has been written out, so the drain cannot close its connection under it.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import type { Tensor } from '../../src/core/tensor.ts';
import type { InferRequest } from '../../src/runtimes/runtime.ts';
import { startStub } from './stub-worker.ts';
import { until } from '../helpers/until.ts';

async function open(url: string): Promise<Socket> {
  const { port, hostname } = new URL(url);
  const socket = connect(Number(port), hostname);
  await new Promise((resolve) => socket.once('connect', resolve));
  return socket;
}

const head = (path: string, length: number): string =>
  `POST ${path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${length}\r\n\r\n`;

test('a request whose body arrives after the drain began is run, not refused', async (t) => {
  const harness = await startStub(null, 0);
  t.after(() => harness.close());
  const body = JSON.stringify({
    inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 2], data: [1, 2] }],
  });
  const socket = await open(harness.url);
  let answer = '';
  socket.on('data', (chunk: Buffer) => (answer += chunk.toString()));
  socket.write(head('/v2/models/m/infer', body.length) + body.slice(0, 5));
  await until(() => harness.state.inflight === 1, 'the request taken in');
  harness.state.phase = 'draining';
  socket.end(body.slice(5));
  await until(() => answer.includes('\r\n\r\n') && answer.endsWith('}'), 'the answer');
  assert.match(answer, /^HTTP\/1\.1 200/);
  assert.deepEqual(harness.runtime.executions, [[[1, 2]]]);
});

test('a large answer is in flight until written out, however slowly the client reads', async (t) => {
  const harness = await startStub(null, 0);
  t.after(() => harness.close());
  // 2 M floats of output (~40 MB of JSON): far more than socket buffers hold.
  harness.runtime.infer = (request: InferRequest) => {
    const x = request.inputs[0] as Tensor;
    harness.runtime.executions.push([[...(x.data as Float32Array)]]);
    const data = new Float32Array(2_000_000).fill(0.2);
    return Promise.resolve({
      ok: true,
      outputs: [{ name: 'y', datatype: 'FP32', shape: [1, data.length], data }],
    });
  };
  const body = JSON.stringify({
    inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 1], data: [1] }],
  });
  const socket = await open(harness.url);
  socket.pause(); // reads nothing for now
  socket.write(head('/v2/models/m/infer', body.length) + body);
  await until(() => harness.runtime.executions.length === 1, 'the model run');
  await new Promise((resolve) => setTimeout(resolve, 200));
  assert.equal(harness.state.inflight, 1, 'still being written: still in flight');
  let received = 0;
  socket.on('data', (chunk: Buffer) => (received += chunk.length));
  socket.resume();
  await until(() => harness.state.inflight === 0, 'written out');
  assert.ok(received > 30_000_000, `${received} bytes`);
  socket.destroy();
});

test('a malformed %-escape in the model path is a 404, not a 500', async (t) => {
  const harness = await startStub(null, 0);
  t.after(() => harness.close());
  const response = await fetch(`${harness.url}/v2/models/%E0%A4%A`);
  assert.equal(response.status, 404);
});
