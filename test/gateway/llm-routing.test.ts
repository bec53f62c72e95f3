// LLM routing through the gateway, against fake hf-llm workers reporting the load the test
// sets: a less loaded replica is preferred, a prompt prefix sticks to the replica that
// served it while loads are even and moves when that replica is loaded, round-robin
// ignores both, and a replica refusing connections is left for another at once.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fakeLlmWorker, idleLoad, type FakeLlmWorker } from './fake-llm-worker.ts';
import { call, endpointRoute, replicaRoute, snapshot, testGateway } from './gateway-harness.ts';
import { until } from '../helpers/until.ts';

const busyLoad = { ...idleLoad, running: 6, waiting: 4, kvUtilization: 0.8, inflight: 10 };
const systemPrompt = 'You are a terse assistant. Answer every question in one word only. ';

async function llmGateway(
  workers: ReadonlyArray<{ url: string }>,
  llmRouting: 'load-prefix' | 'round-robin' = 'load-prefix',
) {
  const replicas = workers.map((worker, i) => replicaRoute(worker, `r${i}`));
  return testGateway(
    snapshot(1, [endpointRoute({ name: 'assistant', format: 'hf-llm', schema: null, replicas })]),
    // Frequent polls; reports trusted for the whole test (a loaded machine may poll late).
    { llmRouting, llmLoadPollMs: 10, llmPick: { reportMaxAgeMs: 60_000 } },
  );
}

/** Sends a completion; returns the replica that answered. */
async function complete(base: string, prompt: string): Promise<string> {
  const reply = await call(
    base,
    'POST',
    '/v1/completions',
    JSON.stringify({ model: 'assistant', prompt, max_tokens: 4 }),
  );
  assert.equal(reply.status, 200, reply.text);
  return reply.headers.get('kiln-replica') ?? '';
}

/** Waits for every worker to answer two more load polls (so one came back after now). */
async function freshReports(workers: readonly FakeLlmWorker[]): Promise<void> {
  const seen = workers.map((w) => w.loadPolls);
  await until(
    () => workers.every((w, i) => w.loadPolls >= seen[i]! + 2),
    'fresh load reports from every replica',
  );
}

test('the replica reporting less load is preferred', { timeout: 30_000 }, async () => {
  const busy = await fakeLlmWorker('busy');
  const idle = await fakeLlmWorker('idle');
  busy.load = busyLoad;
  const gateway = await llmGateway([busy, idle]);
  await complete(gateway.url, 'warm up: the first request starts the load polls');
  await freshReports([busy, idle]);
  const chosen: string[] = [];
  for (let i = 0; i < 6; i++) chosen.push(await complete(gateway.url, `question ${i}: why?`));
  assert.deepEqual(chosen, Array(6).fill('r1'));
  // The load moves: the other replica is preferred now.
  busy.load = idleLoad;
  idle.load = busyLoad;
  await freshReports([busy, idle]);
  assert.equal(await complete(gateway.url, 'and now?'), 'r0');
});

test(
  'same-prefix prompts go to the same replica under even load, and move when it is loaded',
  { timeout: 30_000 },
  async () => {
    const workers = [await fakeLlmWorker('a'), await fakeLlmWorker('b')];
    const gateway = await llmGateway(workers);
    await complete(gateway.url, 'warm up');
    await freshReports(workers);
    const first = await complete(gateway.url, `${systemPrompt}Capital of France?`);
    const chosen: string[] = [];
    for (const question of [
      'Largest ocean?',
      'Two plus two?',
      'Color of the sky?',
      'Opposite of up?',
    ]) {
      chosen.push(await complete(gateway.url, `${systemPrompt}${question}`));
    }
    assert.deepEqual(chosen, Array(4).fill(first));
    // That replica now reports a long queue: the prefix goes to the other one, and stays.
    const sticky = workers[Number(first.slice(1))]!;
    sticky.load = busyLoad;
    await freshReports(workers);
    const moved = await complete(gateway.url, `${systemPrompt}Freezing point of water?`);
    assert.notEqual(moved, first);
    sticky.load = idleLoad;
    await freshReports(workers);
    assert.equal(await complete(gateway.url, `${systemPrompt}Boiling point?`), moved);
  },
);

