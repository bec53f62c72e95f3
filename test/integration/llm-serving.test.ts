// LLM serving end to end, on the path users take: a real platform (control plane, gateway and
// worker processes), tiny-llama registered as an hf-llm version and deployed with the
// defaults a user gets, and the `openai` npm client, unmodified, pointed at the gateway's
// port. Greedy answers are compared with PyTorch's greedy tokens for the fixture
// (fixtures/llm/tiny-llama/reference.json, made by make_llm_fixtures.py) and with each
// request's answer when sent alone; 32 streams at once must each give the text they give
// alone.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import OpenAI from 'openai';
import { loadTokenizer } from '../../src/llm/tokenizer/load-tokenizer.ts';
import type { Tokenizer } from '../../src/llm/tokenizer/tokenizer.ts';
import { call, readArtifact, register, testPlatform } from '../helpers/platform.ts';

const folder = new URL('../../fixtures/llm/tiny-llama/', import.meta.url).pathname;
const reference = JSON.parse(await readFile(`${folder}reference.json`, 'utf8')) as {
  prompts: { ids: number[]; greedyIds: number[]; greedyText: string }[];
};
const loadedTokenizer = await loadTokenizer(folder);
assert.ok(loadedTokenizer.ok);
const tokenizer: Tokenizer = loadedTokenizer.tokenizer;

const platform = await testPlatform({ gateway: true });
// The fixture's reference.json is the test's oracle, not part of the model.
const files = (await readArtifact(folder)).filter((f) => f.path !== 'reference.json');
const registered = await register(platform.url, 'tiny-llama', 'hf-llm', files);
assert.equal(registered.status, 201, JSON.stringify(registered.body));
const deployed = await call(platform.url, 'PUT', '/api/v1/endpoints/chat', {
  model: 'tiny-llama',
});
assert.ok(deployed.status === 201 || deployed.status === 200, JSON.stringify(deployed.body));

const client = new OpenAI({
  baseURL: `${platform.gatewayUrl}/v1`,
  apiKey: 'unused-in-dev',
  maxRetries: 0,
});
/** Polls `check` until it holds; the replica loads a model, so allow minutes on a slow machine. */
async function waitFor(check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 180_000;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  assert.fail(`timed out waiting for ${what}`);
}
// Answering a first completion means the replica is ready and in the gateway's snapshot.
await waitFor(
  () =>
    client.completions
      .create({ model: 'chat', prompt: 'a', max_tokens: 1 })
      .then(() => true)
      .catch(() => false),
  'a first completion through the gateway',
);

/** The reference prompts as text, with PyTorch's greedy continuation of each. */
const cases = reference.prompts
  .filter((p) => p.ids.length <= 200)
  .map((p) => ({
    prompt: tokenizer.decode(p.ids, { skipSpecialTokens: false }),
    ids: p.ids,
    greedyIds: p.greedyIds,
  }));

void test('completions through the gateway: greedy tokens equal PyTorch greedy for the fixture', async () => {
  assert.ok(cases.length >= 2);
  let compared = 0;
  for (const c of cases) {
    // The prompt round-trips to the same ids (else the comparison would be of another prompt).
    assert.deepEqual(tokenizer.encode(c.prompt, { addSpecialTokens: false }), c.ids);
    const completion = await client.completions.create({
      model: 'chat',
      prompt: c.ids, // token ids: exactly the reference's prompt
      max_tokens: c.greedyIds.length,
      temperature: 0,
    });
    const text = completion.choices[0]!.text;
    const expected = tokenizer.decode(
      c.greedyIds.filter((id) => !tokenizer.eosTokenIds.includes(id)),
      { skipSpecialTokens: true },
    );
    assert.equal(text, expected.slice(0, text.length), 'a prefix of PyTorch greedy');
    // Stopping early is only allowed on an end-of-sequence token PyTorch also produced.
    if (completion.choices[0]!.finish_reason === 'stop')
      assert.ok(c.greedyIds.some((id) => tokenizer.eosTokenIds.includes(id)));
    else assert.equal(text, expected);
    assert.equal(completion.usage!.prompt_tokens, c.ids.length);
    compared += text.length;
  }
  assert.ok(compared > 50, `compared ${compared} characters of greedy text`);
});

async function streamedChat(content: string, maxTokens: number): Promise<string> {
  const stream = await client.chat.completions.create({
    model: 'chat',
    messages: [
      { role: 'system', content: 'You are a helpful assistant who talks about licences.' },
      { role: 'user', content },
    ],
    max_tokens: maxTokens,
    temperature: 0,
    stream: true,
    stream_options: { include_usage: true },
  });
  let text = '';
  let usageChunks = 0;
  let finish: string | null = null;
  for await (const chunk of stream) {
    assert.equal(chunk.object, 'chat.completion.chunk');
    if (chunk.usage !== null && chunk.usage !== undefined) {
      usageChunks += 1;
      assert.equal(chunk.choices.length, 0);
      assert.ok(chunk.usage.completion_tokens >= 1);
      continue;
    }
    const choice = chunk.choices[0]!;
    text += choice.delta.content ?? '';
    finish = choice.finish_reason ?? finish;
  }
  assert.equal(usageChunks, 1, 'one final usage chunk');
  assert.ok(finish === 'stop' || finish === 'length', `finish_reason ${finish}`);
  return text;
}

void test('32 concurrent greedy chat streams through the gateway each give their text alone', async () => {
  const questions = Array.from(
    { length: 32 },
    (_, i) =>
      `Question ${i}: what does clause ${(i * 7) % 13} of the licence say about ${['copies', 'source code', 'patents', 'warranty'][i % 4]}?`,
  );
  const lengths = questions.map((_, i) => 8 + ((i * 5) % 40));
  const alone: string[] = [];
  for (const [i, q] of questions.entries()) alone.push(await streamedChat(q, lengths[i]!));
  const together = await Promise.all(questions.map((q, i) => streamedChat(q, lengths[i]!)));
  for (const i of questions.keys()) assert.equal(together[i], alone[i], `stream ${i}`);
  assert.ok(alone.some((t) => t.length > 0));
});

void test('gateway refusals on the OpenAI routes are OpenAI-shaped', async () => {
  await assert.rejects(
    client.chat.completions.create({
      model: 'nope',
      messages: [{ role: 'user', content: 'hi' }],
    }),
    (error: unknown) => error instanceof OpenAI.NotFoundError,
  );
  await assert.rejects(
    client.completions.create({ model: 'chat', prompt: 'hi', max_tokens: 0 }),
    (error: unknown) =>
      error instanceof OpenAI.BadRequestError &&
      (error.error as { param?: string }).param === 'max_tokens',
  );
  await assert.rejects(
    client.completions.create({ model: 'chat', prompt: 'hi', max_tokens: 100_000 }),
    (error: unknown) => error instanceof OpenAI.BadRequestError,
  );
  const raw = await fetch(`${platform.gatewayUrl}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{"model": "chat", "messages": [',
  });
  assert.equal(raw.status, 400);
  const body = (await raw.json()) as { error: { message: string; type: string } };
  assert.equal(body.error.type, 'invalid_request_error');
});

void test('the LLM metrics are on the gateway and the worker', async () => {
  const gatewayMetrics = await (await fetch(`${platform.gatewayUrl}/metrics`)).text();
  assert.match(
    gatewayMetrics,
    /kiln_gateway_llm_ttft_seconds_count\{[^}]*endpoint="chat"[^}]*\} [1-9]/,
  );
});
