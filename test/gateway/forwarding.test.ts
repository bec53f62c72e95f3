import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  call,
  cannedOutput,
  endpointRoute,
  fakeWorker,
  infer,
  replicaRoute,
  snapshot,
  testGateway,
  testSchema,
  validRequest,
} from './gateway-harness.ts';

const traceparentShape = /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/;

test('an infer request reaches a replica with its bytes unchanged and the answer comes back', async () => {
  const worker = await fakeWorker();
  const gateway = await testGateway(
    snapshot(1, [endpointRoute({ replicas: [replicaRoute(worker, 'r1')] })]),
  );
  // Odd spacing, key order and NaN: the gateway must forward the client's bytes, not a re-encoding.
  const body =
    '{ "inputs" : [ {"data":[1, NaN, 3.50], "shape":[1,3], "name":"x", "datatype":"FP32"} ] }';
  const reply = await infer(gateway.url, body, {
    'x-request-id': 'req-123',
    traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
    tracestate: 'vendor=abc',
    'kiln-timeout-ms': '250',
    'kiln-priority': 'high',
    authorization: 'Bearer not-needed-in-dev',
  });
  assert.equal(reply.status, 200);
  assert.deepEqual(reply.json, cannedOutput);
  assert.equal(worker.received.length, 1);
  const got = worker.received[0]!;
  assert.equal(got.method, 'POST');
  assert.equal(got.url, '/v2/models/fraud/infer');
  assert.equal(got.body.toString('utf8'), body);
  assert.equal(got.headers['x-request-id'], 'req-123');
  assert.equal(got.headers.traceparent, '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01');
  assert.equal(got.headers.tracestate, 'vendor=abc');
  assert.equal(got.headers['kiln-timeout-ms'], '250', 'the worker batcher reads the deadline');
  assert.equal(got.headers['kiln-priority'], 'high');
  assert.equal(got.headers.authorization, undefined, 'client credentials stay at the gateway');
  assert.equal(reply.headers.get('x-request-id'), 'req-123');
  assert.equal(
    reply.headers.get('traceparent'),
    '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
  );
  assert.equal(reply.headers.get('kiln-endpoint'), 'fraud');
  assert.equal(reply.headers.get('kiln-model-version'), '3');
  assert.equal(reply.headers.get('kiln-replica'), 'r1');
  assert.equal(reply.headers.get('content-type'), 'application/json');
});

test('without client ids the gateway makes a request id and starts a trace; the worker traceparent wins', async () => {
  const worker = await fakeWorker();
  const gateway = await testGateway(
    snapshot(1, [endpointRoute({ replicas: [replicaRoute(worker, 'r1')] })]),
  );
  const first = await infer(gateway.url, validRequest, { traceparent: 'garbage' });
  const sent = worker.received[0]!;
  assert.match(String(sent.headers.traceparent), traceparentShape);
  assert.notEqual(sent.headers.traceparent, 'garbage');
  assert.ok(
    typeof sent.headers['x-request-id'] === 'string' && sent.headers['x-request-id'] !== '',
  );
  assert.equal(first.headers.get('x-request-id'), sent.headers['x-request-id']);
  assert.equal(first.headers.get('traceparent'), sent.headers.traceparent);

  worker.answerTraceparent = '00-11111111111111111111111111111111-2222222222222222-01';
  const second = await infer(gateway.url);
  assert.equal(second.headers.get('traceparent'), worker.answerTraceparent);
});

test('the versioned infer path needs the served version; others are 404 and reach no worker', async () => {
  const worker = await fakeWorker();
  const gateway = await testGateway(
    snapshot(1, [endpointRoute({ replicas: [replicaRoute(worker, 'r1')] })]),
  );
  const body = JSON.stringify(validRequest);
  const served = await call(gateway.url, 'POST', '/v2/models/fraud/versions/3/infer', body);
  assert.equal(served.status, 200);
  assert.equal(worker.received[0]!.url, '/v2/models/fraud/infer');

  const other = await call(gateway.url, 'POST', '/v2/models/fraud/versions/2/infer', body);
  assert.equal(other.status, 404);
  assert.deepEqual(other.json, {
    error: 'endpoint fraud serves version 3, not version 2',
    code: 'KILN_VERSION_NOT_SERVED',
  });
  const metadata = await call(gateway.url, 'GET', '/v2/models/fraud/versions/4');
  assert.equal(metadata.status, 404);
  assert.equal(worker.received.length, 1);
});

test('an unknown endpoint is 404 KILN_ENDPOINT_NOT_FOUND; unknown routes are 404 too', async () => {
  const gateway = await testGateway(snapshot(1, [endpointRoute({ replicas: [] })]));
  const reply = await infer(gateway.url, validRequest, {}, 'nope');
  assert.equal(reply.status, 404);
  assert.deepEqual(reply.json, {
    error: 'endpoint nope does not exist',
    code: 'KILN_ENDPOINT_NOT_FOUND',
  });
  for (const [method, path] of [
    ['GET', '/v2/models/fraud/explain'],
    ['GET', '/v2/models/fraud/infer'],
    ['POST', '/v2/models/fraud'],
    ['GET', '/v1/modelz'],
  ] as const) {
    const miss = await call(gateway.url, method, path);
    assert.equal(miss.status, 404, `${method} ${path}`);
    assert.equal((miss.json as { code: string }).code, 'KILN_ROUTE_NOT_FOUND');
  }
});