test(
  'chat requests with the same system prompt stick together too',
  { timeout: 30_000 },
  async () => {
    const workers = [await fakeLlmWorker('a'), await fakeLlmWorker('b')];
    const gateway = await llmGateway(workers);
    const chat = async (question: string): Promise<string> => {
      const body = {
        model: 'assistant',
        messages: [
          { role: 'system', content: systemPrompt },
          { role: 'user', content: question },
        ],
      };
      const reply = await call(gateway.url, 'POST', '/v1/chat/completions', JSON.stringify(body));
      assert.equal(reply.status, 200);
      return reply.headers.get('kiln-replica') ?? '';
    };
    const first = await chat('One?');
    for (const question of ['Two?', 'Three?', 'Four?']) assert.equal(await chat(question), first);
  },
);

test(
  'a replica still in the prefill of a long prompt gets no new request while another is not',
  { timeout: 30_000 },
  async () => {
    const workers = [await fakeLlmWorker('a', 'stall'), await fakeLlmWorker('b', 'stall')];
    const gateway = await llmGateway(workers);
    const send = (prompt: string) =>
      call(
        gateway.url,
        'POST',
        '/v1/completions',
        JSON.stringify({ model: 'assistant', prompt, stream: true }),
      );
    // Each replica holds one request before its first token: r0 a long prompt, r1 a short
    // one. Counted in requests they are even; the long prompt's prefill is the longer wait.
    const long = send('Summarize this. '.repeat(500));
    await until(() => workers[0]!.received.length === 1, 'the long prompt at r0');
    const short = send('Hi');
    await until(() => workers[1]!.received.length === 1, 'the short prompt at r1');
    await freshReports(workers);
    const next = send('Hello again');
    await until(
      () => workers[0]!.received.length + workers[1]!.received.length === 3,
      'the next prompt at a replica',
    );
    assert.deepEqual(
      workers.map((w) => w.received.length),
      [1, 2],
    );
    for (const worker of workers) worker.release();
    const replies = await Promise.all([long, short, next]);
    assert.deepEqual(
      replies.map((r) => r.status),
      [200, 200, 200],
    );
  },
);

test('round-robin alternates, whatever the load and the prefix', { timeout: 30_000 }, async () => {
  const busy = await fakeLlmWorker('busy');
  const idle = await fakeLlmWorker('idle');
  busy.load = busyLoad;
  const gateway = await llmGateway([busy, idle], 'round-robin');
  const chosen: string[] = [];
  for (let i = 0; i < 6; i++) chosen.push(await complete(gateway.url, `${systemPrompt}${i}`));
  assert.deepEqual(chosen, ['r0', 'r1', 'r0', 'r1', 'r0', 'r1']);
  const text = await gateway.metricsText();
  assert.match(
    text,
    /kiln_gateway_llm_routed_total\{endpoint="assistant",policy="round-robin",reason="round_robin"\} 6/,
  );
});

test('a replica refusing connections is ejected and the request sent once more elsewhere', async () => {
  const gone = await fakeLlmWorker('gone');
  const alive = await fakeLlmWorker('alive');
  const goneUrl = gone.url;
  await gone.close();
  const gateway = await llmGateway([{ url: goneUrl }, alive]);
  // r0 comes first in rotation with no load known: it fails, and r1 answers.
  assert.equal(await complete(gateway.url, 'anyone there?'), 'r1');
  assert.equal(await complete(gateway.url, 'still there?'), 'r1');
  const text = await gateway.metricsText();
  assert.match(
    text,
    /kiln_gateway_upstream_errors_total\{endpoint="assistant",reason="refused"\} 1/,
  );
});
