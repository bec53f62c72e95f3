// Bounded admission by default, through real processes: endpoints deployed with no
// `maxConcurrency` shed a flood with 429 + Retry-After at the bound derived from their
// replicas, stay healthy, and answer correctly afterwards. The flood is made deterministic
// by stopping the worker (SIGSTOP): what the gateway admitted waits at the worker, so
// exactly the bound is admitted and everything beyond it is refused, whatever the timing.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { call, registerFixture, testPlatform } from '../helpers/platform.ts';

const fixtures = new URL('../../fixtures/registry/', import.meta.url).pathname;
const root = new URL('../../', import.meta.url).pathname;
const expected = JSON.parse(readFileSync(`${fixtures}expected.json`, 'utf8')) as {
  xgboost: { inputs: number[][]; probabilities: number[] };
  'mlp.onnx': { probe: { input: number[][]; logits: number[][] } };
};

interface EndpointBody {
  status: {
    ready: boolean;
    maxConcurrency: number | null;
    maxConcurrencySource: string | null;
    replicas: { pid: number | null; state: string }[];
  };
}

const platform = await testPlatform({ gateway: true });
await registerFixture(platform.url, 'fraud', 'xgboost', 'xgb-binary.json');
await registerFixture(platform.url, 'mlp', 'onnx', 'mlp.onnx');

async function waitUntil(what: string, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  assert.fail(`timed out waiting for ${what}`);
}

async function deploy(name: string, model: string, config: object): Promise<EndpointBody> {
  const deployed = await call(platform.url, 'PUT', `/api/v1/endpoints/${name}`, { model, config });
  assert.ok(deployed.status === 201 || deployed.status === 200, JSON.stringify(deployed.body));
  let body: EndpointBody | null = null;
  await waitUntil(`${name} ready at the gateway`, async () => {
    body = (await call(platform.url, 'GET', `/api/v1/endpoints/${name}`)).body as EndpointBody;
    const ready = await fetch(`${platform.gatewayUrl}/v2/models/${name}/ready`);
    await ready.arrayBuffer();
    return ready.status === 200 && body.status.ready;
  });
  return body!;
}

function inferBody(rows: number[][]): string {
  return JSON.stringify({
    inputs: [
      {
        name: 'input',
        shape: [rows.length, rows[0]?.length ?? 0],
        datatype: 'FP32',
        data: rows.flat(),
      },
    ],
  });
}

interface Answer {
  readonly status: number;
  readonly retryAfter: string | null;
  readonly json: { code?: string; outputs?: { data: number[] }[] };
}

async function infer(endpoint: string, body: string): Promise<Answer> {
  const response = await fetch(`${platform.gatewayUrl}/v2/models/${endpoint}/infer`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
  });
  return {
    status: response.status,
    retryAfter: response.headers.get('retry-after'),
    json: (await response.json()) as Answer['json'],
  };
}

async function admitted(endpoint: string): Promise<number> {
  const text = await (await fetch(`${platform.gatewayUrl}/metrics`)).text();
  const line = new RegExp(
    `^kiln_gateway_admitted_requests\\{endpoint="${endpoint}"\\} (\\d+)$`,
    'm',
  );
  return Number(line.exec(text)?.[1] ?? -1);
}

/**
 * Stops the endpoint's worker, sends `count` requests at once, waits until every request
 * beyond the bound has its answer, then lets the worker go on and collects the rest.
 */
async function flood(endpoint: string, pid: number, body: string, count: number, bound: number) {
  let answered = 0;
  let refusedAll: () => void = () => undefined;
  const refused = new Promise<void>((resolve) => (refusedAll = resolve));
  process.kill(pid, 'SIGSTOP');
  try {
    const replies = Array.from({ length: count }, () =>
      infer(endpoint, body).then((answer) => {
        if (++answered === count - bound) refusedAll();
        return answer;
      }),
    );
    await refused;
    assert.equal(await admitted(endpoint), bound, 'the bound is admitted, and held');
    process.kill(pid, 'SIGCONT');
    return await Promise.all(replies);
  } finally {
    process.kill(pid, 'SIGCONT');
  }
}

