// A real hf-llm worker serving tiny-llama, driven by the `openai` npm client, unmodified:
// completions, chat, streaming with usage, n, stop, logprobs; greedy output equal to the
// in-process engine's; bad input as OpenAI-shaped 400s naming the field; a client aborting
// mid-stream frees its KV blocks; the load report, the kiln-load header and the metrics.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { chatStopTokenIds } from '../../../src/worker/llm/prepare-choices.ts';
import { until } from '../../helpers/until.ts';
import {
  loadOf,
  metricValue,
  referenceGreedy,
  referenceParts,
  startLlmWorker,
  type LlmWorker,
} from './llm-worker-harness.ts';

let w: LlmWorker;
let client: OpenAI;
const prompt = 'The GNU General Public License';

before(async () => {
  w = await startLlmWorker({ maxN: 4 });
  client = new OpenAI({ baseURL: `${w.url}/v1`, apiKey: 'x', maxRetries: 0 });
});
after(() => w.close());

test('completions: greedy text equals the in-process engine, usage counts the tokens', async () => {
  const { tokenizer } = await referenceParts();
  const completion = await client.completions.create({
    model: 'tiny',
    prompt,
    max_tokens: 24,
    temperature: 0,
  });
  const reference = await referenceGreedy(tokenizer.encode(prompt), 24, tokenizer.eosTokenIds);
  assert.match(completion.id, /^cmpl-/);
  assert.equal(completion.object, 'text_completion');
  assert.equal(completion.model, 'tiny');
  assert.equal(completion.choices.length, 1);
  const choice = completion.choices[0]!;
  assert.equal(choice.index, 0);
  assert.equal(choice.text, reference.text);
  assert.equal(choice.logprobs, null);
  assert.equal(choice.finish_reason, reference.completionTokens === 24 ? 'length' : 'stop');
  assert.deepEqual(completion.usage, {
    prompt_tokens: tokenizer.encode(prompt).length,
    completion_tokens: reference.completionTokens,
    total_tokens: tokenizer.encode(prompt).length + reference.completionTokens,
    prompt_tokens_details: {
      cached_tokens: completion.usage!.prompt_tokens_details!.cached_tokens,
    },
  });
});

test('chat: the template applied, greedy text equals the in-process engine', async () => {
  const { tokenizer } = await referenceParts();
  const messages = [
    { role: 'system' as const, content: 'You answer about licences.' },
    { role: 'user' as const, content: 'What is free software?' },
  ];
  const chat = await client.chat.completions.create({
    model: 'tiny-llama', // the registered model's name is accepted too
    messages,
    max_tokens: 20,
    temperature: 0,
  });
  const rendered = tokenizer.applyChatTemplate(messages, { addGenerationPrompt: true });
  assert.ok(rendered.ok);
  const tokens = tokenizer.encode(rendered.text, { addSpecialTokens: false });
  const reference = await referenceGreedy(tokens, 20, chatStopTokenIds(tokenizer));
  assert.match(chat.id, /^chatcmpl-/);
  assert.equal(chat.object, 'chat.completion');
  assert.equal(chat.choices[0]!.message.role, 'assistant');
  assert.equal(chat.choices[0]!.message.content, reference.text);
  assert.equal(chat.usage!.prompt_tokens, tokens.length);
  assert.equal(chat.usage!.completion_tokens, reference.completionTokens);
});

