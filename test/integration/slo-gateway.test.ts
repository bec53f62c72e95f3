// SLIs from a real gateway (issue 15, F): the gateway process counts its answers to an endpoint
// with an SLO, 5xx included, in its load reports; the control plane's SLO service turns them
// into the endpoint's availability SLI (GET …/slo), without any worker involved: an endpoint
// with no replica answers 503 (no replica), which is a server error the SLO counts.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { call, registerFixture, testPlatform } from '../helpers/platform.ts';
import { until } from '../helpers/until.ts';

void test('a gateway reports its 5xx answers and the SLO counts them as bad', async () => {
  const platform = await testPlatform({ gateway: true });
  const slo = platform.observability.slo;
  assert.ok(slo !== undefined);
  await registerFixture(platform.url, 'm', 'onnx', 'mlp.onnx');
  const deployed = await call(platform.url, 'PUT', '/api/v1/endpoints/e', {
    model: 'm',
    version: 1,
    replicas: 0,
    config: { observability: { slo: { availability: 0.99 } } },
  });
  assert.equal(deployed.status, 201, JSON.stringify(deployed.body));
  const statuses: number[] = [];
  await until(async () => {
    const reply = await fetch(`${platform.gatewayUrl}/v2/models/e/infer`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        inputs: [{ name: 'input', datatype: 'FP32', shape: [1, 4], data: [0, 1, 2, 3] }],
      }),
    });
    await reply.arrayBuffer();
    statuses.push(reply.status);
    return reply.status !== 404;
  }, 'the gateway to route endpoint e');
  for (let i = 0; i < 5; i += 1) {
    const reply = await fetch(`${platform.gatewayUrl}/v2/models/e/infer`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        inputs: [{ name: 'input', datatype: 'FP32', shape: [1, 4], data: [0, 1, 2, 3] }],
      }),
    });
    await reply.arrayBuffer();
    statuses.push(reply.status);
  }
  const served = statuses.filter((s) => s !== 404);
  const bad = served.filter((s) => s >= 500).length;
  let windows: { window: string; total: number; bad: number }[] = [];
  await until(
    async () => {
      await slo.tick();
      const status = await call(platform.url, 'GET', '/api/v1/endpoints/e/slo');
      const body = status.body as { slis: { sli: string; windows: typeof windows }[] };
      windows = body.slis.find((s) => s.sli === 'availability')?.windows ?? [];
      return (windows[0]?.total ?? 0) >= served.length;
    },
    'the gateway reports to reach the SLO',
    100,
  );
  assert.deepEqual(statuses.slice(-5), [503, 503, 503, 503, 503], JSON.stringify(statuses));
  assert.deepEqual(
    { total: windows[0]?.total, bad: windows[0]?.bad },
    { total: served.length, bad },
  );
});
