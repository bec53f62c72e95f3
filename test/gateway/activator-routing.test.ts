// Scale-to-zero at the gateway (activator.ts in start-gateway.ts), against fake workers and
// a stub control plane: requests of an endpoint with `activation` and no ready replica are
// held (v2, v1 and OpenAI paths), the control plane is asked once to wake it, and they are
// all answered once a snapshot brings a replica; a full queue, a timeout and a client that
// leaves each end as they should; demand (held requests included) goes out in load reports.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { HistogramSketch } from '../../src/traffic/histogram-sketch.ts';
import type { LoadReport } from '../../src/protocol/scaling/load-report.ts';
import type { RunningGateway } from '../../src/gateway/start-gateway.ts';
import type { ActivationRoute, EndpointRoute } from '../../src/gateway/routing-snapshot.ts';
import { fakeLlmWorker } from './fake-llm-worker.ts';
import {
  call,
  cannedOutput,
  endpointRoute,
  fakeWorker,
  infer,
  replicaRoute,
  serveOnLoopback,
  snapshot,
  testGateway,
  validRequest,
} from './gateway-harness.ts';
import { answerOf, policyEndpoint, variant } from './traffic-harness.ts';

interface StubControl {
  readonly url: string;
  readonly wakes: Array<{ endpoint: string; headers: IncomingHttpHeaders }>;
  readonly reports: LoadReport[];
  wakeStatus: number;
}

async function stubControl(): Promise<StubControl> {
  const stub: StubControl = { url: '', wakes: [], reports: [], wakeStatus: 200 };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const wake = /^\/api\/v1\/endpoints\/([^/]+)\/wake$/.exec(req.url ?? '');
      if (req.method === 'POST' && wake !== null) {
        stub.wakes.push({ endpoint: decodeURIComponent(wake[1]!), headers: req.headers });
        res.writeHead(stub.wakeStatus, { 'content-type': 'application/json' });
        res.end('{}');
        return;
      }
      if (req.method === 'POST' && req.url === '/api/v1/scaling/reports') {
        stub.reports.push(JSON.parse(Buffer.concat(chunks).toString('utf8')) as LoadReport);
      }
      res.writeHead(204);
      res.end();
    });
  });
  const served = await serveOnLoopback(server);
  return Object.assign(stub, { url: served.url });
}

const activation: ActivationRoute = { queueLimit: 20, timeoutMs: 30_000, coldStartBudgetMs: 5_000 };

