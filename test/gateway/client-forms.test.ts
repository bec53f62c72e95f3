// The gateway's request forms besides plain v2 (docs/v1-protocol.md), against fake workers:
// what reaches the worker (the plain request, re-encoded), how answers are rewritten for v1,
// and that v1 goes through the same auth, limits and routing decisions as v2.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { connect } from 'node:net';
import { checkRoutingSnapshot } from '../../src/gateway/snapshot-check.ts';
import type { EndpointRoute } from '../../src/gateway/routing-snapshot.ts';
import {
  call,
  endpointRoute,
  fakeWorker,
  infer,
  replicaRoute,
  snapshot,
  testGateway,
  type Reply,
} from './gateway-harness.ts';
import { until } from '../helpers/until.ts';

const features: EndpointRoute['inputNaming'] = {
  declared: false,
  featureNames: ['a', 'b', 'c'],
};

function predict(base: string, body: unknown, endpoint = 'fraud'): Promise<Reply> {
  return call(base, 'POST', `/v1/models/${endpoint}:predict`, JSON.stringify(body));
}

function codeOf(reply: Reply): string | undefined {
  return (reply.json as { code?: string } | undefined)?.code;
}

test('v1 instances reach the worker as the plain v2 request, and its outputs come back as predictions', async () => {
  const worker = await fakeWorker('ok', {
    model_name: 'fraud',
    outputs: [{ name: 'y', datatype: 'FP32', shape: [2, 1], data: [0.25, null] }],
  });
  const gateway = await testGateway(
    snapshot(1, [endpointRoute({ inputNaming: features, replicas: [replicaRoute(worker, 'r1')] })]),
  );
  // Python's json.dumps writes NaN as is: the lenient parser takes it, as on /v2.
  const reply = await call(
    gateway.url,
    'POST',
    '/v1/models/fraud:predict',
    '{"instances": [[1, 2, 3], [4, NaN, 6]], "parameters": {"output_margin": true}}',
  );
  assert.equal(reply.status, 200, reply.text);
  assert.equal(reply.text, '{"predictions":[[0.25],[null]]}');
  assert.equal(reply.headers.get('content-length'), String(reply.text.length));
  assert.equal(reply.headers.get('kiln-endpoint'), 'fraud');
  assert.deepEqual(JSON.parse(worker.received.at(-1)?.body.toString() ?? ''), {
    parameters: { output_margin: true },
    inputs: [{ name: 'x', datatype: 'FP32', shape: [2, 3], data: [1, 2, 3, 4, null, 6] }],
  });

  const objects = await predict(gateway.url, { instances: [{ c: 3, a: 1, b: 2 }] });
  assert.equal(objects.status, 200, objects.text);
  assert.deepEqual(JSON.parse(worker.received.at(-1)?.body.toString() ?? ''), {
    inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 3], data: [1, 2, 3] }],
  });
});

test('a renamed single input and named features are forwarded under the schema name', async () => {
  const worker = await fakeWorker('ok');
  const gateway = await testGateway(
    snapshot(1, [endpointRoute({ inputNaming: features, replicas: [replicaRoute(worker, 'r1')] })]),
  );
  const renamed = await infer(gateway.url, {
    id: 'r-1',
    inputs: [{ name: 'input-0', datatype: 'FP32', shape: [1, 3], data: [1, 2, 3] }],
  });
  assert.equal(renamed.status, 200, renamed.text);
  assert.deepEqual(JSON.parse(worker.received.at(-1)?.body.toString() ?? ''), {
    id: 'r-1',
    inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 3], data: [1, 2, 3] }],
  });
  const named = await infer(gateway.url, {
    inputs: [
      { name: 'b', datatype: 'INT64', shape: [2], data: [2, 5] },
      { name: 'c', datatype: 'FP64', shape: [2, 1], data: [[3], [6]] },
      { name: 'a', datatype: 'FP32', shape: [2], data: [1, 4] },
    ],
    outputs: [{ name: 'y' }],
  });
  assert.equal(named.status, 200, named.text);
  assert.deepEqual(JSON.parse(worker.received.at(-1)?.body.toString() ?? ''), {
    inputs: [{ name: 'x', datatype: 'FP32', shape: [2, 3], data: [1, 2, 3, 4, 5, 6] }],
    outputs: [{ name: 'y' }],
  });
  // A plain request is forwarded as its original bytes, untouched.
  const text = '{"inputs":[{"name":"x","datatype":"FP32","shape":[1,3],"data":[1,2,3]}]}';
  assert.equal((await infer(gateway.url, text)).status, 200);
  assert.equal(worker.received.at(-1)?.body.toString(), text);
});

