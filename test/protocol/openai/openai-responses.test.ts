// Response and chunk shapes, field by field, as OpenAI's API and vLLM send them.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  chatChoice,
  chatChunk,
  chatLogprobs,
  chatResponse,
  chatUsageChunk,
} from '../../../src/protocol/openai/chat-response.ts';
import {
  completionChunk,
  completionLogprobs,
  completionResponse,
  completionUsageChunk,
} from '../../../src/protocol/openai/completion-response.ts';
import {
  openAiFinishReason,
  responseId,
  sseData,
  sseDone,
  usageOf,
} from '../../../src/protocol/openai/response-parts.ts';

const header = { id: 'cmpl-1', created: 1700000000, model: 'tiny' };
const usage = usageOf({ promptTokens: 5, completionTokens: 3, cachedTokens: 2 });
const entries = [
  {
    token: 'He',
    bytes: [72, 101],
    logprob: -0.5,
    top: [
      { token: 'He', bytes: [72, 101], logprob: -0.5 },
      { token: 'A', bytes: [65], logprob: -1 },
    ],
  },
  {
    token: 'llo',
    bytes: [108, 108, 111],
    logprob: -0.25,
    top: [{ token: 'y', bytes: [121], logprob: -0.1 }],
  },
];

test('ids, finish reasons, usage and SSE framing', () => {
  assert.match(responseId('cmpl'), /^cmpl-[0-9a-f]{32}$/);
  assert.match(responseId('chatcmpl'), /^chatcmpl-[0-9a-f]{32}$/);
  assert.equal(openAiFinishReason('kv_cache_full'), 'length');
  assert.equal(openAiFinishReason('stop'), 'stop');
  assert.deepEqual(usage, {
    prompt_tokens: 5,
    completion_tokens: 3,
    total_tokens: 8,
    prompt_tokens_details: { cached_tokens: 2 },
  });
  assert.equal(sseData({ a: 1 }), 'data: {"a":1}\n\n');
  assert.equal(sseDone, 'data: [DONE]\n\n');
});

test('a completion, its legacy logprobs (offsets continuing across chunks) and its chunks', () => {
  const first = completionLogprobs(entries, 3);
  assert.deepEqual(first.logprobs, {
    tokens: ['He', 'llo'],
    token_logprobs: [-0.5, -0.25],
    top_logprobs: [
      { He: -0.5, A: -1 },
      { y: -0.1, llo: -0.25 },
    ],
    text_offset: [3, 5],
  });
  assert.equal(first.nextOffset, 8);
  const choice = {
    index: 0,
    text: 'Hello',
    logprobs: first.logprobs,
    finish_reason: 'length',
  } as const;
  assert.deepEqual(completionResponse(header, [choice], usage), {
    id: 'cmpl-1',
    object: 'text_completion',
    created: 1700000000,
    model: 'tiny',
    choices: [choice],
    usage,
  });
  const part = { index: 1, text: 'x', logprobs: null, finish_reason: null };
  assert.deepEqual(completionChunk(header, part, false), {
    id: 'cmpl-1',
    object: 'text_completion',
    created: 1700000000,
    model: 'tiny',
    choices: [part],
  });
  assert.equal(completionChunk(header, part, true).usage, null);
  // Keys in OpenAI's order, for anyone reading the bytes.
  assert.deepEqual(Object.keys(completionChunk(header, part, true)), [
    'id',
    'object',
    'created',
    'model',
    'choices',
    'usage',
  ]);
  assert.deepEqual(completionUsageChunk(header, usage).choices, []);
  assert.deepEqual(completionUsageChunk(header, usage).usage, usage);
});

test('text_offset counts code points, as OpenAI and vLLM (Python) do, not UTF-16 units', () => {
  // An echoed prompt with an emoji (two UTF-16 units, one code point) before the tokens.
  const echo = 'Hi 😀 ';
  const emojiEntries = [
    { token: '🙂', bytes: [0xf0, 0x9f, 0x99, 0x82], logprob: -1, top: [] },
    { token: '!', bytes: [33], logprob: -2, top: [] },
  ];
  const built = completionLogprobs(emojiEntries, [...echo].length);
  assert.deepEqual(built.logprobs.text_offset, [5, 6]);
  assert.equal(built.nextOffset, 7);
});

test("chat logprobs bytes: each token's own, also when it is part of a character", () => {
  // The first half of 🙂's four bytes: its text alone is U+FFFD, its bytes are not EF BF BD.
  const logprobs = chatLogprobs(
    [
      {
        token: '\uFFFD',
        bytes: [0xf0, 0x9f],
        logprob: -1,
        top: [{ token: '\uFFFD', bytes: [0xf0, 0x9f], logprob: -1 }],
      },
    ],
    1,
  );
  assert.deepEqual(logprobs.content, [
    {
      token: '\uFFFD',
      logprob: -1,
      bytes: [0xf0, 0x9f],
      top_logprobs: [{ token: '\uFFFD', logprob: -1, bytes: [0xf0, 0x9f] }],
    },
  ]);
});

test('a chat completion, its logprobs with bytes, and its chunks', () => {
  const logprobs = chatLogprobs(
    [{ token: 'é', bytes: [195, 169], logprob: -1, top: entries[0]!.top }],
    1,
  );
  assert.deepEqual(logprobs, {
    content: [
      {
        token: 'é',
        logprob: -1,
        bytes: [195, 169],
        top_logprobs: [{ token: 'He', logprob: -0.5, bytes: [72, 101] }],
      },
    ],
    refusal: null,
  });
  const chatHeader = { ...header, id: 'chatcmpl-1' };
  assert.deepEqual(chatResponse(chatHeader, [chatChoice(0, 'hi', null, 'stop')], usage), {
    id: 'chatcmpl-1',
    object: 'chat.completion',
    created: 1700000000,
    model: 'tiny',
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: 'hi', refusal: null },
        logprobs: null,
        finish_reason: 'stop',
      },
    ],
    usage,
  });
  const role = {
    index: 0,
    delta: { role: 'assistant' as const, content: '' },
    logprobs: null,
    finish_reason: null,
  };
  assert.deepEqual(chatChunk(chatHeader, role, true), {
    id: 'chatcmpl-1',
    object: 'chat.completion.chunk',
    created: 1700000000,
    model: 'tiny',
    choices: [role],
    usage: null,
  });
  assert.equal('usage' in chatChunk(chatHeader, role, false), false);
  assert.deepEqual(chatUsageChunk(chatHeader, usage), {
    id: 'chatcmpl-1',
    object: 'chat.completion.chunk',
    created: 1700000000,
    model: 'tiny',
    choices: [],
    usage,
  });
});