test('a streamed chat with include_usage: role first, deltas, usage: null, a usage chunk, [DONE]', async () => {
  const request = {
    model: 'tiny',
    messages: [{ role: 'user' as const, content: 'Tell me about copyleft.' }],
    max_tokens: 16,
    temperature: 0,
  };
  const whole = await client.chat.completions.create(request);
  const stream = await client.chat.completions.create({
    ...request,
    stream: true,
    stream_options: { include_usage: true },
  });
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  const first = chunks[0]!;
  assert.equal(first.object, 'chat.completion.chunk');
  assert.deepEqual(first.choices[0]!.delta, { role: 'assistant', content: '' });
  const last = chunks.at(-1)!;
  assert.deepEqual(last.choices, []);
  // Cached prompt tokens differ: the second request finds the first's prompt in the cache.
  assert.equal(last.usage!.prompt_tokens, whole.usage!.prompt_tokens);
  assert.equal(last.usage!.completion_tokens, whole.usage!.completion_tokens);
  assert.equal(last.usage!.total_tokens, whole.usage!.total_tokens);
  assert.ok(last.usage!.prompt_tokens_details!.cached_tokens! > 0);
  for (const chunk of chunks.slice(0, -1)) {
    assert.equal(chunk.usage, null);
    assert.equal(chunk.id, first.id);
  }
  const text = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
  assert.equal(text, whole.choices[0]!.message.content);
  const finishes = chunks.filter((c) => c.choices[0]?.finish_reason != null);
  assert.equal(finishes.length, 1);
  assert.equal(finishes[0]!.choices[0]!.finish_reason, whole.choices[0]!.finish_reason);
});