test('names stay enforced where the schema was declared or the snapshot says nothing', async () => {
  const worker = await fakeWorker('ok');
  const gateway = await testGateway(
    snapshot(1, [
      endpointRoute({
        inputNaming: { declared: true, featureNames: null },
        replicas: [replicaRoute(worker, 'r1')],
      }),
      endpointRoute({ name: 'old', replicas: [replicaRoute(worker, 'r2')] }),
    ]),
  );
  const body = { inputs: [{ name: 'z', datatype: 'FP32', shape: [1, 3], data: [1, 2, 3] }] };
  for (const endpoint of ['fraud', 'old']) {
    const reply = await infer(gateway.url, body, {}, endpoint);
    assert.equal(reply.status, 400, reply.text);
    assert.match(String((reply.json as { error: string }).error), /unknown input 'z'/);
  }
  assert.equal(worker.received.length, 0);
});

test('v1 worker errors pass through as {"error", "code"}; several outputs become one object a row', async () => {
  const failing = await fakeWorker(
    'ok',
    { error: 'inference failed: boom', code: 'KILN_INFERENCE_FAILED' },
    500,
  );
  const twoOutputs = await fakeWorker('ok', {
    model_name: 'm',
    outputs: [
      { name: 'label', datatype: 'INT64', shape: [2], data: [1, 2] },
      { name: 'probabilities', datatype: 'FP32', shape: [2, 2], data: [0.5, 0.5, null, 0] },
    ],
  });
  const gateway = await testGateway(
    snapshot(1, [
      endpointRoute({ name: 'failing', replicas: [replicaRoute(failing, 'f1')] }),
      endpointRoute({ name: 'two', replicas: [replicaRoute(twoOutputs, 't1')] }),
    ]),
  );
  const failed = await predict(gateway.url, { instances: [[1, 2, 3]] }, 'failing');
  assert.equal(failed.status, 500);
  assert.deepEqual(failed.json, { error: 'inference failed: boom', code: 'KILN_INFERENCE_FAILED' });
  const two = await predict(
    gateway.url,
    {
      instances: [
        [1, 2, 3],
        [4, 5, 6],
      ],
    },
    'two',
  );
  assert.equal(two.status, 200, two.text);
  assert.equal(
    two.text,
    '{"predictions":[{"label":1,"probabilities":[0.5,0.5]},{"label":2,"probabilities":[null,0]}]}',
  );
});

test('v1 takes the same door as v2: authentication, scope, the concurrency limit, the version', async () => {
  const sha = (key: string): string => createHash('sha256').update(key).digest('hex');
  const worker = await fakeWorker('hold');
  const gateway = await testGateway(
    snapshot(1, [endpointRoute({ maxConcurrency: 1, replicas: [replicaRoute(worker, 'r1')] })], {
      auth: 'api-keys',
      apiKeys: [
        { id: 'k1', sha256: sha('good'), team: 'risk', endpoint: null },
        { id: 'k2', sha256: sha('other'), team: null, endpoint: 'churn' },
      ],
    }),
  );
  const body = JSON.stringify({ instances: [[1, 2, 3]] });
  const path = '/v1/models/fraud:predict';
  assert.equal((await call(gateway.url, 'POST', path, body)).status, 401);
  assert.equal((await call(gateway.url, 'GET', '/v1/models/fraud')).status, 401);
  const key = { authorization: 'Bearer good' };
  assert.equal((await call(gateway.url, 'POST', path, body, { 'x-api-key': 'other' })).status, 403);
  const wrongVersion = await call(
    gateway.url,
    'POST',
    '/v1/models/fraud/versions/2:predict',
    body,
    key,
  );
  assert.equal(codeOf(wrongVersion), 'KILN_VERSION_NOT_SERVED');
  const status = await call(gateway.url, 'GET', '/v1/models/fraud', undefined, key);
  assert.deepEqual(status.json, { name: 'fraud', ready: true });

  const held = call(gateway.url, 'POST', path, body, key);
  await worker.waitForRequests(1);
  const busy = await call(gateway.url, 'POST', path, body, key);
  assert.equal(busy.status, 429);
  assert.equal(codeOf(busy), 'KILN_ENDPOINT_BUSY');
  worker.behavior = 'ok';
  worker.release();
  assert.equal((await held).status, 200);
  const metrics = await gateway.metricsText();
  assert.match(metrics, /kiln_gateway_rejected_total\{endpoint="fraud",reason="busy"\} 1\n/);
});

