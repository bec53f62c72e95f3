// Worker pools end to end (issue 14, the Bar): a pool of two real worker processes serves 50
// registered models through the real gateway under a memory budget that fits 10 of them.
// Every answer is checked against XGBoost's own predictions (fixtures/pools/, made by
// make_pool_fixtures.py: five distinct models, each registered ten times under its own
// name), and the workers' counts — loads, evictions, hits, misses — are checked against
// what the requests must have caused.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { loadRuntime } from '../../src/runtimes/load-runtime.ts';
import type { PoolWorkerStatus } from '../../src/protocol/pool/pool-protocol.ts';
import {
  call,
  errorCode,
  readArtifact,
  register,
  testPlatform,
  type LocalFile,
} from '../helpers/platform.ts';
import { SteadyLoad } from '../helpers/steady-load.ts';

const fixtures = new URL('../../fixtures/pools/', import.meta.url).pathname;
const expected = JSON.parse(readFileSync(`${fixtures}expected.json`, 'utf8')) as {
  rows: number[][];
  predictions: Record<string, number[]>;
};
const numModels = 50;
const distinct = 5;
const endpointName = (i: number): string => `m${String(i).padStart(2, '0')}`;
const fixtureOf = (i: number): string => `pool-${i % distinct}`;

// The budget: ten times the largest model as the tree runtime measures it (what a pool
// worker counts for each model it loads).
const sizes: number[] = [];
for (let k = 0; k < distinct; k++) {
  const loaded = await loadRuntime({
    modelDir: fixtures,
    format: 'xgboost',
    files: [`pool-${k}.json`],
    schema: null,
    config: {},
  });
  assert.ok(loaded.ok);
  sizes.push(loaded.runtime.memoryBytes());
  await loaded.runtime.unload();
}
const largest = Math.max(...sizes);
const smallest = Math.min(...sizes);
const budget = 10 * largest;
assert.ok(11 * smallest > budget, 'the budget fits 10 models and never 11');

const platform = await testPlatform({ gateway: true });
const files: LocalFile[][] = [];
for (let k = 0; k < distinct; k++)
  files.push(await readArtifact(`${fixtures}pool-${k}.json`, 'model.json'));
for (let i = 0; i < numModels; i++) {
  const registered = await register(platform.url, endpointName(i), 'xgboost', files[i % distinct]!);
  assert.equal(registered.status, 201, JSON.stringify(registered.body));
}

interface PoolBody {
  workers: number;
  memoryBudgetBytes: number;
  endpoints: string[];
  workerStates: {
    id: string;
    state: string;
    url: string | null;
    status: PoolWorkerStatus | null;
  }[];
}

async function waitUntil(what: string, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.fail(`timed out waiting for ${what}`);
}

async function poolStatus(): Promise<PoolWorkerStatus[]> {
  const shown = await call(platform.url, 'GET', '/api/v1/pools/tiny');
  assert.equal(shown.status, 200, JSON.stringify(shown.body));
  const body = shown.body as PoolBody;
  return body.workerStates.map((w) => {
    assert.ok(w.status !== null, `worker ${w.id} answered its status`);
    return w.status;
  });
}

async function predict(i: number): Promise<void> {
  const rows = expected.rows;
  const response = await fetch(`${platform.gatewayUrl}/v2/models/${endpointName(i)}/infer`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      inputs: [{ name: 'input', shape: [rows.length, 4], datatype: 'FP32', data: rows.flat() }],
    }),
  });
  const body = (await response.json()) as {
    model_name?: string;
    outputs?: { data: number[] }[];
  };
  assert.equal(response.status, 200, `${endpointName(i)}: ${JSON.stringify(body)}`);
  // The workers' residency is the gateway's business: not passed on to clients.
  assert.equal(response.headers.get('kiln-pool-resident'), null);
  assert.equal(body.model_name, endpointName(i));
  const data = body.outputs?.[0]?.data ?? [];
  const want = expected.predictions[fixtureOf(i)]!;
  assert.equal(data.length, want.length);
  want.forEach((p, row) => {
    // XGBoost predicts in float32; the answer is that float32 value.
    assert.ok(
      Math.abs(data[row]! - p) <= 1e-6 * Math.max(1, Math.abs(p)),
      `${endpointName(i)} row ${row}: ${data[row]} vs XGBoost's ${p}`,
    );
  });
}

