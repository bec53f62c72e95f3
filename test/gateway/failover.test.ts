import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import {
  endpointRoute,
  fakeWorker,
  infer,
  replicaRoute,
  snapshot,
  testGateway,
  validRequest,
} from './gateway-harness.ts';

/** A URL on which nothing listens (a worker that was kill -9ed). */
async function deadUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}

// Every case runs over both ways the gateway reaches a worker: plain v2 HTTP (any server
// that speaks it) and the worker channel (Kiln's own workers).
for (const transport of ['http', 'channel'] as const) {
  const options = { channel: transport === 'channel' };

  test(`${transport}: a replica that drops the connection is ejected and the request is retried on another`, async () => {
    const crashing = await fakeWorker('destroy', undefined, 200, options);
    const healthy = await fakeWorker('ok', undefined, 200, options);
    const gateway = await testGateway(
      snapshot(1, [
        endpointRoute({
          replicas: [replicaRoute(crashing, 'crashing'), replicaRoute(healthy, 'healthy')],
        }),
      ]),
    );
    // The rotation starts at the crashing replica.
    const first = await infer(gateway.url);
    assert.equal(first.status, 200);
    assert.equal(first.headers.get('kiln-replica'), 'healthy');
    assert.equal(healthy.received.length, 1);
    // Ejected: later requests go straight to the healthy replica.
    for (let i = 0; i < 4; i++) {
      const reply = await infer(gateway.url);
      assert.equal(reply.status, 200);
      assert.equal(reply.headers.get('kiln-replica'), 'healthy');
    }
    assert.equal(healthy.received.length, 5);
    const metrics = await gateway.metricsText();
    assert.match(
      metrics,
      /kiln_gateway_upstream_errors_total\{endpoint="fraud",reason="reset"\} 1/,
    );
  });

  test(`${transport}: connection refused (a dead worker) is retried on another replica`, async () => {
    const healthy = await fakeWorker('ok', undefined, 200, options);
    const gateway = await testGateway(
      snapshot(1, [
        endpointRoute({
          replicas: [
            replicaRoute({ url: await deadUrl(), channel: options.channel }, 'dead'),
            replicaRoute(healthy, 'ok'),
          ],
        }),
      ]),
    );
    const reply = await infer(gateway.url);
    assert.equal(reply.status, 200);
    assert.equal(reply.headers.get('kiln-replica'), 'ok');
    const metrics = await gateway.metricsText();
    assert.match(
      metrics,
      /kiln_gateway_upstream_errors_total\{endpoint="fraud",reason="refused"\} 1/,
    );
  });

  test(`${transport}: with a single replica that fails, the answer is 503 KILN_REPLICA_UNAVAILABLE with Retry-After`, async () => {
    const crashing = await fakeWorker('destroy', undefined, 200, options);
    const gateway = await testGateway(
      snapshot(1, [endpointRoute({ replicas: [replicaRoute(crashing, 'only')] })]),
    );
    for (let i = 0; i < 2; i++) {
      // The second request meets an ejected replica: with nothing else, it is tried anyway.
      const reply = await infer(gateway.url);
      assert.equal(reply.status, 503);
      assert.equal(reply.headers.get('retry-after'), '1');
      assert.equal((reply.json as { code: string }).code, 'KILN_REPLICA_UNAVAILABLE');
    }
  });

  test(`${transport}: when the retry fails too, the answer is 503 KILN_REPLICA_UNAVAILABLE`, async () => {
    const a = await fakeWorker('destroy', undefined, 200, options);
    const b = await fakeWorker('destroy', undefined, 200, options);
    const gateway = await testGateway(
      snapshot(1, [endpointRoute({ replicas: [replicaRoute(a, 'a'), replicaRoute(b, 'b')] })]),
    );
    const reply = await infer(gateway.url);
    assert.equal(reply.status, 503);
    assert.equal(reply.headers.get('retry-after'), '1');
    assert.equal((reply.json as { code: string }).code, 'KILN_REPLICA_UNAVAILABLE');
  });

  test(`${transport}: an endpoint without ready replicas answers 503 KILN_NO_READY_REPLICA with Retry-After`, async () => {
    const gateway = await testGateway(snapshot(1, [endpointRoute({ replicas: [] })]));
    const reply = await infer(gateway.url);
    assert.equal(reply.status, 503);
    assert.equal(reply.headers.get('retry-after'), '1');
    assert.deepEqual(reply.json, {
      error: 'endpoint fraud has no ready replica: none is ready',
      code: 'KILN_NO_READY_REPLICA',
    });
  });

  test(`${transport}: a replica that does not answer within the upstream timeout gives 504, not a retry`, async () => {
    const hanging = await fakeWorker('hang', undefined, 200, options);
    const other = await fakeWorker('ok', undefined, 200, options);
    const gateway = await testGateway(
      snapshot(1, [
        endpointRoute({ replicas: [replicaRoute(hanging, 'hang'), replicaRoute(other, 'other')] }),
      ]),
      { upstreamTimeoutMs: 300 },
    );
    const reply = await infer(gateway.url);
    assert.equal(reply.status, 504);
    assert.equal((reply.json as { code: string }).code, 'KILN_UPSTREAM_TIMEOUT');
    assert.equal(other.received.length, 0);
  });

  test(`${transport}: a client that goes away stops the upstream request and frees the replica`, async () => {
    const worker = await fakeWorker('hang', undefined, 200, options);
    const gateway = await testGateway(
      snapshot(1, [endpointRoute({ replicas: [replicaRoute(worker, 'r1')] })]),
    );
    const abort = new AbortController();
    const pending = fetch(`${gateway.url}/v2/models/fraud/infer`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(validRequest),
      signal: abort.signal,
    });
    await worker.waitForRequests(1);
    abort.abort();
    await assert.rejects(pending);
    // Up to 20 s (it was 500 polls, ~5 s): on a loaded machine the 499 may be recorded late.
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline) {
      const text = await gateway.metricsText();
      if (/kiln_gateway_requests_total\{[^}]*code="499"\} 1/.test(text)) {
        assert.match(text, /^kiln_gateway_inflight_requests\{endpoint="fraud"\} 0$/m);
        // The replica is free again: a new request is sent to it (and held, as this one was).
        worker.behavior = 'ok';
        assert.equal((await infer(gateway.url)).status, 200);
        // On the channel the worker is told, so a request still queued there never runs.
        if (transport === 'channel') {
          while (worker.cancelled.length === 0 && Date.now() < deadline + 10_000)
            await new Promise((resolve) => setTimeout(resolve, 5));
          assert.equal(worker.cancelled.length, 1);
        }
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    assert.fail('the abandoned request was never recorded');
  });
}
