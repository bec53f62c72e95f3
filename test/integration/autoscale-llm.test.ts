// Autoscaling on what only an LLM's workers measure, end to end: an hf-llm endpoint
// (tiny-llama, real worker processes) scales on `tokens_per_second` (a custom metric) or on
// `cpu` — the worker reports both at GET /kiln/v1/load, the control plane's poller sums
// them, the autoscaler divides by the target. Completions through the gateway make the
// signal rise and the endpoint goes to its maximum; when they stop it falls and the endpoint
// goes back to its minimum. Every answer is PyTorch's greedy text for the fixture
// (reference.json).
//
// Targets are far from both ends, so the test does not depend on how fast this machine
// generates: 1 token/s per replica (any generation wants the maximum), and 10 % CPU per
// replica (an idle worker uses ~1 % of a core; a generating one, on this shared machine,
// measured 20–30 %: its engine thread would take a whole core if the machine had one free).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { loadTokenizer } from '../../src/llm/tokenizer/load-tokenizer.ts';
import { call, readArtifact, register, testPlatform } from '../helpers/platform.ts';

const folder = new URL('../../fixtures/llm/tiny-llama/', import.meta.url).pathname;
const reference = JSON.parse(await readFile(`${folder}reference.json`, 'utf8')) as {
  prompts: { ids: number[]; greedyIds: number[] }[];
};
const loaded = await loadTokenizer(folder);
assert.ok(loaded.ok);
const tokenizer = loaded.tokenizer;
const cases = reference.prompts
  .filter((p) => p.ids.length <= 50)
  .map((p) => ({
    ids: p.ids,
    maxTokens: p.greedyIds.length,
    expected: tokenizer.decode(
      p.greedyIds.filter((id) => !tokenizer.eosTokenIds.includes(id)),
      { skipSpecialTokens: true },
    ),
    mayStop: p.greedyIds.some((id) => tokenizer.eosTokenIds.includes(id)),
  }));

const platform = await testPlatform({ gateway: true });
const files = (await readArtifact(folder)).filter((f) => f.path !== 'reference.json');
assert.equal((await register(platform.url, 'tiny-llama', 'hf-llm', files)).status, 201);

async function waitUntil(what: string, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 180_000;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.fail(`timed out waiting for ${what}`);
}

async function status(endpoint: string): Promise<{ readyReplicas: number; replicas: unknown[] }> {
  const response = await call(platform.url, 'GET', `/api/v1/endpoints/${endpoint}`);
  assert.equal(response.status, 200, JSON.stringify(response.body));
  return (response.body as { status: { readyReplicas: number; replicas: unknown[] } }).status;
}

async function scalesUpAndDown(
  endpoint: string,
  autoscale: { signal: string; target: number; customMetric?: string },
  measured: (signals: Record<string, unknown>) => unknown,
): Promise<void> {
  assert.ok(cases.length >= 2);
  const deployed = await call(platform.url, 'PUT', `/api/v1/endpoints/${endpoint}`, {
    model: 'tiny-llama',
    replicas: 1,
    config: {
      autoscale: {
        minReplicas: 1,
        maxReplicas: 2,
        stableWindowMs: 6_000,
        panicWindowMs: 2_000,
        scaleDownDelayMs: 3_000,
        ...autoscale,
      },
    },
  });
  assert.ok(deployed.status === 200 || deployed.status === 201, JSON.stringify(deployed.body));
  await waitUntil('one replica ready', async () => (await status(endpoint)).readyReplicas === 1);
  // Before any load the autoscaler sees the signal below the target (the poller reaches the
  // ready worker; its loading CPU is not counted) and has not scaled.
  let idle = Number.NaN;
  await waitUntil(`the idle signal measured below the target`, async () => {
    const scale = await call(platform.url, 'GET', `/api/v1/endpoints/${endpoint}/scale`);
    const signals = (scale.body as { signals: Record<string, unknown> | null }).signals;
    idle = signals?.readyReplicas === 1 ? Number(measured(signals) ?? Number.NaN) : Number.NaN;
    return idle < autoscale.target;
  });
  console.log(`${endpoint} idle: ${autoscale.signal} ${idle}`);
  const before = await call(platform.url, 'GET', `/api/v1/endpoints/${endpoint}/scale/events`);
  assert.deepEqual(
    (before.body as { items: { kind: string }[] }).items.filter((e) => e.kind !== 'manual'),
    [],
    'no scaling before the load',
  );

  const failures: string[] = [];
  let answered = 0;
  let stopped = false;
  const clients = [0, 1].map(async (client) => {
    for (let i = client; !stopped; i += 2) {
      const c = cases[i % cases.length]!;
      try {
        const response = await fetch(`${platform.gatewayUrl}/v1/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            model: endpoint,
            prompt: c.ids,
            max_tokens: c.maxTokens,
            temperature: 0,
          }),
        });
        const body = (await response.json()) as {
          choices?: { text: string; finish_reason: string }[];
        };
        const choice = body.choices?.[0];
        if (response.status !== 200 || choice === undefined) {
          failures.push(`${response.status}: ${JSON.stringify(body)}`);
        } else if (
          choice.finish_reason === 'stop'
            ? !(c.mayStop && c.expected.startsWith(choice.text))
            : choice.text !== c.expected
        ) {
          failures.push(`case ${i % cases.length}: ${JSON.stringify(choice.text)}`);
        } else {
          answered++;
        }
      } catch (error) {
        failures.push(String(error));
      }
    }
  });
  try {
    await waitUntil('2 replicas ready while tokens flow', async () => {
      return (await status(endpoint)).readyReplicas === 2;
    });
    const before = answered;
    await waitUntil('more answers after the scale-up', () =>
      Promise.resolve(answered >= before + 10),
    );
  } finally {
    stopped = true;
    await Promise.all(clients);
  }
  await waitUntil('back to 1 replica once no tokens flow', async () => {
    const now = await status(endpoint);
    return now.readyReplicas === 1 && now.replicas.length === 1;
  });
  assert.deepEqual(failures, [], `${failures.length} failed of ${answered + failures.length}`);

  const events = await call(platform.url, 'GET', `/api/v1/endpoints/${endpoint}/scale/events`);
  const changes = (
    events.body as { items: { kind: string; from: number; to: number; reason: string }[] }
  ).items
    .reverse()
    .filter((e) => e.kind === 'scale-up' || e.kind === 'scale-down');
  console.log(
    `${endpoint}: ${answered} answers; ${changes.map((e) => `${e.from}→${e.to} (${e.reason})`).join('; ')}`,
  );
  assert.deepEqual(
    changes.map((e) => [e.kind, e.to]),
    [
      ['scale-up', 2],
      ['scale-down', 1],
    ],
    'one step up, one step down',
  );
}

test('custom tokens_per_second (LLM worker-reported): up to max under completions, back to min', async () => {
  await scalesUpAndDown(
    'tokens',
    { signal: 'custom', customMetric: 'tokens_per_second', target: 1 },
    (signals) => (signals.custom as Record<string, number>).tokens_per_second,
  );
});

test('cpu (LLM worker-reported): up to max under completions, back to min', async () => {
  await scalesUpAndDown('cpu', { signal: 'cpu', target: 0.1 }, (signals) => signals.cpu);
});
