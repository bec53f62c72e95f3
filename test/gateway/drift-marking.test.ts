// The gateway's drift marking (issue 15) over plain HTTP to the worker: an endpoint whose
// snapshot route has `drift` gets `kiln-drift: 1` and its slice (the `kiln-slice` header, else
// the value at slicePath) on the requests it sends; one without gets neither; at most
// maxRequestsPerSecond are marked (a token bucket, burst one second's worth).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import {
  endpointRoute,
  fakeWorker,
  infer,
  replicaRoute,
  snapshot,
  testGateway,
} from './gateway-harness.ts';

const request = (country: string) => ({
  inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 3], data: [1, 2, 3] }],
  parameters: { country },
});

test('requests of a drift endpoint carry the mark and their slice; others carry neither', async () => {
  const worker = await fakeWorker();
  const plainWorker = await fakeWorker();
  const gateway = await testGateway(
    snapshot(1, [
      endpointRoute({
        replicas: [replicaRoute(worker, 'r1')],
        drift: {
          sliceKey: 'country',
          slicePath: '$.parameters.country',
          maxRequestsPerSecond: null,
        },
      }),
      endpointRoute({ name: 'plain', replicas: [replicaRoute(plainWorker, 'p1')] }),
    ]),
    { workerChannels: false },
  );
  assert.equal((await infer(gateway.url, request('fr'))).status, 200);
  assert.equal((await infer(gateway.url, request('fr'), { 'kiln-slice': 'de' })).status, 200);
  assert.equal((await infer(gateway.url, { inputs: request('x').inputs })).status, 200);
  assert.equal((await infer(gateway.url, request('fr'), {}, 'plain')).status, 200);
  const marks = worker.received.map((r) => [r.headers['kiln-drift'], r.headers['kiln-slice']]);
  assert.deepEqual(marks, [
    ['1', 'fr'],
    ['1', 'de'],
    ['1', undefined],
  ]);
  const plain = plainWorker.received[0]!.headers;
  assert.equal(plain['kiln-drift'], undefined);
  assert.equal(plain['kiln-slice'], undefined);
});

test('at most maxRequestsPerSecond requests are marked', async () => {
  const worker = await fakeWorker();
  const gateway = await testGateway(
    snapshot(1, [
      endpointRoute({
        replicas: [replicaRoute(worker, 'r1')],
        drift: { sliceKey: null, slicePath: null, maxRequestsPerSecond: 2 },
      }),
    ]),
    { workerChannels: false },
  );
  const began = performance.now();
  const sent = 20;
  const replies = await Promise.all(
    Array.from({ length: sent }, () => infer(gateway.url, request('fr'))),
  );
  const seconds = (performance.now() - began) / 1000;
  assert.ok(replies.every((r) => r.status === 200));
  const marked = worker.received.filter((r) => r.headers['kiln-drift'] === '1').length;
  // The burst (2), plus what the bucket refilled while they were sent (2 a second).
  assert.ok(marked >= 2, `${marked} marked`);
  assert.ok(marked <= 2 + Math.ceil(2 * seconds), `${marked} marked in ${seconds} s`);
  // No slice key: a client's kiln-slice header is not passed on either.
  const more = await infer(gateway.url, request('fr'), { 'kiln-slice': 'de' });
  assert.equal(more.status, 200);
  assert.ok(worker.received.every((r) => r.headers['kiln-slice'] === undefined));
});

test('a body read for its slice is checked as any other: same verdicts, NaN allowed', async () => {
  // The gateway parses a drift endpoint's body once for the slice path and checks that
  // parse, rather than parsing again: the answers must be those of an endpoint without drift.
  const worker = await fakeWorker();
  const plainWorker = await fakeWorker();
  const gateway = await testGateway(
    snapshot(1, [
      endpointRoute({
        replicas: [replicaRoute(worker, 'r1')],
        drift: {
          sliceKey: 'country',
          slicePath: '$.parameters.country',
          maxRequestsPerSecond: null,
        },
      }),
      endpointRoute({ name: 'plain', replicas: [replicaRoute(plainWorker, 'p1')] }),
    ]),
    { workerChannels: false },
  );
  const bad = [
    '{"inputs": [',
    JSON.stringify({
      inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 2], data: [1, 2] }],
      parameters: { country: 'fr' },
    }),
    JSON.stringify({ parameters: { country: 'fr' } }),
  ];
  for (const body of bad) {
    const drift = await infer(gateway.url, body);
    const plain = await infer(gateway.url, body, {}, 'plain');
    assert.equal(drift.status, 400, body);
    assert.deepEqual(drift.json, plain.json, body);
  }
  assert.equal(worker.received.length, 0);
  const withNan =
    '{"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 3], "data": [NaN, 2, 3]}],' +
    ' "parameters": {"country": "fr"}}';
  assert.equal((await infer(gateway.url, withNan)).status, 200);
  const sent = worker.received[0]!;
  assert.equal(sent.headers['kiln-drift'], '1');
  assert.equal(sent.headers['kiln-slice'], 'fr');
});
