// Capacity isolation at the gateway: per-endpoint concurrency limits (429 KILN_ENDPOINT_BUSY)
// and per-team token buckets (429 KILN_RATE_LIMITED), refused before any body is read.
// Workers that hold requests open make "in flight" exact; no timing is asserted.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkRoutingSnapshot } from '../../src/gateway/snapshot-check.ts';
import {
  endpointRoute,
  fakeWorker,
  infer,
  replicaRoute,
  snapshot,
  testGateway,
  type Reply,
} from './gateway-harness.ts';

function codeOf(reply: Reply): string | undefined {
  return (reply.json as { code?: string } | undefined)?.code;
}

test('an endpoint at its concurrency limit answers 429 KILN_ENDPOINT_BUSY with Retry-After, and lets requests in again once they finish', async () => {
  const worker = await fakeWorker('hold');
  const gateway = await testGateway(
    snapshot(1, [endpointRoute({ maxConcurrency: 2, replicas: [replicaRoute(worker, 'r1')] })]),
  );
  const held = [infer(gateway.url), infer(gateway.url)];
  await worker.waitForRequests(2);

  const busy = await infer(gateway.url);
  assert.equal(busy.status, 429);
  assert.equal(codeOf(busy), 'KILN_ENDPOINT_BUSY');
  assert.equal(busy.headers.get('retry-after'), '1');
  assert.equal(busy.headers.get('kiln-endpoint'), 'fraud');
  assert.equal(worker.received.length, 2); // the refused request never reached the worker

  worker.behavior = 'ok';
  worker.release();
  for (const reply of await Promise.all(held)) assert.equal(reply.status, 200);
  const again = await infer(gateway.url);
  assert.equal(again.status, 200);

  const metrics = await gateway.metricsText();
  assert.match(metrics, /kiln_gateway_rejected_total\{endpoint="fraud",reason="busy"\} 1\n/);
  assert.match(metrics, /kiln_gateway_requests_total\{endpoint="fraud",version="3",code="429"\} 1/);
});