/** Polls `check` until it holds (generous overall limit: the machine may be loaded). */
async function until(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** The value of one metric line (labels as rendered), or null when absent. */
async function metric(gateway: RunningGateway, line: string): Promise<number | null> {
  const text = await gateway.metricsText();
  for (const row of text.split('\n')) {
    if (row.startsWith(line + ' ')) return Number(row.slice(line.length + 1));
  }
  return null;
}

const held = (gateway: RunningGateway, endpoint = 'fraud'): Promise<number | null> =>
  metric(gateway, `kiln_gateway_activator_held{endpoint="${endpoint}"}`);

function zeroEndpoint(overrides: Partial<EndpointRoute> = {}): EndpointRoute {
  return endpointRoute({ replicas: [], activation, ...overrides });
}

test('v2 and v1 requests sent during a cold start are held, the endpoint woken once, and all answered', async () => {
  const control = await stubControl();
  const worker = await fakeWorker('ok', cannedOutput, 200, { channel: true });
  const gateway = await testGateway(snapshot(1, [zeroEndpoint()]), {
    more: {
      controlUrl: control.url,
      controlToken: 'gateway-token',
      reportLoad: true,
      loadReportIntervalMs: 50,
    },
  });
  // At zero the model is ready for inference (its next request wakes it); asking wakes nothing.
  for (const path of ['/v2/models/fraud/ready', '/v1/models/fraud']) {
    const ready = await call(gateway.url, 'GET', path);
    assert.equal(ready.status, 200, path);
    assert.deepEqual(ready.json, { name: 'fraud', ready: true });
  }
  assert.equal(control.wakes.length, 0);
  const v2 = Array.from({ length: 6 }, () => infer(gateway.url));
  const v1 = call(
    gateway.url,
    'POST',
    '/v1/models/fraud:predict',
    JSON.stringify({ instances: [[1, 2, 3]] }),
  );
  await until(async () => (await held(gateway)) === 7, 'seven held requests');
  await until(() => control.wakes.length > 0, 'the wake call');
  assert.deepEqual(
    control.wakes.map((w) => w.endpoint),
    ['fraud'],
    'one wake for the cold start, not one per request',
  );
  assert.equal(control.wakes[0]!.headers.authorization, 'Bearer gateway-token');
  // The autoscaler hears of the held requests in the load reports.
  await until(
    () =>
      control.reports.some((r) => r.endpoints.some((e) => e.endpoint === 'fraud' && e.held === 7)),
    'a load report with the held requests',
  );
  // A bad request is answered at once (the schema is known), never held.
  const bad = await infer(gateway.url, {
    inputs: [{ name: 'nope', datatype: 'FP32', shape: [1], data: [1] }],
  });
  assert.equal(bad.status, 400);

  // Held a known while (at least this long): the wait is a cold start, not service time.
  const holdMs = 1500;
  await new Promise((resolve) => setTimeout(resolve, holdMs));
  gateway.setSnapshot(snapshot(2, [zeroEndpoint({ replicas: [replicaRoute(worker, 'r1')] })]));
  const answers = await Promise.all(v2);
  for (const answer of answers) {
    assert.equal(answer.status, 200);
    assert.deepEqual(answer.json, cannedOutput);
  }
  const predict = await v1;
  assert.equal(predict.status, 200);
  assert.deepEqual(predict.json, { predictions: [[0.25]] });
  assert.equal(worker.received.length, 7);
  assert.equal(await held(gateway), null, 'nothing held any more');
  assert.equal(await metric(gateway, 'kiln_gateway_cold_start_seconds_count{endpoint="fraud"}'), 1);
  assert.equal(await metric(gateway, 'kiln_gateway_wake_calls_total{outcome="ok"}'), 1);
  // Demand: eight arrivals (the 400 too), all completed, across the reports.
  await until(() => {
    let arrivals = 0;
    let completed = 0;
    for (const report of control.reports) {
      for (const load of report.endpoints) {
        arrivals += load.arrivals;
        completed += load.completed;
      }
    }
    return arrivals === 8 && completed === 8;
  }, 'load reports counting every request');
  // The reports' latency (the demand rows' service times, what `kiln simulate --endpoint`
  // reads) leaves the hold out: the fake worker answers at once, so none is near holdMs.
  const latencies = new HistogramSketch(0.01);
  for (const report of control.reports) {
    for (const load of report.endpoints) {
      const sketch = HistogramSketch.fromSnapshot(load.latencyMs);
      assert.ok(sketch.ok);
      latencies.merge(sketch.sketch);
    }
  }
  assert.equal(latencies.count, 7, 'the seven answered requests');
  assert.ok(
    latencies.quantile(1)! < holdMs,
    `service times without the hold: ${latencies.quantile(1)} ms`,
  );

  // With a replica, nothing is held and no wake is asked.
  assert.equal((await infer(gateway.url)).status, 200);
  assert.equal(control.wakes.length, 1);
});

test('OpenAI requests to an LLM endpoint at zero are held and answered once it has a replica', async () => {
  const control = await stubControl();
  const llm = await fakeLlmWorker('l1');
  const route = (replicas: EndpointRoute['replicas']): EndpointRoute =>
    zeroEndpoint({ name: 'chat', model: 'chat-model', format: 'hf-llm', schema: null, replicas });
  const gateway = await testGateway(snapshot(1, [route([])]), {
    more: { controlUrl: control.url },
  });
  const body = JSON.stringify({ model: 'chat', prompt: 'hello', max_tokens: 3 });
  const pending = [1, 2].map(() => call(gateway.url, 'POST', '/v1/completions', body));
  await until(async () => (await held(gateway, 'chat')) === 2, 'two held completions');
  await until(() => control.wakes.length > 0, 'the wake call');
  assert.deepEqual(
    control.wakes.map((w) => w.endpoint),
    ['chat'],
  );
  gateway.setSnapshot(snapshot(2, [route([replicaRoute(llm, 'l1')])]));
  for (const reply of await Promise.all(pending)) assert.equal(reply.status, 200);
});

test('beyond queueLimit: 503 KILN_ACTIVATOR_FULL; past timeoutMs: 503 KILN_COLD_START_TIMEOUT', async () => {
  const control = await stubControl();
  const gateway = await testGateway(
    snapshot(1, [
      zeroEndpoint({ activation: { queueLimit: 2, timeoutMs: 400, coldStartBudgetMs: 100 } }),
    ]),
    { more: { controlUrl: control.url } },
  );
  const first = infer(gateway.url);
  const second = infer(gateway.url);
  await until(async () => (await held(gateway)) === 2, 'two held');
  const full = await infer(gateway.url);
  assert.equal(full.status, 503);
  assert.equal((full.json as { code: string }).code, 'KILN_ACTIVATOR_FULL');
  assert.equal(full.headers.get('retry-after'), '1');
  for (const reply of await Promise.all([first, second])) {
    assert.equal(reply.status, 503);
    assert.equal((reply.json as { code: string }).code, 'KILN_COLD_START_TIMEOUT');
    assert.match((reply.json as { error: string }).error, /within 400 ms/);
  }
  assert.equal(await held(gateway), null);
  assert.equal(
    await metric(gateway, 'kiln_gateway_cold_start_over_budget_total{endpoint="fraud"}'),
    1,
    'a cold start that ended unanswered past its budget',
  );
});

test('a client that goes away while held leaves the queue; an endpoint without activation answers 503 at once', async () => {
  const control = await stubControl();
  const gateway = await testGateway(
    snapshot(1, [zeroEndpoint(), endpointRoute({ name: 'plain', replicas: [] })]),
    { more: { controlUrl: control.url } },
  );
  const abort = new AbortController();
  const gone = fetch(`${gateway.url}/v2/models/fraud/infer`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(validRequest),
    signal: abort.signal,
  }).catch((error: unknown) => error);
  await until(async () => (await held(gateway)) === 1, 'one held');
  abort.abort();
  await gone;
  await until(async () => (await held(gateway)) === null, 'the queue emptied');

  await until(() => control.wakes.length > 0, 'the wake call');
  const plain = await infer(gateway.url, validRequest, {}, 'plain');
  assert.equal(plain.status, 503);
  assert.equal((plain.json as { code: string }).code, 'KILN_NO_READY_REPLICA');
  assert.deepEqual(
    control.wakes.map((w) => w.endpoint),
    ['fraud'],
  );
});

