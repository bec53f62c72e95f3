// Every request that fails the gateway's checks is answered 400/413 and no worker sees it.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  call,
  endpointRoute,
  fakeWorker,
  infer,
  replicaRoute,
  snapshot,
  streamedPost,
  testGateway,
  validRequest,
} from './gateway-harness.ts';

const pairSchema = {
  inputs: [
    { name: 'x', datatype: 'FP32' as const, shape: [-1, 3] },
    { name: 'z', datatype: 'INT64' as const, shape: [-1] },
  ],
  outputs: [{ name: 'y', datatype: 'FP32' as const, shape: [-1, 1] }],
};

const worker = await fakeWorker();
const gateway = await testGateway(
  snapshot(1, [
    endpointRoute({ maxBodyBytes: 1024, replicas: [replicaRoute(worker, 'r1')] }),
    endpointRoute({ name: 'loose', schema: null, replicas: [replicaRoute(worker, 'r1')] }),
    endpointRoute({ name: 'pair', schema: pairSchema, replicas: [replicaRoute(worker, 'r1')] }),
  ]),
);

function tensor(overrides: Record<string, unknown>): { inputs: Record<string, unknown>[] } {
  return { inputs: [{ ...validRequest.inputs[0], ...overrides }] };
}

const invalid: ReadonlyArray<readonly [string, string, unknown, RegExp]> = [
  ['wrong shape', 'fraud', tensor({ shape: [1, 4], data: [1, 2, 3, 4] }), /'x'.*shape/],
  ['wrong rank', 'fraud', tensor({ shape: [3], data: [1, 2, 3] }), /'x'.*shape/],
  ['wrong datatype', 'fraud', tensor({ datatype: 'INT64' }), /'x'.*datatype/],
  ['unknown datatype', 'fraud', tensor({ datatype: 'FLOAT' }), /FLOAT/],
  ['data not matching the shape', 'fraud', tensor({ data: [1, 2] }), /'x'/],
  ['non-numeric data', 'fraud', tensor({ data: [1, 'two', 3] }), /'x'/],
  ['a missing input', 'pair', validRequest, /missing input 'z'/],
  [
    'a missing value (null) in an integer input',
    'pair',
    {
      inputs: [validRequest.inputs[0], { name: 'z', datatype: 'INT64', shape: [1], data: [null] }],
    },
    /'z'/,
  ],
  ['no input at all', 'fraud', { inputs: [] }, /inputs/],
  [
    'an extra input',
    'fraud',
    { inputs: [validRequest.inputs[0], { ...validRequest.inputs[0], name: 'z' }] },
    /unknown input 'z'/,
  ],
  ['no inputs field', 'fraud', { outputs: [] }, /inputs/],
  ['not an object', 'fraud', [1, 2, 3], /./],
  [
    'an unknown requested output',
    'fraud',
    { ...validRequest, outputs: [{ name: 'nope' }] },
    /nope/,
  ],
];

/** The codes the v2 codec answers bad requests with (all 400). */
const requestCodes = new Set([
  'KILN_INVALID_INFER_REQUEST',
  'KILN_INVALID_TENSOR',
  'KILN_INPUT_MISMATCH',
  'KILN_INVALID_JSON',
]);

for (const [what, endpoint, body, mentions] of invalid) {
  test(`400 for ${what}, with the codec's code; the worker receives nothing`, async () => {
    const reply = await infer(gateway.url, body, {}, endpoint);
    assert.equal(reply.status, 400, reply.text);
    const error = reply.json as { error: string; code: string };
    assert.ok(requestCodes.has(error.code), error.code);
    if (
      /datatype|rank|missing input|extra input|requested output/.test(what) &&
      what !== 'unknown datatype'
    ) {
      assert.equal(error.code, 'KILN_INPUT_MISMATCH', what);
    }
    assert.match(error.error, mentions);
    assert.equal(worker.received.length, 0);
  });
}

test('malformed JSON is 400 with the parse error, also without a schema', async () => {
  for (const endpoint of ['fraud', 'loose']) {
    const reply = await infer(gateway.url, '{"inputs": [', {}, endpoint);
    assert.equal(reply.status, 400);
    const error = reply.json as { error: string; code: string };
    assert.equal(error.code, 'KILN_INVALID_JSON');
    assert.match(error.error, /JSON/);
    const empty = await infer(gateway.url, '', {}, endpoint);
    assert.equal(empty.status, 400);
  }
  assert.equal(worker.received.length, 0);
});

test('a body over maxBodyBytes is refused by its Content-Length before it is read', async () => {
  const big = JSON.stringify(tensor({ data: [1, 2, 3], parameters: { pad: 'x'.repeat(2000) } }));
  const reply = await infer(gateway.url, big);
  assert.equal(reply.status, 413);
  const error = reply.json as { error: string; code: string };
  assert.equal(error.code, 'KILN_PAYLOAD_TOO_LARGE');
  assert.match(error.error, /1024/);
  assert.equal(worker.received.length, 0);
});

test('a streamed body (no Content-Length) is counted and refused once past the limit', async () => {
  const chunks = [Buffer.from('{"inputs":['), Buffer.alloc(1500, 0x20), Buffer.from(']}')];
  const reply = await streamedPost(gateway.url, '/v2/models/fraud/infer', chunks);
  assert.equal(reply.status, 413);
  assert.equal((reply.json as { code: string }).code, 'KILN_PAYLOAD_TOO_LARGE');
  assert.equal(worker.received.length, 0);
  // A small streamed body still goes through.
  const ok = await streamedPost(gateway.url, '/v2/models/fraud/infer', [
    Buffer.from(JSON.stringify(validRequest)),
  ]);
  assert.equal(ok.status, 200);
  assert.equal(worker.received.length, 1);
  worker.received.length = 0;
});

test('valid requests pass, and an endpoint without a schema forwards any well-formed v2 request', async () => {
  assert.equal((await infer(gateway.url)).status, 200);
  const loose = await infer(
    gateway.url,
    tensor({ name: 'anything', shape: [3], data: [1, 2, 3] }),
    {},
    'loose',
  );
  assert.equal(loose.status, 200);
  assert.equal(worker.received.length, 2);
  worker.received.length = 0;
});

test('the gateway still answers on a connection that carried a refused body', async () => {
  const reply = await call(gateway.url, 'GET', '/v2/health/ready');
  assert.equal(reply.status, 200);
});

test('a bare NaN token (as Python sends) is a missing value for floats but refused for integers', async () => {
  const int =
    '{"inputs":[{"name":"x","datatype":"FP32","shape":[1,3],"data":[1,NaN,3]},' +
    '{"name":"z","datatype":"INT64","shape":[1],"data":[NaN]}]}';
  const before = worker.received.length;
  const reply = await infer(gateway.url, int, {}, 'pair');
  assert.equal(reply.status, 400, reply.text);
  assert.match((reply.json as { error: string }).error, /'z'/);
  assert.equal(worker.received.length, before);
  const float = '{"inputs":[{"name":"x","datatype":"FP32","shape":[1,3],"data":[1,NaN,Infinity]}]}';
  assert.equal((await infer(gateway.url, float, {}, 'fraud')).status, 200);
});
