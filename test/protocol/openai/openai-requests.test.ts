// Request parsing for /v1/completions and /v1/chat/completions: every accepted form read into
// the typed request, and every refusal an OpenAI-shaped 400 naming the field (`param`).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseCompletionRequest } from '../../../src/protocol/openai/completion-request.ts';
import { parseChatRequest } from '../../../src/protocol/openai/chat-request.ts';
import { resolveMaxTokens, samplingFor } from '../../../src/protocol/openai/generation-budget.ts';

const limits = { maxN: 4, contextLength: 512 };

function refused(outcome: { ok: boolean; error?: unknown }, param: string | null): string {
  assert.equal(outcome.ok, false, JSON.stringify(outcome));
  const error = (outcome as { error: { status: number; body: { error: Record<string, unknown> } } })
    .error;
  assert.equal(error.status, 400);
  assert.equal(error.body.error.type, 'invalid_request_error');
  assert.equal(error.body.error.param, param, String(error.body.error.message));
  assert.equal(error.body.error.code, null);
  return String(error.body.error.message);
}

test('completion prompts in every form OpenAI takes', () => {
  const forms: [unknown, unknown][] = [
    ['hi', [{ kind: 'text', text: 'hi' }]],
    [
      ['a', 'b'],
      [
        { kind: 'text', text: 'a' },
        { kind: 'text', text: 'b' },
      ],
    ],
    [[1, 2, 3], [{ kind: 'tokens', tokens: [1, 2, 3] }]],
    [
      [[1], [2, 3]],
      [
        { kind: 'tokens', tokens: [1] },
        { kind: 'tokens', tokens: [2, 3] },
      ],
    ],
  ];
  for (const [prompt, expected] of forms) {
    const parsed = parseCompletionRequest({ model: 'm', prompt }, limits);
    assert.ok(parsed.ok);
    assert.deepEqual(parsed.request.prompts, expected);
  }
});

test('a completion request with every field read into the typed request', () => {
  const parsed = parseCompletionRequest(
    {
      model: 'm',
      prompt: 'x',
      max_tokens: 7,
      temperature: 0,
      top_p: 0.5,
      n: 2,
      best_of: 2,
      stop: 'END',
      seed: 42,
      logprobs: 3,
      presence_penalty: 0.5,
      frequency_penalty: -0.5,
      stream: true,
      stream_options: { include_usage: true },
      user: 'u',
      echo: false,
      top_k: 5,
      unknown_extension: 'ignored',
    },
    limits,
  );
  assert.ok(parsed.ok);
  const r = parsed.request;
  assert.equal(r.maxTokens, 7);
  assert.equal(r.n, 2);
  assert.deepEqual(r.stop, ['END']);
  assert.equal(r.seed, 42);
  assert.equal(r.logprobs, 3);
  assert.equal(r.stream, true);
  assert.equal(r.includeUsage, true);
  assert.equal(r.user, 'u');
  assert.deepEqual(samplingFor(r, 1, r.logprobs), {
    temperature: 0,
    topP: 0.5,
    topK: 5,
    minP: 0,
    repetitionPenalty: 1,
    presencePenalty: 0.5,
    frequencyPenalty: -0.5,
    seed: 43,
    logprobs: 3,
  });
});

test('defaults: one choice, temperature 1, no stop; max_tokens 16 for a completion, the context for a chat', () => {
  const parsed = parseCompletionRequest({ model: 'm', prompt: 'x', max_tokens: null }, limits);
  assert.ok(parsed.ok);
  assert.equal(parsed.request.n, 1);
  assert.equal(parsed.request.temperature, 1);
  assert.equal(parsed.request.maxTokens, null);
  assert.equal(parsed.request.stream, false);
  assert.deepEqual(samplingFor(parsed.request, 0, null).seed, undefined);
  // OpenAI's and vLLM's default for the legacy completions route is 16 tokens (a client that
  // leaves it out gets a short answer there, not the whole context) …
  assert.equal(resolveMaxTokens(12, parsed.request, 512, 'prompt'), 16);
  // … or what the context leaves, when that is less.
  assert.equal(resolveMaxTokens(500, parsed.request, 512, 'prompt'), 12);
  // A chat without a limit may use the rest of the context, as OpenAI's and vLLM's do.
  assert.equal(resolveMaxTokens(12, parsed.request, 512, 'messages'), 500);
});

