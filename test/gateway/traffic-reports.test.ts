// What the gateway counts for endpoints with a traffic policy and reports to the control
// plane (protocol/traffic/traffic-report.ts), against a stub control plane: per version and
// slice, exactly what was sent; reports that cannot be delivered are dropped and counted,
// never in the way of serving.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compileTrafficSplit } from '../../src/traffic/traffic-split.ts';
import {
  endpointRoute,
  fakeWorker,
  infer,
  replicaRoute,
  snapshot,
  testGateway,
  validRequest,
} from './gateway-harness.ts';
import {
  answerOf,
  policyEndpoint,
  requestsCounted,
  stubControlPlane,
  totals,
  variant,
} from './traffic-harness.ts';

test('counts per version and slice match what was sent: requests, 5xx errors, latencies and outputs of 200s', async () => {
  const control = await stubControlPlane();
  const stable = await fakeWorker('ok', answerOf(0.25, 2));
  const canary = await fakeWorker('ok', { error: 'boom' }, 500);
  const plain = await fakeWorker();
  const gateway = await testGateway(
    snapshot(1, [
      policyEndpoint([variant(stable, 3, 50), variant(canary, 4, 50)], {
        salt: 'rollout-1',
        sliceKey: 'country',
        slicePath: '$.parameters.country',
      }),
      // No policy: nothing of it is counted.
      endpointRoute({ name: 'other', replicas: [replicaRoute(plain, 'p1')] }),
    ]),
    {
      more: {
        controlUrl: control.url,
        controlToken: 'gateway-token',
        reportTraffic: true,
        trafficReportIntervalMs: 50,
      },
    },
  );
  const compiled = compileTrafficSplit({
    endpoint: 'fraud',
    salt: 'rollout-1',
    versions: [
      { model: 'fraud-model', version: 3, weight: 50 },
      { model: 'fraud-model', version: 4, weight: 50 },
    ],
  });
  assert.ok(compiled.ok);
  const split = compiled.split;
  // slice → version → requests sent
  const expected = new Map<string, Map<number, number>>();
  const note = (slice: string, version: number): void => {
    const byVersion = expected.get(slice) ?? new Map<number, number>();
    byVersion.set(version, (byVersion.get(version) ?? 0) + 1);
    expected.set(slice, byVersion);
  };
  let sent = 0;
  for (let i = 0; i < 60; i++) {
    const user = `user-${i}`;
    const version = split.pick(user).version;
    let reply;
    if (i % 3 === 0) {
      // The slice header wins over the body.
      reply = await infer(
        gateway.url,
        { ...validRequest, parameters: { country: 'fr' } },
        { 'kiln-user': user, 'kiln-slice': 'de' },
      );
      note('de', version);
    } else if (i % 3 === 1) {
      reply = await infer(
        gateway.url,
        { ...validRequest, parameters: { country: 'fr' } },
        {
          'kiln-user': user,
        },
      );
      note('fr', version);
    } else {
      reply = await infer(gateway.url, validRequest, { 'kiln-user': user });
      note('', version);
    }
    assert.equal(reply.status, version === 3 ? 200 : 500);
    sent += 1;
  }
  // A 400 (the client's) counts as a request, not an error.
  const bad = await infer(gateway.url, { inputs: [] }, { 'kiln-user': 'user-0' });
  assert.equal(bad.status, 400);
  const badVersion = split.pick('user-0').version;
  sent += 1;
  await infer(gateway.url, validRequest, {}, 'other');

  await control.waitFor((reports) => requestsCounted(reports) === sent);
  const byVersion = totals(control.reports);
  assert.deepEqual([...byVersion.keys()].sort(), ['fraud-model:3', 'fraud-model:4']);
  for (const version of [3, 4]) {
    const t = byVersion.get(`fraud-model:${version}`)!;
    let requests = 0;
    for (const [slice, counts] of expected) {
      const n = counts.get(version) ?? 0;
      requests += n;
      if (slice === '') continue;
      const got = t.slices.get(slice) ?? { requests: 0, errors: 0, outputs: 0 };
      assert.equal(got.requests, n, `${slice} on v${version}`);
      assert.equal(got.errors, version === 4 ? n : 0);
      assert.equal(got.outputs, version === 3 ? 2 * n : 0, 'two rows per 200 answer');
    }
    if (version === badVersion) requests += 1;
    assert.equal(t.requests, requests, `v${version} requests`);
    assert.equal(t.latencies, requests, 'a latency for every counted request');
    const errors = version === 4 ? requests - (badVersion === 4 ? 1 : 0) : 0;
    assert.equal(t.errors, errors, `v${version} errors (5xx only)`);
    assert.equal(t.outputs, version === 3 ? 2 * (requests - (badVersion === 3 ? 1 : 0)) : 0);
    assert.deepEqual([...t.slices.keys()].sort(), ['de', 'fr']);
  }
  // Only endpoints with a policy are reported; reports carry the gateway's token and windows.
  for (const report of control.reports) {
    assert.deepEqual(
      report.endpoints.map((e) => e.endpoint),
      ['fraud'],
    );
    assert.ok(Date.parse(report.windowStart) <= Date.parse(report.windowEnd));
  }
  assert.equal(control.headers[0]!.authorization, 'Bearer gateway-token');
});