test('a wake the control plane cannot take yet is asked again while requests are held', async () => {
  const control = await stubControl();
  control.wakeStatus = 503;
  const worker = await fakeWorker();
  const gateway = await testGateway(snapshot(1, [zeroEndpoint()]), {
    more: { controlUrl: control.url, wakeMinBackoffMs: 20, wakeMaxBackoffMs: 40 },
  });
  const pending = infer(gateway.url);
  await until(() => control.wakes.length >= 3, 'the wake asked again');
  control.wakeStatus = 200;
  const asked = control.wakes.length;
  await until(
    async () => (await metric(gateway, 'kiln_gateway_wake_calls_total{outcome="ok"}')) === 1,
    'a wake taken',
  );
  gateway.setSnapshot(snapshot(2, [zeroEndpoint({ replicas: [replicaRoute(worker, 'r1')] })]));
  assert.equal((await pending).status, 200);
  // No more wakes once one was taken.
  assert.ok(control.wakes.length <= asked + 1);
});

test('the snapshot check takes activation and pool when well formed, and names a bad field', async () => {
  const { checkRoutingSnapshot } = await import('../../src/gateway/snapshot-check.ts');
  const good = checkRoutingSnapshot(
    snapshot(1, [zeroEndpoint({ pool: { name: 'small-models', revision: 'rev-1' } })]),
  );
  assert.ok(good.ok);
  assert.deepEqual(good.snapshot.endpoints[0]!.activation, activation);
  const nulls = checkRoutingSnapshot(
    snapshot(1, [{ ...endpointRoute({ replicas: [] }), activation: null, pool: null } as never]),
  );
  assert.ok(nulls.ok);
  assert.equal('activation' in nulls.snapshot.endpoints[0]!, false, 'null reads as absent');
  const bad = checkRoutingSnapshot(
    snapshot(1, [zeroEndpoint({ activation: { ...activation, queueLimit: 0 } })]),
  );
  assert.deepEqual(bad, {
    ok: false,
    reason: 'endpoints[0].activation.queueLimit is not a positive integer',
  });
  const badPool = checkRoutingSnapshot(
    snapshot(1, [zeroEndpoint({ pool: { name: '', revision: 'r' } })]),
  );
  assert.equal(badPool.ok, false);
});