test('a flood on endpoint A, held open beyond its limit, leaves every request to endpoint B successful', async () => {
  const workerA = await fakeWorker('hold');
  const workerB = await fakeWorker('ok');
  const gateway = await testGateway(
    snapshot(1, [
      endpointRoute({ name: 'a', maxConcurrency: 4, replicas: [replicaRoute(workerA, 'a1')] }),
      endpointRoute({ name: 'b', maxConcurrency: 4, replicas: [replicaRoute(workerB, 'b1')] }),
    ]),
  );
  // Every flood request beyond the four held ones is answered before anything is released
  // (so none can slip into a freed slot later).
  let answered = 0;
  let allRefused: () => void = () => undefined;
  const refusedSeen = new Promise<void>((resolve) => (allRefused = resolve));
  const flood = Array.from({ length: 40 }, () =>
    infer(gateway.url, undefined, {}, 'a').then((reply) => {
      if (++answered === 36) allRefused();
      return reply;
    }),
  );
  await workerA.waitForRequests(4);
  await refusedSeen;

  // While A's four slots are held, B is served in full, in bursts at its own limit.
  for (let round = 0; round < 5; round++) {
    const replies = await Promise.all(
      Array.from({ length: 4 }, () => infer(gateway.url, undefined, {}, 'b')),
    );
    for (const reply of replies) assert.equal(reply.status, 200, reply.text);
  }
  assert.equal(workerB.received.length, 20);

  workerA.release();
  const replies = await Promise.all(flood);
  const ok = replies.filter((r) => r.status === 200).length;
  const busy = replies.filter((r) => r.status === 429 && codeOf(r) === 'KILN_ENDPOINT_BUSY');
  assert.equal(ok, 4);
  assert.equal(busy.length, 36);
  assert.equal(workerA.received.length, 4);
  const metrics = await gateway.metricsText();
  assert.match(metrics, /kiln_gateway_rejected_total\{endpoint="a",reason="busy"\} 36\n/);
  assert.doesNotMatch(metrics, /kiln_gateway_rejected_total\{endpoint="b"/);
});

test('a team over its rate answers 429 KILN_RATE_LIMITED with Retry-After; other teams are not charged', async () => {
  const worker = await fakeWorker('ok');
  const gateway = await testGateway(
    snapshot(
      1,
      [
        endpointRoute({ name: 'fraud', team: 'risk', replicas: [replicaRoute(worker, 'r1')] }),
        endpointRoute({ name: 'churn', team: 'risk', replicas: [replicaRoute(worker, 'r1')] }),
        endpointRoute({ name: 'recs', team: 'growth', replicas: [replicaRoute(worker, 'r1')] }),
      ],
      // One token per 100 s: no refill during the test.
      { teamLimits: [{ team: 'risk', requestsPerSecond: 0.01, burst: 3 }] },
    ),
  );
  // The burst is shared by the team's endpoints.
  assert.equal((await infer(gateway.url, undefined, {}, 'fraud')).status, 200);
  assert.equal((await infer(gateway.url, undefined, {}, 'churn')).status, 200);
  assert.equal((await infer(gateway.url, undefined, {}, 'fraud')).status, 200);
  const limited = await infer(gateway.url, undefined, {}, 'churn');
  assert.equal(limited.status, 429);
  assert.equal(codeOf(limited), 'KILN_RATE_LIMITED');
  const retryAfter = Number(limited.headers.get('retry-after'));
  assert.ok(retryAfter > 1 && retryAfter <= 100, `Retry-After ${retryAfter}`);
  assert.equal(worker.received.length, 3);

  for (let i = 0; i < 5; i++) {
    assert.equal((await infer(gateway.url, undefined, {}, 'recs')).status, 200);
  }
  const metrics = await gateway.metricsText();
  assert.match(
    metrics,
    /kiln_gateway_rejected_total\{endpoint="churn",reason="rate_limited"\} 1\n/,
  );
});

test('limits survive a new snapshot: held slots and spent tokens are kept, removed limits lift', async () => {
  const worker = await fakeWorker('hold');
  const spare = await fakeWorker('hold');
  const teamLimits = [{ team: 'growth', requestsPerSecond: 0.01, burst: 1 }];
  const routes = (version: number, replicas: ReturnType<typeof replicaRoute>[]) =>
    snapshot(
      version,
      [
        endpointRoute({ name: 'fraud', maxConcurrency: 1, version, replicas }),
        endpointRoute({ name: 'recs', team: 'growth', replicas: [replicaRoute(spare, 's1')] }),
      ],
      { teamLimits },
    );
  const gateway = await testGateway(routes(3, [replicaRoute(worker, 'r1')]));
  spare.behavior = 'ok';
  assert.equal((await infer(gateway.url, undefined, {}, 'recs')).status, 200);
  assert.equal(codeOf(await infer(gateway.url, undefined, {}, 'recs')), 'KILN_RATE_LIMITED');
  const held = infer(gateway.url);
  await worker.waitForRequests(1);

  // A new snapshot (another version, another replica list) keeps both.
  assert.equal(gateway.setSnapshot(routes(4, [replicaRoute(worker, 'r1', 4)])), true);
  assert.equal(codeOf(await infer(gateway.url)), 'KILN_ENDPOINT_BUSY');
  assert.equal(codeOf(await infer(gateway.url, undefined, {}, 'recs')), 'KILN_RATE_LIMITED');

  worker.behavior = 'ok';
  worker.release();
  assert.equal((await held).status, 200);
  assert.equal((await infer(gateway.url)).status, 200);

  // With the limit lifted (a large derived bound), both endpoints are open.
  const open = snapshot(5, [
    endpointRoute({ name: 'fraud', version: 4, replicas: [replicaRoute(worker, 'r1', 4)] }),
    endpointRoute({ name: 'recs', team: 'growth', replicas: [replicaRoute(spare, 's1')] }),
  ]);
  assert.equal(gateway.setSnapshot(open), true);
  assert.equal((await infer(gateway.url, undefined, {}, 'recs')).status, 200);
});

test('snapshots without the limit fields (an older control plane or file): no team limits, a bound derived from the replicas; bad limits are refused', () => {
  const old = {
    version: 1,
    generatedAt: '',
    auth: 'dev',
    apiKeys: [],
    endpoints: [
      {
        name: 'e',
        team: 't',
        model: 'm',
        version: 1,
        format: 'onnx',
        schema: null,
        maxBodyBytes: 10,
        replicas: [],
      },
    ],
  };
  const checked = checkRoutingSnapshot(old);
  assert.ok(checked.ok);
  assert.deepEqual(checked.snapshot.teamLimits, []);
  // Derived as for workers without batching: 64 a replica, one replica's worth with none.
  assert.equal(checked.snapshot.endpoints[0]?.maxConcurrency, 64);
  assert.equal(checked.snapshot.endpoints[0]?.maxConcurrencySource, 'derived');
  const replica = { id: 'r', url: 'http://127.0.0.1:1', version: 1 };
  const twoReplicas = checkRoutingSnapshot({
    ...old,
    endpoints: [{ ...old.endpoints[0], maxConcurrency: null, replicas: [replica, replica] }],
  });
  assert.ok(twoReplicas.ok);
  assert.equal(twoReplicas.snapshot.endpoints[0]?.maxConcurrency, 128);
  const configured = checkRoutingSnapshot({
    ...old,
    endpoints: [{ ...old.endpoints[0], maxConcurrency: 5 }],
  });
  assert.ok(configured.ok);
  assert.equal(configured.snapshot.endpoints[0]?.maxConcurrencySource, 'configured');
  const badSource = { ...old, endpoints: [{ ...old.endpoints[0], maxConcurrencySource: 'x' }] };
  assert.equal(checkRoutingSnapshot(badSource).ok, false);

  const badConcurrency = { ...old, endpoints: [{ ...old.endpoints[0], maxConcurrency: 0 }] };
  assert.equal(checkRoutingSnapshot(badConcurrency).ok, false);
  for (const limit of [
    { team: 't', requestsPerSecond: 0, burst: 1 },
    { team: 't', requestsPerSecond: 1, burst: 0 },
    { team: 't', requestsPerSecond: 1, burst: 1.5 },
    { requestsPerSecond: 1, burst: 1 },
  ]) {
    assert.equal(checkRoutingSnapshot({ ...old, teamLimits: [limit] }).ok, false);
  }
  const good = checkRoutingSnapshot({
    ...old,
    teamLimits: [{ team: 't', requestsPerSecond: 2.5, burst: 5 }],
  });
  assert.ok(good.ok);
  assert.deepEqual(good.snapshot.teamLimits, [{ team: 't', requestsPerSecond: 2.5, burst: 5 }]);
});
