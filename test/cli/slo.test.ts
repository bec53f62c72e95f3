// SLOs over HTTP and the CLI (issue 15, F): an SLO set at deploy (checked, each field named),
// gateway load reports carrying 5xx counts, one evaluation, then GET …/slo, the Prometheus
// rules and /metrics; `kiln slo status|rules` as real processes against an in-process platform.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HistogramSketch } from '../../src/traffic/histogram-sketch.ts';
import { call, errorCode, registerFixture, testPlatform } from '../helpers/platform.ts';
import { Cli } from './cli-harness.ts';

function report(endpoint: string, completed: number, serverErrors: number): object {
  const now = Date.now();
  const latency = new HistogramSketch();
  for (let i = 0; i < completed - serverErrors; i += 1) latency.add(12);
  return {
    gateway: 'gw-test',
    windowStart: new Date(now - 1000).toISOString(),
    windowEnd: new Date(now).toISOString(),
    endpoints: [
      {
        endpoint,
        arrivals: completed,
        completed,
        concurrencyMean: 0.5,
        concurrencyMax: 1,
        held: 0,
        latencyMs: latency.snapshot(),
        serverErrors,
      },
    ],
  };
}

void test('an SLO set at deploy is evaluated from gateway reports: status, rules, metrics, CLI', async () => {
  const platform = await testPlatform();
  const slo = platform.observability.slo;
  assert.ok(slo !== undefined);
  await registerFixture(platform.url, 'm', 'onnx', 'mlp.onnx');
  const deploy = (name: string, observability?: object) =>
    call(platform.url, 'PUT', `/api/v1/endpoints/${name}`, {
      model: 'm',
      version: 1,
      replicas: 0,
      config: observability === undefined ? {} : { observability },
    });
  const bad = await deploy('e', { slo: { availability: 99.9 } });
  assert.equal(bad.status, 400);
  assert.equal(errorCode(bad), 'KILN_OBSERVABILITY_INVALID');
  assert.match(JSON.stringify(bad.body), /slo: availability must be a number in \(0, 1\)/);
  const badHook = await deploy('e', { slo: { availability: 0.999, webhooks: ['file:///x'] } });
  assert.match(
    JSON.stringify(badHook.body),
    /slo: webhooks\[0\] .* must be an http: or https: URL/,
  );
  const deployed = await deploy('e', { slo: { availability: 0.999, latencyMs: 100 } });
  assert.equal(deployed.status, 201, JSON.stringify(deployed.body));
  assert.equal((await deploy('plain')).status, 201);

  // Half the answers failed: burn 500 over the 0.1 % budget in every window → both alerts.
  const sent = await call(platform.url, 'POST', '/api/v1/scaling/reports', report('e', 100, 50));
  assert.equal(sent.status, 202, JSON.stringify(sent.body));
  await slo.tick();

  const status = await call(platform.url, 'GET', '/api/v1/endpoints/e/slo');
  assert.equal(status.status, 200, JSON.stringify(status.body));
  const body = status.body as {
    slo: { latencyTarget: number };
    slis: { sli: string; windows: { window: string; total: number; bad: number }[] }[];
    alerts: { alert: string; state: string }[];
  };
  assert.equal(body.slo.latencyTarget, 0.99);
  const availability = body.slis.find((s) => s.sli === 'availability');
  assert.deepEqual(
    availability?.windows.map((w) => [w.window, w.total, w.bad]),
    [
      ['5m', 100, 50],
      ['30m', 100, 50],
      ['1h', 100, 50],
      ['6h', 100, 50],
    ],
  );
  assert.deepEqual(
    body.alerts.map((a) => `${a.alert} ${a.state}`),
    ['availability-page firing', 'availability-ticket firing'],
  );
  const plain = await call(platform.url, 'GET', '/api/v1/endpoints/plain/slo');
  assert.deepEqual([plain.status, errorCode(plain)], [404, 'KILN_SLO_NOT_SET']);
  const missing = await call(platform.url, 'GET', '/api/v1/endpoints/nope/slo');
  assert.deepEqual([missing.status, errorCode(missing)], [404, 'KILN_ENDPOINT_NOT_FOUND']);

  const rules = await fetch(`${platform.url}/api/v1/slo/rules`);
  assert.equal(rules.status, 200);
  assert.match(rules.headers.get('content-type') ?? '', /^application\/yaml/);
  const yaml = await rules.text();
  assert.match(yaml, /- alert: KilnAvailabilityBurnRatePage\n/);
  assert.match(yaml, /endpoint="e"/);
  assert.doesNotMatch(yaml, /endpoint="plain"/);
  const metrics = await (await fetch(`${platform.url}/metrics`)).text();
  assert.match(
    metrics,
    /kiln_slo_alert_firing\{endpoint="e",alert="availability-page",severity="page"\} 1/,
  );
  assert.match(
    metrics,
    /kiln_slo_burn_rate\{endpoint="e",sli="availability",window="5m"\} (500|499\.99)/,
  );

  const cli = new Cli(platform.url, platform.home);
  const text = await cli.ok(['slo', 'status', 'e']);
  assert.match(text, /^objectives: +availability 0\.999, latency 0\.99 within 100 ms$/m);
  assert.match(text, /^availability +0\.999 +500\.00 +500\.00 +500\.00 +500\.00 +-49900\.0 %$/m);
  assert.match(text, /^availability-page +page +firing /m);
  const printed = await cli.ok(['slo', 'rules', 'e']);
  assert.equal(printed, yaml);
  const refused = await cli.fails(['slo', 'status', 'plain'], 1);
  assert.match(refused, /KILN_SLO_NOT_SET/);
});
