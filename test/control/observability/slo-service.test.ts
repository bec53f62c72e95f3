// The control plane's SLO evaluator end to end on an injected clock: a gateway's real load
// counter measures a synthetic error series, its reports go through the report check into the
// service, and each minute's evaluation fires and resolves the burn-rate alerts at the minutes
// a hand computation gives, writes them to the store and POSTs them to the webhooks — one of
// which hangs, without holding the evaluation back.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Registry as MetricsRegistry } from 'prom-client';
import { SloService, latestDriftOf } from '../../../src/control/observability/slo/slo-service.ts';
import { driftReadingsOf } from '../../../src/observability/slo/drift-readings.ts';
import { checkLoadReport } from '../../../src/control/autoscale/load-report-check.ts';
import { LoadCounter } from '../../../src/gateway/load-counter.ts';
import { SqliteStore } from '../../../src/store/sqlite/sqlite-store.ts';
import { KilnError } from '../../../src/core/errors.ts';
import { FakeClock, tempDir } from '../../helpers/temp-dir.ts';
import { placeholderVersion } from '../../helpers/stored-version.ts';
import { until } from '../../helpers/until.ts';

const minute = 60_000;

async function webhookReceiver(t: { after: (fn: () => Promise<void>) => void }) {
  const bodies: { alert: string; state: string; endpoint: string; kind: string }[] = [];
  const hanging: ServerResponse[] = [];
  let hangHits = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.url === '/hang') {
        hangHits += 1;
        hanging.push(res);
        return;
      }
      bodies.push(JSON.parse(Buffer.concat(chunks).toString('utf8')) as (typeof bodies)[number]);
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(async () => {
    for (const res of hanging) res.destroy();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, bodies, hangHits: () => hangHits };
}

test('a synthetic error series fires and resolves the burn-rate alerts, stored and sent to webhooks; a hanging webhook holds nothing', async (t) => {
  const hooks = await webhookReceiver(t);
  const dir = await tempDir();
  const clock = new FakeClock(Date.parse('2026-12-01T00:00:00.000Z'));
  const store = SqliteStore.open(join(dir, 'kiln.db'), { clock });
  t.after(() => store.close());
  await store.createModel({ name: 'iris', team: 'default', description: '' });
  await store.createVersion('iris', placeholderVersion());
  const endpoint = (name: string, observability: object) =>
    store.putEndpoint({
      name,
      team: 'default',
      model: 'iris',
      version: 1,
      ref: '1',
      replicas: 1,
      config: { observability },
    });
  await endpoint('iris', {
    slo: {
      availability: 0.999,
      latencyMs: 100,
      latencyTarget: 0.99,
      driftPsiCeiling: null,
      webhooks: [`${hooks.url}/hang`, `${hooks.url}/alerts`],
    },
  });
  await endpoint('plain', {});
  const metrics = new MetricsRegistry();
  const lines: string[] = [];
  const slo = new SloService({ store, clock, metrics, log: (line) => lines.push(line) });
  t.after(() => slo.close());

  // The gateway's counter on the same clock: 100 answers a minute (5 ms each), 20 of them 503
  // in minutes [60, 70) — 20 % errors, burn 200 over the 0.1 % budget. One report a minute.
  const counter = new LoadCounter(
    () => 0,
    () => clock.now(),
  );
  const timeline: string[] = [];
  const startMs = clock.now();
  for (let m = 1; m <= 110; m += 1) {
    for (let i = 0; i < 100; i += 1) {
      counter.endpoint('iris').arrive();
      counter.endpoint('iris').complete(m - 1 >= 60 && m - 1 < 70 && i < 20 ? 503 : 200, 5);
      counter.endpoint('plain').arrive();
      counter.endpoint('plain').complete(500, 5);
    }
    // The report covers minute m - 1 exactly: [startMs + (m - 1) min, startMs + m min).
    clock.ms = startMs + m * minute;
    const report = counter.take('gw-1');
    assert.ok(report !== null);
    // As the route does: the wire form checked whole, then handed over.
    slo.ingest(checkLoadReport(JSON.parse(JSON.stringify(report))));
    const began = performance.now();
    await slo.tick();
    // Not a timing assertion: a tick that waited on the hanging webhook would take its 5 s
    // attempt timeout; the generous bound only tells the two apart.
    assert.ok(performance.now() - began < 4_000, 'a tick waited on a webhook');
    for (const alert of await store.listSloAlerts('iris')) {
      if (alert.since === new Date(clock.ms).toISOString())
        timeline.push(`${m} ${alert.alert} ${alert.state}`);
    }
  }
  // By hand (k bad minutes in a window of n, burn = 200 k / n; minute m's tick sees [.., m)):
  // ticket: 6 h window 200 k / m > 6 and 30 min 200 k / 30 > 6 → m = 62 (400 / 62 = 6.45);
  // page: 1 h window 200 k / 60 > 14.4 → k = 5 → m = 65 (5 min: 200);
  // page resolves when its 5 min window holds no bad minute (one burns 40) → m = 75;
  // ticket resolves when its 30 min window holds none (one burns 6.67) → m = 100.
  assert.deepEqual(timeline, [
    '62 availability-ticket firing',
    '65 availability-page firing',
    '75 availability-page resolved',
    '100 availability-ticket resolved',
  ]);
  const events = await store.listSloAlertEvents({ endpoint: 'iris' });
  assert.deepEqual(
    events.map((e) => `${e.alert} ${e.state}`).reverse(),
    timeline.map((line) => line.split(' ').slice(1).join(' ')),
  );
  assert.deepEqual(await store.listSloAlerts('plain'), []);

  await until(() => slo.webhooks.stats().sent === 4, 'the four transitions at the webhook');
  assert.deepEqual(
    hooks.bodies.map((b) => [b.kind, b.endpoint, b.alert, b.state]),
    [
      ['kiln-slo-alert', 'iris', 'availability-ticket', 'firing'],
      ['kiln-slo-alert', 'iris', 'availability-page', 'firing'],
      ['kiln-slo-alert', 'iris', 'availability-page', 'resolved'],
      ['kiln-slo-alert', 'iris', 'availability-ticket', 'resolved'],
    ],
  );
  assert.ok(hooks.hangHits() >= 1);

  const status = await slo.status('iris');
  const availability = status.budgets.find((b) => b.sli === 'availability');
  // 110 minutes × 100 answers, 200 bad; the 30-day budget of 0.1 % of 11 000 is 11.
  assert.deepEqual(
    { total: availability?.total, bad: availability?.bad },
    { total: 11_000, bad: 200 },
  );
  assert.ok(Math.abs((availability?.remaining ?? 0) - (1 - 200 / 11)) < 1e-9);
  const latency = status.budgets.find((b) => b.sli === 'latency');
  assert.deepEqual({ total: latency?.total, bad: latency?.bad }, { total: 10_800, bad: 0 });
  await assert.rejects(
    slo.status('plain'),
    (e: unknown) => e instanceof KilnError && e.code === 'KILN_SLO_NOT_SET',
  );
  await assert.rejects(
    slo.status('nope'),
    (e: unknown) => e instanceof KilnError && e.code === 'KILN_ENDPOINT_NOT_FOUND',
  );
  const text = await metrics.metrics();
  assert.match(
    text,
    /kiln_slo_alert_firing\{endpoint="iris",alert="availability-page",severity="page"\} 0/,
  );
  assert.match(text, /kiln_slo_burn_rate\{endpoint="iris",sli="availability",window="6h"\} /);
  assert.match(text, /kiln_slo_webhook_deliveries_total\{outcome="sent"\} 4/);
  assert.doesNotMatch(text, /endpoint="plain"/);
  assert.match(lines.join('\n'), /slo iris: availability-page firing/);
  const rules = await slo.rules();
  assert.match(rules, /endpoint="iris"/);
  assert.doesNotMatch(rules, /plain/);
});

