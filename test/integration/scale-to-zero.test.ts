// Scale-to-zero end to end on real processes (issue 14, the Bar): a tree endpoint whose
// policy allows zero replicas goes to zero after a short idle period (its worker stops),
// then requests sent while it wakes — several, concurrent, and more during the cold start —
// are held by the gateway's activator and all answered with XGBoost's own predictions.
// The cold start (first request sent → first answer) is printed; no test asserts a speed.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { call, registerFixture, testPlatform } from '../helpers/platform.ts';

const fixtures = new URL('../../fixtures/registry/', import.meta.url).pathname;
const expected = JSON.parse(readFileSync(`${fixtures}expected.json`, 'utf8')) as {
  xgboost: { inputs: number[][]; probabilities: number[] };
};

interface ScaleBody {
  replicas: number;
  readyReplicas: number;
  startingReplicas: number;
}

interface EndpointBody {
  status: { replicas: { pid: number | null; state: string }[] };
}

async function waitUntil(what: string, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 90_000;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.fail(`timed out waiting for ${what}`);
}

const platform = await testPlatform({ gateway: true });
await registerFixture(platform.url, 'fraud', 'xgboost', 'xgb-binary.json');

const policy = {
  minReplicas: 0,
  maxReplicas: 2,
  signal: 'concurrency',
  target: 4,
  stableWindowMs: 2_000,
  panicWindowMs: 1_000,
  scaleDownDelayMs: 0,
  scaleToZero: { idleMs: 2_000, queueLimit: 50, timeoutMs: 60_000, coldStartBudgetMs: 10_000 },
};

/** Row `row` of the fixture's inputs as a v2 or v1 request. */
function body(row: number, form: 'v2' | 'v1'): string {
  const input = expected.xgboost.inputs[row]!;
  return form === 'v2'
    ? JSON.stringify({
        inputs: [{ name: 'input', shape: [1, input.length], datatype: 'FP32', data: input }],
      })
    : JSON.stringify({ instances: [input] });
}

interface Answer {
  readonly row: number;
  readonly status: number;
  readonly probability: number | null;
  readonly text: string;
  readonly atMs: number;
}

async function send(row: number, form: 'v2' | 'v1'): Promise<Answer> {
  const path = form === 'v2' ? '/v2/models/fraud/infer' : '/v1/models/fraud:predict';
  const response = await fetch(platform.gatewayUrl + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: body(row, form),
  });
  const text = await response.text();
  const atMs = performance.now();
  let probability: number | null = null;
  if (response.status === 200) {
    const parsed = JSON.parse(text) as {
      outputs?: { data: number[] }[];
      predictions?: number[];
    };
    probability =
      form === 'v2' ? (parsed.outputs?.[0]?.data[0] ?? null) : (parsed.predictions?.[0] ?? null);
  }
  return { row, status: response.status, probability, text, atMs };
}

async function gatewayMetric(line: string): Promise<number | null> {
  const text = await (await fetch(`${platform.gatewayUrl}/metrics`)).text();
  for (const row of text.split('\n')) {
    if (row.startsWith(line + ' ')) return Number(row.slice(line.length + 1));
  }
  return null;
}

const scale = async (): Promise<ScaleBody> =>
  (await call(platform.url, 'GET', '/api/v1/endpoints/fraud/scale')).body as ScaleBody;