test('least outstanding requests: a replica holding requests gets no new ones while another is idle', async () => {
  const slow = await fakeWorker('hold');
  const fast = await fakeWorker('ok');
  const gateway = await testGateway(
    snapshot(1, [
      endpointRoute({ replicas: [replicaRoute(slow, 'slow'), replicaRoute(fast, 'fast')] }),
    ]),
  );
  // With equal loads the rotation starts at the first replica: the slow one takes the first
  // request and keeps it outstanding.
  const held = infer(gateway.url);
  await slow.waitForRequests(1);
  for (let i = 0; i < 6; i++) {
    const reply = await infer(gateway.url);
    assert.equal(reply.status, 200);
    assert.equal(reply.headers.get('kiln-replica'), 'fast');
  }
  assert.equal(slow.received.length, 1);
  assert.equal(fast.received.length, 6);
  slow.release();
  const reply = await held;
  assert.equal(reply.status, 200);
  assert.equal(reply.headers.get('kiln-replica'), 'slow');
});

test('equal loads are spread round-robin', async () => {
  const a = await fakeWorker();
  const b = await fakeWorker();
  const gateway = await testGateway(
    snapshot(1, [endpointRoute({ replicas: [replicaRoute(a, 'a'), replicaRoute(b, 'b')] })]),
  );
  for (let i = 0; i < 6; i++) assert.equal((await infer(gateway.url)).status, 200);
  assert.equal(a.received.length, 3);
  assert.equal(b.received.length, 3);
});

test('health, server metadata, model metadata and model readiness', async () => {
  const worker = await fakeWorker();
  const gateway = await testGateway(null);
  assert.equal((await call(gateway.url, 'GET', '/v2/health/live')).status, 200);
  assert.equal((await call(gateway.url, 'GET', '/v2/health/ready')).status, 503);
  const early = await infer(gateway.url);
  assert.equal(early.status, 503);
  assert.equal(early.headers.get('retry-after'), '1');

  gateway.setSnapshot(
    snapshot(1, [
      endpointRoute({ replicas: [replicaRoute(worker, 'r1')] }),
      endpointRoute({ name: 'cold', replicas: [], format: 'xgboost' }),
    ]),
  );
  assert.equal((await call(gateway.url, 'GET', '/v2/health/ready')).status, 200);
  const server = await call(gateway.url, 'GET', '/v2');
  assert.equal(server.status, 200);
  const serverBody = server.json as { name: string; version: string; extensions: unknown[] };
  assert.equal(serverBody.name, 'kiln');
  assert.equal(typeof serverBody.version, 'string');
  assert.deepEqual(serverBody.extensions, []);

  for (const path of ['/v2/models/fraud', '/v2/models/fraud/versions/3']) {
    const metadata = await call(gateway.url, 'GET', path);
    assert.equal(metadata.status, 200, path);
    assert.deepEqual(metadata.json, {
      name: 'fraud',
      versions: ['3'],
      platform: 'onnxruntime_onnx',
      inputs: testSchema.inputs,
      outputs: testSchema.outputs,
    });
  }
  assert.equal((await call(gateway.url, 'GET', '/v2/models/fraud/ready')).status, 200);
  assert.equal((await call(gateway.url, 'GET', '/v2/models/fraud/versions/3/ready')).status, 200);
  const cold = await call(gateway.url, 'GET', '/v2/models/cold/ready');
  assert.equal(cold.status, 503);
  assert.equal((cold.json as { code: string }).code, 'KILN_MODEL_NOT_READY');
  assert.equal(worker.received.length, 0, 'metadata and readiness come from the snapshot');
});

test('model metadata is forwarded to a replica while the snapshot has no schema', async () => {
  const metadata = { name: 'fraud', versions: ['3'], platform: 'x', inputs: [], outputs: [] };
  const worker = await fakeWorker('ok', metadata);
  const gateway = await testGateway(
    snapshot(1, [endpointRoute({ schema: null, replicas: [replicaRoute(worker, 'r1')] })]),
  );
  const reply = await call(gateway.url, 'GET', '/v2/models/fraud');
  assert.equal(reply.status, 200);
  assert.deepEqual(reply.json, metadata);
  assert.equal(worker.received[0]!.method, 'GET');
  assert.equal(worker.received[0]!.url, '/v2/models/fraud');
  assert.equal(reply.headers.get('kiln-replica'), 'r1');
});

test('a worker error status and body pass through unchanged', async () => {
  const error = { error: 'input x: bad things', code: 'KILN_INVALID_INFER_REQUEST' };
  const worker = await fakeWorker('ok', error, 400);
  const gateway = await testGateway(
    snapshot(1, [endpointRoute({ schema: null, replicas: [replicaRoute(worker, 'r1')] })]),
  );
  const reply = await infer(gateway.url);
  assert.equal(reply.status, 400);
  assert.deepEqual(reply.json, error);
  assert.equal(reply.headers.get('kiln-replica'), 'r1');
});

test('newer snapshots replace older ones; older ones are ignored', async () => {
  const a = await fakeWorker();
  const b = await fakeWorker();
  const gateway = await testGateway(
    snapshot(5, [endpointRoute({ replicas: [replicaRoute(a, 'a')] })]),
  );
  assert.equal(
    gateway.setSnapshot(snapshot(4, [endpointRoute({ replicas: [replicaRoute(b, 'b')] })])),
    false,
  );
  assert.equal(gateway.snapshotVersion(), 5);
  assert.equal((await infer(gateway.url)).headers.get('kiln-replica'), 'a');
  assert.equal(
    gateway.setSnapshot(snapshot(6, [endpointRoute({ replicas: [replicaRoute(b, 'b')] })])),
    true,
  );
  assert.equal(gateway.snapshotVersion(), 6);
  assert.equal((await infer(gateway.url)).headers.get('kiln-replica'), 'b');
});