test('load reports carry server errors: optional (older gateways), at most the answers', () => {
  const report = {
    gateway: 'gw-1',
    windowStart: '2026-12-01T00:00:00.000Z',
    windowEnd: '2026-12-01T00:00:01.000Z',
    endpoints: [
      {
        endpoint: 'iris',
        arrivals: 3,
        completed: 3,
        concurrencyMean: 0.1,
        concurrencyMax: 1,
        held: 0,
        latencyMs: { relativeAccuracy: 0.01, zeroCount: 0, positive: [], negative: [] },
      },
    ],
  };
  assert.equal(checkLoadReport(report).endpoints[0]?.serverErrors, 0);
  const entry = report.endpoints[0];
  assert.ok(entry !== undefined);
  assert.equal(
    checkLoadReport({ ...report, endpoints: [{ ...entry, serverErrors: 2 }] }).endpoints[0]
      ?.serverErrors,
    2,
  );
  assert.throws(
    () => checkLoadReport({ ...report, endpoints: [{ ...entry, serverErrors: 4 }] }),
    /body\/endpoints\/0\/serverErrors must be at most completed/,
  );
});

test("the drift ceiling fires and resolves from the drift service's latest round", async (t) => {
  const dir = await tempDir();
  const clock = new FakeClock(Date.parse('2026-12-01T00:00:00.000Z'));
  const store = SqliteStore.open(join(dir, 'kiln.db'), { clock });
  t.after(() => store.close());
  await store.createModel({ name: 'iris', team: 'default', description: '' });
  await store.createVersion('iris', placeholderVersion());
  await store.putEndpoint({
    name: 'iris',
    team: 'default',
    model: 'iris',
    version: 1,
    ref: '1',
    replicas: 1,
    config: {
      observability: {
        slo: {
          availability: null,
          latencyMs: null,
          latencyTarget: null,
          driftPsiCeiling: 0.25,
          webhooks: [],
        },
      },
    },
  });
  let psi = 0.6;
  // What ObservabilityServices.drift looks like to the SLO part (C's DriftService).
  const services = {
    drift: {
      latestDrift: (endpoint: string) =>
        endpoint !== 'iris'
          ? []
          : [
              {
                version: 1,
                groups: [
                  {
                    slice: null,
                    items: [{ name: 'x', kind: 'feature', vsReference: { psi, status: 'drift' } }],
                  },
                ],
              },
            ],
    },
  };
  const slo = new SloService({
    store,
    clock,
    metrics: new MetricsRegistry(),
    drift: (endpoint) => Promise.resolve(driftReadingsOf(latestDriftOf(services, endpoint))),
  });
  t.after(() => slo.close());
  await slo.tick();
  const [firing] = await store.listSloAlerts('iris');
  assert.deepEqual([firing?.alert, firing?.state], ['drift', 'firing']);
  assert.match(firing?.summary ?? '', /highest feature x of version 1 at 0\.600/);
  psi = 0.1;
  clock.advance(10_000);
  await slo.tick();
  const [resolved] = await store.listSloAlerts('iris');
  assert.deepEqual([resolved?.alert, resolved?.state], ['drift', 'resolved']);
  assert.deepEqual(latestDriftOf({}, 'iris'), []);
});
