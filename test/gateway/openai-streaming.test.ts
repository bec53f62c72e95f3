// Streams through the gateway: a client that goes away aborts the upstream request (the
// worker then cancels the sequence), and a client that stops reading makes the gateway
// stop reading the worker instead of buffering its stream.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import OpenAI from 'openai';
import { fakeLlmWorker } from './fake-llm-worker.ts';
import { endpointRoute, replicaRoute, snapshot, testGateway } from './gateway-harness.ts';
import { until } from '../helpers/until.ts';

const llmRoute = (worker: { url: string }) =>
  endpointRoute({
    name: 'assistant',
    team: 'chat',
    format: 'hf-llm',
    schema: null,
    replicas: [replicaRoute(worker, 'r1')],
  });

test('a client leaving mid-stream aborts the upstream request', { timeout: 30_000 }, async () => {
  const worker = await fakeLlmWorker('r1', 'hold');
  const gateway = await testGateway(snapshot(1, [llmRoute(worker)]));
  const client = new OpenAI({ apiKey: 'none', baseURL: `${gateway.url}/v1`, maxRetries: 0 });
  const stream = await client.chat.completions.create({
    model: 'assistant',
    messages: [{ role: 'user', content: 'a long answer, please' }],
    stream: true,
  });
  for await (const chunk of stream) {
    assert.equal(chunk.choices[0]?.delta.role, 'assistant');
    break; // leaving the loop aborts the client's request
  }
  await until(() => worker.aborted === 1, 'the worker to see its answer aborted');
  const text = await gateway.metricsText();
  assert.match(
    text,
    /kiln_gateway_requests_total\{endpoint="assistant",version="3",code="499"\} 1/,
  );
  await until(
    async () =>
      /kiln_gateway_inflight_requests\{endpoint="assistant"\} 0/.test(await gateway.metricsText()),
    'no request left in flight',
  );
});

test(
  'a client that stops reading stops the gateway reading the worker (no unbounded buffering)',
  { timeout: 60_000 },
  async () => {
    const worker = await fakeLlmWorker('r1', 'flood');
    // A stream unread this long is cut by the gateway, which ends the test's wait.
    const gateway = await testGateway(snapshot(1, [llmRoute(worker)]), { clientTimeoutMs: 3_000 });
    const { hostname, port } = new URL(gateway.url);
    const socket: Socket = connect(Number(port), hostname);
    socket.on('error', () => undefined);
    await new Promise((resolve) => socket.once('connect', resolve));
    const body = JSON.stringify({ model: 'assistant', prompt: 'flood', stream: true });
    // The request goes out; the answer is never read (no 'data' listener: node reads at
    // most its stream buffer from the kernel, then leaves the rest in the socket).
    socket.write(
      `POST /v1/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`,
    );
    await until(
      () => worker.aborted === 1,
      'the stalled stream to be cut and its upstream aborted',
    );
    socket.destroy();
    // What the worker could write is what the sockets and stream buffers on the way hold
    // (kernel buffers on loopback grow to a few MiB), never the whole stream.
    assert.equal(worker.floodFinished, false);
    assert.ok(
      worker.floodBytes < 32 * 2 ** 20,
      `the worker wrote ${worker.floodBytes} bytes into a stream nobody read`,
    );
  },
);