for (const channel of [false, true]) {
  test(`the outputs counted are column 0 of the first numeric output, and no more than 256 per answer (${channel ? 'worker channel' : 'HTTP'})`, async () => {
    const control = await stubControlPlane();
    const rows = 300;
    const worker = await fakeWorker(
      'ok',
      {
        model_name: 'fraud',
        outputs: [
          { name: 'label', datatype: 'BYTES', shape: [rows], data: Array(rows).fill('a') },
          {
            name: 'scores',
            datatype: 'FP32',
            shape: [rows, 2],
            data: Array.from({ length: rows }, (_, i) => [i + 1, -1]),
          },
        ],
      },
      200,
      { channel },
    );
    const gateway = await testGateway(snapshot(1, [policyEndpoint([variant(worker, 3, 100)])]), {
      more: { controlUrl: control.url, reportTraffic: true, trafficReportIntervalMs: 50 },
    });
    const reply = await infer(gateway.url);
    assert.equal(reply.status, 200);
    assert.equal(reply.headers.get('kiln-model'), 'fraud-model');
    assert.equal(reply.headers.get('kiln-model-version'), '3');
    assert.equal(worker.received.length, 1);
    await control.waitFor((reports) => requestsCounted(reports) === 1);
    const version = control.reports.flatMap((r) => r.endpoints)[0]!.versions[0]!;
    const outputs = version.overall.outputs;
    assert.equal(outputs.negative.length, 0, 'column 1 (all -1) is not counted');
    const counted = outputs.positive.reduce((sum, [, n]) => sum + n, 0) + outputs.zeroCount;
    assert.equal(counted, 256);
  });
}

test('with the control plane down, reports are dropped and counted while every request is served', async () => {
  const worker = await fakeWorker();
  const gateway = await testGateway(snapshot(1, [policyEndpoint([variant(worker, 3, 100)])]), {
    more: {
      // Nothing listens on the discard port.
      controlUrl: 'http://127.0.0.1:9',
      reportTraffic: true,
      trafficReportIntervalMs: 20,
    },
  });
  const failed = async (): Promise<number> => {
    const text = await gateway.metricsText();
    const match = /kiln_gateway_traffic_reports_total\{outcome="failed"\} (\d+)/.exec(text);
    return match === null ? 0 : Number(match[1]);
  };
  for (let round = 0; round < 3; round++) {
    for (let i = 0; i < 5; i++) assert.equal((await infer(gateway.url)).status, 200);
    const before = await failed();
    while ((await failed()) <= before) await new Promise((resolve) => setTimeout(resolve, 10));
  }
});

test('a control plane that refuses reports gets the next window anyway (nothing piles up)', async () => {
  const control = await stubControlPlane();
  control.status = 503;
  const worker = await fakeWorker();
  const gateway = await testGateway(snapshot(1, [policyEndpoint([variant(worker, 3, 100)])]), {
    more: { controlUrl: control.url, reportTraffic: true, trafficReportIntervalMs: 20 },
  });
  for (let i = 0; i < 4; i++) await infer(gateway.url);
  await control.waitFor((reports) => requestsCounted(reports) === 4);
  const refused = control.reports.length;
  control.status = 204;
  await infer(gateway.url);
  // The refused windows are not sent again: the next reports hold only the new request.
  await control.waitFor((reports) => requestsCounted(reports.slice(refused)) === 1);
  assert.equal(requestsCounted(control.reports), 5);
});