test('a streamed completion, raw: SSE framing, the kiln-load header, data: [DONE] last', async () => {
  const response = await fetch(`${w.url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'tiny', prompt, max_tokens: 8, temperature: 0, stream: true }),
  });
  assert.equal(response.status, 200);
  assert.match(response.headers.get('content-type') ?? '', /^text\/event-stream/);
  const load = JSON.parse(response.headers.get('kiln-load') ?? 'null') as Record<string, number>;
  assert.deepEqual(Object.keys(load).sort(), [
    'inflight',
    'kvBlocksTotal',
    'kvBlocksUsed',
    'kvUtilization',
    'paused',
    'running',
    'waiting',
  ]);
  assert.equal(load.inflight, 1);
  const body = await response.text();
  const events = body.split('\n\n').filter((e) => e !== '');
  assert.ok(events.every((e) => e.startsWith('data: ')));
  assert.equal(events.at(-1), 'data: [DONE]');
  const chunks = events.slice(0, -1).map((e) => JSON.parse(e.slice(6)) as OpenAI.Completion);
  assert.ok(chunks.every((c) => c.object === 'text_completion' && !('usage' in c)));
  const whole = await client.completions.create({
    model: 'tiny',
    prompt,
    max_tokens: 8,
    temperature: 0,
  });
  assert.equal(chunks.map((c) => c.choices[0]!.text).join(''), whole.choices[0]!.text);
  assert.equal(chunks.at(-1)!.choices[0]!.finish_reason, whole.choices[0]!.finish_reason);
});

test('n = 2 with a seed: two choices, reproducible; several prompts numbered prompt-major', async () => {
  const request = { model: 'tiny', prompt, max_tokens: 12, n: 2, seed: 7, temperature: 1 };
  const a = await client.completions.create(request);
  const b = await client.completions.create(request);
  assert.deepEqual(
    a.choices.map((c) => c.index),
    [0, 1],
  );
  assert.deepEqual(
    a.choices.map((c) => c.text),
    b.choices.map((c) => c.text),
  );
  assert.notEqual(a.choices[0]!.text, a.choices[1]!.text);
  const two = await client.completions.create({
    model: 'tiny',
    prompt: ['one', 'two'],
    max_tokens: 4,
    n: 2,
    temperature: 0,
  });
  assert.deepEqual(
    two.choices.map((c) => c.index),
    [0, 1, 2, 3],
  );
  assert.equal(two.choices[0]!.text, two.choices[1]!.text); // greedy: same prompt, same text
  const { tokenizer } = await referenceParts();
  assert.equal(
    two.usage!.prompt_tokens,
    tokenizer.encode('one').length + tokenizer.encode('two').length,
  );
});

test('n = 4 over a 100-token prompt: choices 1..3 take its 6 full blocks from the prefix cache', async () => {
  // The four choices are submitted together. Taken by the engine thread in one turn, it
  // admits 1..3 once choice 0 has computed (and cached) the blocks they share, instead of
  // computing the prompt four times; taken one by one, they find them cached anyway.
  const { tokenizer } = await referenceParts();
  const tokens = tokenizer.encode(
    'Everyone is permitted to copy and distribute verbatim copies. '.repeat(12),
  );
  const promptTokens = tokens.slice(0, 100);
  assert.equal(promptTokens.length, 100);
  const hitBefore = await metricValue(w.url, 'kiln_llm_prefix_cache_hit_tokens_total');
  const answer = await client.completions.create({
    model: 'tiny',
    prompt: promptTokens,
    max_tokens: 6,
    n: 4,
    temperature: 0,
  });
  const hits = (await metricValue(w.url, 'kiln_llm_prefix_cache_hit_tokens_total')) - hitBefore;
  assert.ok(hits >= 3 * 96, `${hits} prefix-cache hit tokens`);
  assert.equal(answer.choices.length, 4);
  for (const choice of answer.choices) assert.equal(choice.text, answer.choices[0]!.text);
});

test('16 concurrent greedy streams each produce the text they produce alone', async () => {
  const prompts = Array.from({ length: 16 }, (_, i) => `${i} ${'copyleft '.repeat(i % 5)}licence`);
  const alone: string[] = [];
  for (const p of prompts) {
    const c = await client.completions.create({
      model: 'tiny',
      prompt: p,
      max_tokens: 12,
      temperature: 0,
    });
    alone.push(c.choices[0]!.text);
  }
  const together = await Promise.all(
    prompts.map(async (p) => {
      const stream = await client.completions.create({
        model: 'tiny',
        prompt: p,
        max_tokens: 12,
        temperature: 0,
        stream: true,
      });
      let text = '';
      for await (const chunk of stream) text += chunk.choices[0]?.text ?? '';
      return text;
    }),
  );
  assert.deepEqual(together, alone);
});

test('echo puts the prompt before the completion, streamed or not', async () => {
  const plain = await client.completions.create({
    model: 'tiny',
    prompt,
    max_tokens: 5,
    temperature: 0,
  });
  const echoed = await client.completions.create({
    model: 'tiny',
    prompt,
    max_tokens: 5,
    temperature: 0,
    echo: true,
  });
  assert.equal(echoed.choices[0]!.text, prompt + plain.choices[0]!.text);
  const stream = await client.completions.create({
    model: 'tiny',
    prompt,
    max_tokens: 5,
    temperature: 0,
    echo: true,
    stream: true,
  });
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.text ?? '';
  assert.equal(text, prompt + plain.choices[0]!.text);
});

test('stop: the text ends before the stop string, finish_reason stop', async () => {
  const whole = await client.completions.create({
    model: 'tiny',
    prompt,
    max_tokens: 24,
    temperature: 0,
  });
  const text = whole.choices[0]!.text;
  const stop = text.slice(6, 9);
  assert.equal(stop.length, 3);
  const stopped = await client.completions.create({
    model: 'tiny',
    prompt,
    max_tokens: 24,
    temperature: 0,
    stop: [stop, 'never-seen-string'],
  });
  assert.equal(stopped.choices[0]!.text, text.slice(0, text.indexOf(stop)));
  assert.equal(stopped.choices[0]!.finish_reason, 'stop');
});

test('logprobs: completions (legacy form) and chat (content entries with top_logprobs)', async () => {
  const completion = await client.completions.create({
    model: 'tiny',
    prompt,
    max_tokens: 6,
    temperature: 0,
    logprobs: 2,
  });
  const lp = completion.choices[0]!.logprobs!;
  assert.equal(lp.tokens!.length, completion.usage!.completion_tokens);
  assert.equal(lp.tokens!.join(''), completion.choices[0]!.text);
  assert.equal(lp.text_offset![0], 0);
  for (const [i, top] of lp.top_logprobs!.entries()) {
    assert.ok(Object.keys(top).length >= 2 && Object.keys(top).length <= 3);
    // Greedy: the chosen token is the most likely one.
    assert.equal(Math.max(...Object.values(top)), lp.token_logprobs![i]);
  }
  const chat = await client.chat.completions.create({
    model: 'tiny',
    messages: [{ role: 'user', content: 'hello' }],
    max_tokens: 5,
    temperature: 0,
    logprobs: true,
    top_logprobs: 3,
  });
  const content = chat.choices[0]!.logprobs!.content!;
  assert.ok(content.length > 0);
  for (const entry of content) {
    assert.equal(entry.top_logprobs.length, 3);
    assert.equal(entry.top_logprobs[0]!.logprob, entry.logprob);
    // A whole-character token: its bytes are its text's UTF-8.
    if (!entry.token.includes('\uFFFD'))
      assert.deepEqual(entry.bytes, [...Buffer.from(entry.token, 'utf8')]);
  }
  // Each token's own bytes (part of a character's for a token that holds only part), so
  // together they spell the message, as OpenAI's do.
  const message = chat.choices[0]!.message.content!;
  if (!message.includes('\uFFFD'))
    assert.deepEqual(
      content.flatMap((entry) => entry.bytes!),
      [...Buffer.from(message, 'utf8')],
    );
});

test('bad input: OpenAI-shaped 400s naming the field, the client throws BadRequestError', async () => {
  const long = 'free software '.repeat(400);
  const cases: [() => Promise<unknown>, string][] = [
    [() => client.completions.create({ model: 'tiny', prompt, max_tokens: 0 }), 'max_tokens'],
    [() => client.completions.create({ model: 'tiny', prompt, max_tokens: 100_000 }), 'max_tokens'],
    [() => client.completions.create({ model: 'tiny', prompt, max_tokens: 511 }), 'max_tokens'],
    [() => client.completions.create({ model: 'tiny', prompt: long, max_tokens: 5 }), 'prompt'],
    [() => client.completions.create({ model: 'tiny', prompt, temperature: 3 }), 'temperature'],
    [() => client.completions.create({ model: 'tiny', prompt, top_p: 1.5 }), 'top_p'],
    [() => client.completions.create({ model: 'tiny', prompt, n: 5 }), 'n'],
    [() => client.completions.create({ model: 'tiny', prompt: [5000] }), 'prompt'],
    [
      () =>
        client.chat.completions.create({
          model: 'tiny',
          messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'x' } }] }],
        }),
      'messages[0].content[0].type',
    ],
    [
      () =>
        client.chat.completions.create({ model: 'tiny', messages: [{ role: 'robot' } as never] }),
      'messages[0].role',
    ],
    [
      () =>
        client.chat.completions.create({
          model: 'tiny',
          messages: [{ role: 'user', content: long }],
        }),
      'messages',
    ],
  ];
  for (const [call, param] of cases) {
    await assert.rejects(call, (error: unknown) => {
      assert.ok(error instanceof OpenAI.BadRequestError, `${param}: ${String(error)}`);
      assert.ok(error instanceof OpenAI.BadRequestError, String(error));
      assert.equal(error.status, 400);
      assert.equal(error.param, param, error.message);
      assert.equal(error.type, 'invalid_request_error');
      return true;
    });
  }
  await assert.rejects(
    () => client.completions.create({ model: 'nope', prompt }),
    (error: unknown) => {
      assert.ok(error instanceof OpenAI.NotFoundError);
      assert.equal(error.code, 'model_not_found');
      return true;
    },
  );
  const raw = await fetch(`${w.url}/v1/completions`, { method: 'POST', body: '{nope' });
  assert.equal(raw.status, 400);
  assert.equal(
    ((await raw.json()) as { error: { type: string } }).error.type,
    'invalid_request_error',
  );
});

test('/v1/models lists the endpoint; v2 infer on an LLM worker is a clear 400', async () => {
  const models = await client.models.list();
  assert.deepEqual(
    models.data.map((m) => [m.id, m.object, m.owned_by]),
    [['tiny', 'model', 'kiln']],
  );
  const infer = await fetch(`${w.url}/v2/models/tiny/infer`, { method: 'POST', body: '{}' });
  assert.equal(infer.status, 400);
  assert.match(((await infer.json()) as { error: string }).error, /\/v1\/completions/);
  assert.equal((await fetch(`${w.url}/v2/health/ready`)).status, 200);
  // HEAD where GET is served; another method on a known route: 405 naming what is allowed.
  assert.equal((await fetch(`${w.url}/v1/models`, { method: 'HEAD' })).status, 200);
  const get = await fetch(`${w.url}/v1/chat/completions`);
  assert.equal(get.status, 405);
  assert.equal(get.headers.get('allow'), 'POST');
  assert.equal(
    ((await get.json()) as { error: { type: string } }).error.type,
    'invalid_request_error',
  );
  const post = await fetch(`${w.url}/v1/models`, { method: 'POST', body: '{}' });
  assert.equal(post.status, 405);
  assert.equal(post.headers.get('allow'), 'GET, HEAD');
});

test('a client aborting mid-stream frees its blocks at once', async () => {
  const generatedBefore = await metricValue(w.url, 'kiln_llm_generation_tokens_total');
  const controller = new AbortController();
  // ignore_eos (vLLM's extension): the stream surely runs long past the abort.
  const body = {
    model: 'tiny',
    prompt,
    max_tokens: 400,
    temperature: 0,
    stream: true,
    n: 2,
    ignore_eos: true,
  };
  const stream = await client.completions.create(body as OpenAI.CompletionCreateParamsStreaming, {
    signal: controller.signal,
  });
  let seen = 0;
  try {
    for await (const chunk of stream) {
      seen += chunk.choices.length;
      if (seen === 4) controller.abort();
    }
  } catch (error) {
    assert.ok(error instanceof OpenAI.APIUserAbortError, String(error));
  }
  assert.ok(controller.signal.aborted);
  assert.ok(seen < 100, `${seen} chunks`);
  await until(async () => {
    const load = await loadOf(w.url);
    return load.kvBlocksUsed === 0 && load.running === 0 && load.inflight === 0;
  }, 'the blocks freed');
  assert.ok((await metricValue(w.url, 'kiln_llm_client_cancels_total')) >= 1);
  // Cancelled, not run to the end: far fewer than the 2 × 400 tokens asked for.
  const generated =
    (await metricValue(w.url, 'kiln_llm_generation_tokens_total')) - generatedBefore;
  assert.ok(generated < 800, `${generated} tokens generated`);
});

test('metrics: TTFT and ITL histograms, token counters, KV gauges, finish reasons', async () => {
  assert.ok((await metricValue(w.url, 'kiln_llm_time_to_first_token_seconds_count')) > 0);
  assert.ok((await metricValue(w.url, 'kiln_llm_inter_token_latency_seconds_count')) > 0);
  assert.ok((await metricValue(w.url, 'kiln_llm_prompt_tokens_total')) > 0);
  assert.ok((await metricValue(w.url, 'kiln_llm_generation_tokens_total')) > 0);
  assert.ok((await metricValue(w.url, 'kiln_llm_kv_blocks_total')) > 0);
  assert.equal(await metricValue(w.url, 'kiln_llm_kv_blocks_used'), 0);
  assert.ok(
    (await metricValue(w.url, 'kiln_llm_requests_finished_total', 'finish_reason="length"')) > 0,
  );
  assert.ok((await metricValue(w.url, 'kiln_llm_prefix_cache_queried_tokens_total')) > 0);
});