test('from zero replicas, every request sent during the cold start is answered correctly', async () => {
  const deployed = await call(platform.url, 'PUT', '/api/v1/endpoints/fraud', {
    model: 'fraud',
    replicas: 1,
    config: { autoscale: policy },
  });
  assert.ok(deployed.status === 201, JSON.stringify(deployed.body));
  // The first request may find the replica still starting: the activator holds it too.
  const warm = await send(0, 'v2');
  assert.equal(warm.status, 200, warm.text);
  assert.ok(Math.abs(warm.probability! - expected.xgboost.probabilities[0]!) <= 1e-5);

  // Idle for idleMs: the autoscaler takes it to zero and the worker stops.
  await waitUntil('fraud at zero replicas', async () => {
    const now = await scale();
    if (now.replicas !== 0 || now.readyReplicas !== 0 || now.startingReplicas !== 0) return false;
    const endpoint = (await call(platform.url, 'GET', '/api/v1/endpoints/fraud'))
      .body as EndpointBody;
    return endpoint.status.replicas.every((r) => r.state === 'stopped' || r.pid === null);
  });
  // The gateway has a snapshot routing no replica of it (a model at zero still answers its
  // ready check: its next request wakes it).
  await waitUntil('the gateway sees no ready replica', async () => {
    const snapshot = (await call(platform.url, 'GET', '/api/v1/routing/snapshot?waitMs=0'))
      .body as { version: number; endpoints: { name: string; replicas: unknown[] }[] };
    const route = snapshot.endpoints.find((e) => e.name === 'fraud');
    if (route === undefined || route.replicas.length > 0) return false;
    const seen = await gatewayMetric('kiln_gateway_snapshot_version');
    return seen !== null && seen >= snapshot.version;
  });
  const atZero = await fetch(`${platform.gatewayUrl}/v2/models/fraud/ready`);
  assert.equal(atZero.status, 200, await atZero.text());

  // The cold start: six requests at once, then, once the gateway holds them, six more (v2
  // and v1) while the endpoint is still waking.
  const rows = expected.xgboost.inputs.length;
  const coldStartsBefore =
    (await gatewayMetric('kiln_gateway_cold_start_seconds_count{endpoint="fraud"}')) ?? 0;
  const sumBefore =
    (await gatewayMetric('kiln_gateway_cold_start_seconds_sum{endpoint="fraud"}')) ?? 0;
  const startMs = performance.now();
  const startWallMs = Date.now();
  const first = Array.from({ length: 6 }, (_, i) => send(i % rows, i % 2 === 0 ? 'v2' : 'v1'));
  await waitUntil(
    'requests held by the activator',
    async () => ((await gatewayMetric('kiln_gateway_activator_held{endpoint="fraud"}')) ?? 0) > 0,
  );
  const heldWhileWaking = await gatewayMetric('kiln_gateway_activator_held{endpoint="fraud"}');
  const more = Array.from({ length: 6 }, (_, i) => send((i + 6) % rows, i % 2 === 0 ? 'v1' : 'v2'));
  const answers = await Promise.all([...first, ...more]);
  for (const answer of answers) {
    assert.equal(answer.status, 200, `row ${answer.row}: ${answer.text}`);
    const want = expected.xgboost.probabilities[answer.row]!;
    assert.ok(
      answer.probability !== null && Math.abs(answer.probability - want) <= 1e-5,
      `row ${answer.row}: ${answer.probability} vs XGBoost's ${want}`,
    );
  }
  const firstAnswerMs = Math.min(...answers.map((a) => a.atMs)) - startMs;
  const lastAnswerMs = Math.max(...answers.map((a) => a.atMs)) - startMs;
  const count = await gatewayMetric('kiln_gateway_cold_start_seconds_count{endpoint="fraud"}');
  const gatewaySeconds =
    ((await gatewayMetric('kiln_gateway_cold_start_seconds_sum{endpoint="fraud"}')) ?? 0) -
    sumBefore;
  console.log(
    `cold start (tree endpoint, from zero): first answer ${firstAnswerMs.toFixed(0)} ms after ` +
      `the first request, all ${answers.length} answered by ${lastAnswerMs.toFixed(0)} ms; ` +
      `gateway kiln_gateway_cold_start_seconds ${gatewaySeconds.toFixed(3)} s ` +
      `(${heldWhileWaking} held when the second wave was sent)`,
  );
  assert.equal(count, coldStartsBefore + 1, 'this cold start measured by the gateway, once');
  const status = (await call(platform.url, 'GET', '/api/v1/endpoints/fraud/scale')).body as {
    startup: { measuredP90Ms: number | null; samples: number };
    events: { kind: string; from: number; to: number; at: string }[];
  };
  const wake = status.events.find((e) => e.from === 0 && Date.parse(e.at) >= startWallMs - 1_000);
  console.log(
    `  where it went: wake recorded ${wake === undefined ? '?' : Date.parse(wake.at) - startWallMs} ms ` +
      `after the first request; replica launch → ready p90 ${status.startup.measuredP90Ms} ms ` +
      `over ${status.startup.samples} starts; the rest is the snapshot reaching the gateway and the answer`,
  );

  // The scale history tells the same story: down to zero, then woken.
  const events = (await call(platform.url, 'GET', '/api/v1/endpoints/fraud/scale/events')).body as {
    items: { kind: string; from: number; to: number }[];
  };
  const kinds = events.items.map((e) => `${e.kind} ${e.from}->${e.to}`);
  assert.ok(
    events.items.some((e) => e.to === 0),
    `a scale to zero among ${JSON.stringify(kinds)}`,
  );
  assert.ok(
    events.items.some((e) => e.from === 0 && e.to >= 1),
    `a scale from zero among ${JSON.stringify(kinds)}`,
  );
  assert.equal((await scale()).readyReplicas >= 1, true);
  // The gateway's demand reports were taken by the control plane (checked whole there).
  assert.ok(((await gatewayMetric('kiln_gateway_load_reports_total{outcome="sent"}')) ?? 0) > 0);
  assert.equal(await gatewayMetric('kiln_gateway_load_reports_total{outcome="failed"}'), null);
  assert.equal(await gatewayMetric('kiln_gateway_wake_calls_total{outcome="failed"}'), null);
});