async function timed(run: () => Promise<void>): Promise<number> {
  const started = performance.now();
  await run();
  return performance.now() - started;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

/** The counts every worker's status must agree on, whatever the order of requests. */
function checkCounts(statuses: readonly PoolWorkerStatus[], requests: number): void {
  const sum = (f: (s: PoolWorkerStatus) => number): number =>
    statuses.reduce((n, s) => n + f(s), 0);
  assert.equal(
    sum((s) => s.hits + s.misses),
    requests,
    'every request is a hit or a miss',
  );
  assert.equal(
    sum((s) => s.loads),
    sum((s) => s.misses),
    'a miss is one load (no load failed)',
  );
  assert.equal(
    sum((s) => s.loadFailures),
    0,
  );
  assert.equal(
    sum((s) => s.evictions),
    sum((s) => s.loads) - sum((s) => s.models.length),
    'what was loaded and is not held any more was evicted',
  );
  for (const s of statuses) {
    assert.ok(s.models.length <= 10, `${s.replica} holds ${s.models.length} models`);
    assert.ok(s.residentBytes <= budget, `${s.replica} holds ${s.residentBytes} > ${budget}`);
    assert.equal(s.memoryBudgetBytes, budget);
    assert.equal(s.assigned, numModels);
  }
  // A model is held by one worker at most: the gateway sends it where it is loaded.
  const held = statuses.flatMap((s) => s.models.map((m) => m.endpoint));
  assert.equal(new Set(held).size, held.length, 'no model loaded on both workers');
}

test('deploying onto a pool that does not exist is refused, naming the pool', async () => {
  const refused = await call(platform.url, 'PUT', '/api/v1/endpoints/m00', {
    model: 'm00',
    config: { pool: 'nope' },
  });
  assert.equal(refused.status, 404);
  assert.equal(errorCode(refused), 'KILN_POOL_NOT_FOUND');
});

test('a pool of two workers serves 50 models under a budget that fits 10, every answer XGBoost’s', async () => {
  const created = await call(platform.url, 'PUT', '/api/v1/pools/tiny', {
    workers: 2,
    memoryBudgetBytes: budget,
  });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const batched = await call(platform.url, 'PUT', '/api/v1/endpoints/m00', {
    model: 'm00',
    config: { pool: 'tiny', batching: { maxBatchSize: 8 } },
  });
  assert.equal(batched.status, 400, JSON.stringify(batched.body));
  assert.match(JSON.stringify(batched.body), /one by one/);
  for (let i = 0; i < numModels; i++) {
    const deployed = await call(platform.url, 'PUT', `/api/v1/endpoints/${endpointName(i)}`, {
      model: endpointName(i),
      config: { pool: 'tiny' },
    });
    assert.equal(deployed.status, 201, JSON.stringify(deployed.body));
  }
  await waitUntil('every pool endpoint routed to both workers', async () => {
    const listed = await call(platform.url, 'GET', '/api/v1/endpoints');
    const items = (
      listed.body as { items: { replicas: number; status: { readyReplicas: number } }[] }
    ).items;
    // An endpoint on a pool counts the pool's workers as its replicas.
    return (
      items.length === numModels &&
      items.every((e) => e.replicas === 2 && e.status.readyReplicas === 2)
    );
  });

  // Pass 1: every model once. Each is loaded once, by one worker.
  const missMs: number[] = [];
  for (let i = 0; i < numModels; i++) missMs.push(await timed(() => predict(i)));
  let statuses = await poolStatus();
  checkCounts(statuses, numModels);
  assert.equal(
    statuses.reduce((n, s) => n + s.loads, 0),
    numModels,
  );
  assert.ok(
    statuses.every((s) => s.evictions > 0),
    'both workers had more models than fit',
  );

  // A hot few, three times each: after its first request (a load at most) each is a hit.
  const hitsBefore = statuses.reduce((n, s) => n + s.hits, 0);
  const hitMs: number[] = [];
  for (let round = 0; round < 3; round++)
    for (let i = 0; i < 5; i++) {
      const ms = await timed(() => predict(i));
      if (round > 0) hitMs.push(ms);
    }
  // Printed, not asserted: what a load costs a request here (figures for docs/pools.md).
  console.log(
    `request through the gateway, p50: ${median(missMs).toFixed(1)} ms when it loads the model, ` +
      `${median(hitMs).toFixed(1)} ms when loaded`,
  );
  statuses = await poolStatus();
  checkCounts(statuses, numModels + 15);
  assert.ok(statuses.reduce((n, s) => n + s.hits, 0) - hitsBefore >= 10);

  // Pass 2 over all: still every answer right, the budget held throughout.
  for (let i = 0; i < numModels; i++) await predict(i);
  statuses = await poolStatus();
  checkCounts(statuses, 2 * numModels + 15);
  for (const s of statuses)
    console.log(
      `pool worker ${s.replica}: ${s.models.length} models held (${s.residentBytes} of ${s.memoryBudgetBytes} bytes), ` +
        `${s.loads} loads, ${s.evictions} evictions, ${s.hits} hits, ${s.misses} misses`,
    );

  // The workers' metrics say the same.
  const shown = (await call(platform.url, 'GET', '/api/v1/pools/tiny')).body as PoolBody;
  for (const worker of shown.workerStates) {
    const text = await (await fetch(`${worker.url}/metrics`)).text();
    const loads = /^kiln_pool_loads_total\{[^}]*\} (\d+)/m.exec(text)?.[1];
    assert.equal(Number(loads), worker.status?.loads, text.slice(0, 200));
  }
});