function checkShed(answers: readonly Answer[], count: number, bound: number): Answer[] {
  const ok = answers.filter((a) => a.status === 200);
  const busy = answers.filter((a) => a.status === 429);
  assert.equal(ok.length, bound, JSON.stringify(answers.filter((a) => a.status !== 200)[0]));
  assert.equal(busy.length, count - bound);
  for (const answer of busy) {
    assert.equal(answer.json.code, 'KILN_ENDPOINT_BUSY');
    assert.equal(answer.retryAfter, '1');
  }
  return ok;
}

function checkXgboost(answer: Answer): void {
  const data = answer.json.outputs?.[0]?.data ?? [];
  expected.xgboost.probabilities.forEach((p, i) =>
    assert.ok(Math.abs((data[i] ?? Number.NaN) - p) <= 1e-5, `row ${i}: ${data[i]} vs ${p}`),
  );
}

function checkMlp(answer: Answer): void {
  const data = answer.json.outputs?.[0]?.data ?? [];
  expected['mlp.onnx'].probe.logits
    .flat()
    .forEach((v, i) => assert.ok(Math.abs((data[i] ?? Number.NaN) - v) <= 1e-4, `element ${i}`));
}

test(
  'batching on, no configured limit: the bound is the worker queue; a flood past it is shed with 429 and the endpoint answers correctly after',
  { timeout: 180_000 },
  async () => {
    const batching = { maxBatchSize: 2, maxQueue: 4 };
    const endpoint = await deploy('mlp-small-queue', 'mlp', { batching });
    assert.equal(endpoint.status.maxConcurrency, 4);
    assert.equal(endpoint.status.maxConcurrencySource, 'derived');
    const body = inferBody(expected['mlp.onnx'].probe.input);
    checkMlp(await infer('mlp-small-queue', body)); // the channel is open before the stop

    const pid = endpoint.status.replicas.find((r) => r.state === 'ready')?.pid ?? 0;
    const answers = await flood('mlp-small-queue', pid, body, 40, 4);
    // The worker's queue took all four the gateway admitted: none was shed there.
    for (const answer of checkShed(answers, 40, 4)) checkMlp(answer);

    assert.equal((await fetch(`${platform.gatewayUrl}/v2/health/ready`)).status, 200);
    await waitUntil('no slot held', async () => (await admitted('mlp-small-queue')) === 0);
    const after = await Promise.all(
      Array.from({ length: 4 }, () => infer('mlp-small-queue', body)),
    );
    for (const answer of after) checkMlp(answer);

    // `kiln endpoints show` reports the same bound (asynchronously: this very process serves
    // the API the CLI calls).
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['bin/kiln.js', 'endpoints', 'show', 'mlp-small-queue', '--url', platform.url],
      { cwd: root, encoding: 'utf8' },
    );
    assert.match(stdout, /^max concurrency:\s+4 \(derived from the ready replicas\)$/m);
  },
);

test(
  'batching off, no configured limit: 64 a replica; a flood past it is shed with 429 and the endpoint answers correctly after',
  { timeout: 180_000 },
  async () => {
    const endpoint = await deploy('fraud-open', 'fraud', {});
    assert.equal(endpoint.status.maxConcurrency, 64);
    assert.equal(endpoint.status.maxConcurrencySource, 'derived');
    const body = inferBody(expected.xgboost.inputs);
    checkXgboost(await infer('fraud-open', body));

    const pid = endpoint.status.replicas.find((r) => r.state === 'ready')?.pid ?? 0;
    const answers = await flood('fraud-open', pid, body, 100, 64);
    for (const answer of checkShed(answers, 100, 64)) checkXgboost(answer);

    assert.equal((await fetch(`${platform.gatewayUrl}/v2/health/ready`)).status, 200);
    await waitUntil('no slot held', async () => (await admitted('fraud-open')) === 0);
    checkXgboost(await infer('fraud-open', body));
  },
);
