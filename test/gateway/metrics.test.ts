import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  call,
  endpointRoute,
  fakeWorker,
  infer,
  replicaRoute,
  snapshot,
  testGateway,
} from './gateway-harness.ts';

test('/metrics exposes request counts, durations, in-flight requests and the snapshot version', async () => {
  const worker = await fakeWorker();
  const gateway = await testGateway(
    snapshot(7, [endpointRoute({ replicas: [replicaRoute(worker, 'r1')] })]),
  );
  await infer(gateway.url);
  await infer(gateway.url);
  await infer(gateway.url, '{"inputs": 3}');
  await infer(gateway.url, undefined, {}, 'nope');
  await infer(gateway.url, undefined, {}, 'another-unknown');
  await call(gateway.url, 'GET', '/v2/models/fraud'); // metadata is not counted

  worker.behavior = 'hold';
  const held = infer(gateway.url);
  await worker.waitForRequests(3);
  const during = await call(gateway.url, 'GET', '/metrics');
  assert.match(during.text, /^kiln_gateway_inflight_requests\{endpoint="fraud"\} 1$/m);
  worker.release();
  assert.equal((await held).status, 200);

  const reply = await call(gateway.url, 'GET', '/metrics');
  assert.equal(reply.status, 200);
  assert.match(reply.headers.get('content-type') ?? '', /^text\/plain/);
  const text = reply.text;
  const expected = [
    /^kiln_gateway_requests_total\{endpoint="fraud",version="3",code="200"\} 3$/m,
    /^kiln_gateway_requests_total\{endpoint="fraud",version="3",code="400"\} 1$/m,
    /^kiln_gateway_requests_total\{endpoint="_unknown",version="_unknown",code="404"\} 2$/m,
    /^kiln_gateway_request_duration_seconds_count\{endpoint="fraud",version="3"\} 4$/m,
    /^kiln_gateway_request_duration_seconds_bucket\{le="0\.0005",endpoint="fraud",version="3"\} \d+$/m,
    /^kiln_gateway_inflight_requests\{endpoint="fraud"\} 0$/m,
    /^kiln_gateway_snapshot_version 7$/m,
    /^# TYPE kiln_gateway_upstream_errors_total counter$/m,
  ];
  for (const pattern of expected) assert.match(text, pattern);
  // Only the gateway's own registry: no default process metrics from prom-client's global one.
  assert.doesNotMatch(text, /process_cpu/);
});