test('a pool worker serves only the models deployed on its pool', async () => {
  const shown = (await call(platform.url, 'GET', '/api/v1/pools/tiny')).body as PoolBody;
  const worker = shown.workerStates[0];
  assert.ok(worker?.url != null);
  // Registered, but deployed on no pool: the worker does not know it.
  const registered = await register(platform.url, 'outsider', 'xgboost', files[0]!);
  assert.equal(registered.status, 201);
  const response = await fetch(`${worker.url}/v2/models/outsider/infer`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      inputs: [{ name: 'input', shape: [1, 4], datatype: 'FP32', data: [0, 0, 0, 0] }],
    }),
  });
  assert.equal(response.status, 404);
  assert.equal(((await response.json()) as { code: string }).code, 'KILN_ENDPOINT_NOT_FOUND');
  // Its assignment cannot be changed without its token.
  const pushed = await fetch(`${worker.url}/kiln/v1/pool/models`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ generation: 1e9, models: [] }),
  });
  assert.equal(pushed.status, 401);
  // And a pool with endpoints on it is not deleted.
  const deleted = await call(platform.url, 'DELETE', '/api/v1/pools/tiny');
  assert.equal(deleted.status, 409);
  assert.equal(errorCode(deleted), 'KILN_POOL_IN_USE');
});

test('an endpoint moved onto the pool and off again under load loses no request', async () => {
  const registered = await register(platform.url, 'mover', 'xgboost', files[3]!);
  assert.equal(registered.status, 201);
  const own = await call(platform.url, 'PUT', '/api/v1/endpoints/mover', { model: 'mover' });
  assert.equal(own.status, 201, JSON.stringify(own.body));
  await waitUntil('mover ready on its own replica', async () => {
    const shown = await call(platform.url, 'GET', '/api/v1/endpoints/mover');
    return (shown.body as { status: { ready: boolean } }).status.ready;
  });
  const rows = expected.rows;
  const want = expected.predictions['pool-3']!;
  const load = new SteadyLoad({
    url: `${platform.gatewayUrl}/v2/models/mover/infer`,
    clients: 2,
    next: (i) => {
      const row = i % rows.length;
      return {
        tag: row,
        body: JSON.stringify({
          inputs: [{ name: 'input', shape: [1, 4], datatype: 'FP32', data: rows[row] }],
        }),
      };
    },
    check: (answer) => {
      const data = (answer.body as { outputs?: { data: number[] }[] }).outputs?.[0]?.data;
      const p = want[answer.tag]!;
      return data !== undefined && Math.abs(data[0]! - p) <= 1e-6 * Math.max(1, Math.abs(p))
        ? null
        : `row ${answer.tag}: ${JSON.stringify(data)} vs ${p}`;
    },
  }).start();
  try {
    await load.waitForAnswers(1, 20);
    const moved = await call(platform.url, 'PUT', '/api/v1/endpoints/mover', {
      model: 'mover',
      config: { pool: 'tiny' },
    });
    assert.equal(moved.status, 200, JSON.stringify(moved.body));
    await waitUntil('its own replica gone, a pool worker holding it', async () => {
      const shown = await call(platform.url, 'GET', '/api/v1/endpoints/mover');
      const status = (shown.body as { status: { replicas: unknown[] } }).status;
      const held = (await poolStatus()).some((s) => s.models.some((m) => m.endpoint === 'mover'));
      return status.replicas.length === 0 && held;
    });
    await load.waitForAnswers(1, 20);
    // And off it again: the pool keeps serving it until its own replica is ready.
    const back = await call(platform.url, 'PUT', '/api/v1/endpoints/mover', { model: 'mover' });
    assert.equal(back.status, 200, JSON.stringify(back.body));
    await waitUntil('its own replica ready, the pool no longer assigned it', async () => {
      const shown = await call(platform.url, 'GET', '/api/v1/endpoints/mover');
      const ready = (shown.body as { status: { ready: boolean } }).status.ready;
      return ready && (await poolStatus()).every((s) => s.assigned === numModels);
    });
    await load.waitForAnswers(1, 20);
  } finally {
    const summary = await load.stop();
    assert.deepEqual(summary.failures, []);
    console.log(`moved onto the pool and off under load: ${summary.answered} answers, none failed`);
  }
});