test('held requests give their concurrency slot back: the queue, not the bound, limits them', async () => {
  const control = await stubControl();
  const worker = await fakeWorker();
  const gateway = await testGateway(snapshot(1, [zeroEndpoint({ maxConcurrency: 2 })]), {
    more: { controlUrl: control.url },
  });
  const pending = Array.from({ length: 5 }, () => infer(gateway.url));
  await until(async () => (await held(gateway)) === 5, 'five held under a bound of two');
  assert.equal(await metric(gateway, 'kiln_gateway_admitted_requests{endpoint="fraud"}'), 0);
  gateway.setSnapshot(
    snapshot(2, [zeroEndpoint({ maxConcurrency: 2, replicas: [replicaRoute(worker, 'r1')] })]),
  );
  // Released, they take their slots back even above the bound: all were admitted.
  for (const reply of await Promise.all(pending)) assert.equal(reply.status, 200);
  assert.equal(await metric(gateway, 'kiln_gateway_admitted_requests{endpoint="fraud"}'), 0);
});

test('a canary endpoint at zero: held requests are answered once any variant has a replica, whichever variant they were split to', async () => {
  // Scale-to-zero with a traffic policy: the stable and the canary wake together, and the
  // canary may be ready first; requests split to the stable must not fail meanwhile.
  const control = await stubControl();
  const canary = await fakeWorker('ok', answerOf(0.75));
  const stable = await fakeWorker('ok', answerOf(0.25));
  const atZero = (variants: Parameters<typeof policyEndpoint>[0]): EndpointRoute => ({
    ...policyEndpoint(variants),
    activation,
  });
  const gateway = await testGateway(
    snapshot(1, [atZero([variant(null, 3, 50), variant(null, 4, 50)])]),
    { more: { controlUrl: control.url, controlToken: 'gateway-token' } },
  );
  const sent = Array.from({ length: 10 }, (_, i) =>
    infer(gateway.url, validRequest, { 'kiln-user': `u${i}` }),
  );
  await until(async () => (await held(gateway)) === 10, 'ten held requests');
  await until(() => control.wakes.length > 0, 'the wake call');
  assert.deepEqual(
    control.wakes.map((w) => w.endpoint),
    ['fraud'],
  );

  // Only the canary is ready: every held request goes to it.
  gateway.setSnapshot(snapshot(2, [atZero([variant(null, 3, 50), variant(canary, 4, 50)])]));
  for (const answer of await Promise.all(sent)) {
    assert.equal(answer.status, 200, JSON.stringify(answer.json));
    assert.deepEqual(answer.json, answerOf(0.75));
  }
  assert.equal(canary.received.length, 10);
  assert.equal(await held(gateway), null, 'nothing held any more');

  // Both ready: the split applies again, nothing held, no second wake.
  gateway.setSnapshot(snapshot(3, [atZero([variant(stable, 3, 50), variant(canary, 4, 50)])]));
  const later = await Promise.all(
    Array.from({ length: 40 }, (_, i) =>
      infer(gateway.url, validRequest, { 'kiln-user': `w${i}` }),
    ),
  );
  assert.ok(later.every((a) => a.status === 200));
  assert.ok(stable.received.length > 0 && canary.received.length > 10, 'both variants serve');
  assert.equal(control.wakes.length, 1);
});