test('bad completion fields are 400s naming the field', () => {
  const base = { model: 'm', prompt: 'x' };
  const cases: [Record<string, unknown>, string | null][] = [
    [{ ...base, max_tokens: 0 }, 'max_tokens'],
    [{ ...base, max_tokens: -3 }, 'max_tokens'],
    [{ ...base, max_tokens: 1.5 }, 'max_tokens'],
    [{ ...base, max_tokens: 512 }, 'max_tokens'],
    [{ ...base, max_tokens: '10' }, 'max_tokens'],
    [{ ...base, temperature: 2.5 }, 'temperature'],
    [{ ...base, temperature: 'hot' }, 'temperature'],
    [{ ...base, top_p: 0 }, 'top_p'],
    [{ ...base, n: 5 }, 'n'],
    [{ ...base, n: 0 }, 'n'],
    [{ ...base, presence_penalty: 3 }, 'presence_penalty'],
    [{ ...base, frequency_penalty: -2.1 }, 'frequency_penalty'],
    [{ ...base, seed: 1.5 }, 'seed'],
    [{ ...base, stop: ['a', 'b', 'c', 'd', 'e'] }, 'stop'],
    [{ ...base, stop: [1] }, 'stop'],
    [{ ...base, stop: '' }, 'stop'],
    [{ ...base, logprobs: 6 }, 'logprobs'],
    [{ ...base, logprobs: true }, 'logprobs'],
    [{ ...base, best_of: 3 }, 'best_of'],
    [{ ...base, echo: true, logprobs: 1 }, 'echo'],
    [{ ...base, suffix: 'tail' }, 'suffix'],
    [{ ...base, stream: 'yes' }, 'stream'],
    [{ ...base, stream_options: { include_usage: true } }, 'stream_options'],
    [
      { ...base, stream: true, stream_options: { include_usage: 1 } },
      'stream_options.include_usage',
    ],
    [{ ...base, user: 7 }, 'user'],
    [{ ...base, logit_bias: { '5': 10 } }, 'logit_bias'],
    [{ model: 'm' }, 'prompt'],
    [{ model: 'm', prompt: [] }, 'prompt'],
    [{ model: 'm', prompt: [[1], 'a'] }, 'prompt'],
    [{ model: 'm', prompt: [[1], []] }, 'prompt'],
    [{ model: 'm', prompt: [-1] }, 'prompt'],
    [{ prompt: 'x' }, 'model'],
  ];
  for (const [body, param] of cases) refused(parseCompletionRequest(body, limits), param);
  refused(parseCompletionRequest([1, 2], limits), null);
  refused(parseCompletionRequest(null, limits), null);
});

test('chat messages: roles, text parts joined, developer as system', () => {
  const parsed = parseChatRequest(
    {
      model: 'm',
      messages: [
        { role: 'developer', content: 'be brief' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'one' },
            { type: 'text', text: 'two' },
          ],
          name: 'ann',
        },
        { role: 'assistant', content: null },
        { role: 'user', content: 'three' },
      ],
      max_completion_tokens: 9,
      logprobs: true,
      top_logprobs: 2,
    },
    limits,
  );
  assert.ok(parsed.ok);
  assert.deepEqual(parsed.request.messages, [
    { role: 'system', content: 'be brief' },
    { role: 'user', content: 'one\ntwo', name: 'ann' },
    { role: 'assistant', content: '' },
    { role: 'user', content: 'three' },
  ]);
  assert.equal(parsed.request.maxTokens, 9);
  assert.equal(parsed.request.logprobs, true);
  assert.equal(parsed.request.topLogprobs, 2);
});