test('/v1 paths of an LLM endpoint, and GET /v1/models, belong to the OpenAI routes', async () => {
  const worker = await fakeWorker('ok');
  const gateway = await testGateway(
    snapshot(1, [
      endpointRoute({ name: 'chat', format: 'hf-llm', replicas: [replicaRoute(worker, 'c1')] }),
    ]),
  );
  const predicted = await predict(gateway.url, { instances: [[1, 2, 3]] }, 'chat');
  assert.equal(codeOf(predicted), 'KILN_ROUTE_NOT_FOUND');
  // The OpenAI model object, and the OpenAI list, not KServe v1's status.
  const model = (await call(gateway.url, 'GET', '/v1/models/chat')).json as Record<string, unknown>;
  assert.equal(model.id, 'chat');
  assert.equal(model.object, 'model');
  const list = (await call(gateway.url, 'GET', '/v1/models')).json as {
    data: Array<{ id: string }>;
  };
  assert.deepEqual(
    list.data.map((m) => m.id),
    ['chat'],
  );
  assert.equal(
    codeOf(await call(gateway.url, 'POST', '/v1/models/chat:explain', '{}')),
    'KILN_ROUTE_NOT_FOUND',
  );
  // The replica is only asked for its own model list (the context length it serves).
  assert.deepEqual(
    worker.received.filter((r) => !(r.method === 'GET' && r.url === '/v1/models')),
    [],
  );
});

test('a snapshot with a malformed inputNaming is refused', () => {
  const route = endpointRoute({ replicas: [] });
  const bad = [
    { declared: 'no', featureNames: null },
    { declared: true, featureNames: [1] },
  ];
  for (const inputNaming of bad) {
    const check = checkRoutingSnapshot(snapshot(1, [{ ...route, inputNaming } as never]));
    assert.equal(check.ok, false);
  }
  assert.equal(checkRoutingSnapshot(snapshot(1, [{ ...route, inputNaming: features }])).ok, true);
});

test('a body that arrives across a new version is checked and rewritten for the version it goes to', async () => {
  // v3's features are a, b, c; v4 (a retrained model) has them as c, b, a. A v1 row keyed by
  // name that was uploading when v4 took over must reach v4's worker in v4's order.
  const old = await fakeWorker('ok');
  const next = await fakeWorker('ok');
  const route = (version: number, names: string[], worker: typeof old) =>
    snapshot(version, [
      endpointRoute({
        version,
        inputNaming: { declared: false, featureNames: names },
        replicas: [replicaRoute(worker, `r${version}`, version)],
      }),
    ]);
  const gateway = await testGateway(route(3, ['a', 'b', 'c'], old));
  const body = JSON.stringify({ instances: [{ a: 1, b: 2, c: 3 }] });
  const { port, hostname } = new URL(gateway.url);
  const socket = connect(Number(port), hostname);
  socket.on('error', () => undefined);
  let answer = '';
  socket.on('data', (chunk: Buffer) => (answer += chunk.toString()));
  socket.write(
    `POST /v1/models/fraud:predict HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body.slice(0, 5)}`,
  );
  await until(
    async () =>
      /kiln_gateway_inflight_requests\{endpoint="fraud"\} 1\n/.test(await gateway.metricsText()),
    'the upload received',
  );
  assert.equal(gateway.setSnapshot(route(4, ['c', 'b', 'a'], next)), true);
  socket.write(body.slice(5));
  await until(() => /\r\n\r\n/.test(answer), 'the answer');
  socket.destroy();
  assert.match(answer, /^HTTP\/1\.1 200/);
  assert.equal(old.received.length, 0);
  assert.deepEqual(JSON.parse(next.received.at(-1)?.body.toString() ?? ''), {
    inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 3], data: [3, 2, 1] }],
  });
});