test('malformed messages and unsupported chat features are 400s naming the field', () => {
  const user = { role: 'user', content: 'hi' };
  const base = { model: 'm', messages: [user] };
  const cases: [Record<string, unknown>, string][] = [
    [{ model: 'm' }, 'messages'],
    [{ model: 'm', messages: [] }, 'messages'],
    [{ model: 'm', messages: 'hi' }, 'messages'],
    [{ model: 'm', messages: ['hi'] }, 'messages[0]'],
    [{ model: 'm', messages: [user, { content: 'x' }] }, 'messages[1].role'],
    [{ model: 'm', messages: [{ role: 'wizard', content: 'x' }] }, 'messages[0].role'],
    [{ model: 'm', messages: [{ role: 'tool', content: 'x' }] }, 'messages[0].role'],
    [{ model: 'm', messages: [{ role: 'user' }] }, 'messages[0].content'],
    [{ model: 'm', messages: [{ role: 'user', content: null }] }, 'messages[0].content'],
    [{ model: 'm', messages: [{ role: 'user', content: 5 }] }, 'messages[0].content'],
    [
      { model: 'm', messages: [{ role: 'user', content: [{ type: 'image_url', image_url: {} }] }] },
      'messages[0].content[0].type',
    ],
    [
      { model: 'm', messages: [{ role: 'user', content: [{ type: 'text', text: 3 }] }] },
      'messages[0].content[0].text',
    ],
    [
      { model: 'm', messages: [{ role: 'assistant', content: null, tool_calls: [{ id: 'x' }] }] },
      'messages[0].tool_calls',
    ],
    [{ model: 'm', messages: [{ role: 'user', content: 'x', name: 1 }] }, 'messages[0].name'],
    [{ ...base, tools: [{ type: 'function' }] }, 'tools'],
    [{ ...base, response_format: { type: 'json_object' } }, 'response_format'],
    [{ ...base, top_logprobs: 2 }, 'top_logprobs'],
    [{ ...base, logprobs: true, top_logprobs: 21 }, 'top_logprobs'],
    [{ ...base, logprobs: 1 }, 'logprobs'],
    [{ ...base, max_completion_tokens: 0 }, 'max_completion_tokens'],
    [{ ...base, n: 9 }, 'n'],
  ];
  for (const [body, param] of cases) refused(parseChatRequest(body, limits), param);
});

test('a missing prompt or messages is said to be missing (no "a undefined")', () => {
  assert.match(
    refused(parseCompletionRequest({ model: 'm' }, limits), 'prompt'),
    /^prompt is required/,
  );
  assert.match(
    refused(parseChatRequest({ model: 'm' }, limits), 'messages'),
    /^messages is required/,
  );
  const messages = [
    refused(
      parseCompletionRequest({ model: 'm', prompt: 'x', temperature: undefined, n: [] }, limits),
      'n',
    ),
    refused(
      parseChatRequest({ model: 'm', messages: [{ role: undefined, content: 'x' }] }, limits),
      'messages[0].role',
    ),
  ];
  for (const message of messages) assert.doesNotMatch(message, /a undefined/);
});

test('the context bounds prompt + max_tokens after tokenizing', () => {
  const fields = { maxTokens: 100 };
  assert.equal(resolveMaxTokens(412, fields, 512, 'prompt'), 100);
  const over = resolveMaxTokens(413, fields, 512, 'messages');
  assert.ok(typeof over === 'object');
  assert.equal(over.status, 400);
  assert.equal(over.body.error.param, 'max_tokens');
  assert.match(over.body.error.message, /maximum context length is 512 tokens/);
  const full = resolveMaxTokens(512, { maxTokens: null }, 512, 'prompt');
  assert.ok(typeof full === 'object');
  assert.equal(full.body.error.param, 'prompt');
});
