// Preparing choices with tiny-llama's tokenizer (context 512): a prompt with more characters
// than the context's tokens could hold is refused before it is tokenized (tokenizing runs on
// the worker's event loop, where a 2 MB prompt stalls every stream), with the 400 of a prompt
// over the context; a prompt that fits is not refused by that bound.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseChatRequest } from '../../../src/protocol/openai/chat-request.ts';
import { parseCompletionRequest } from '../../../src/protocol/openai/completion-request.ts';
import { prepareChat, prepareCompletion } from '../../../src/worker/llm/prepare-choices.ts';
import { referenceParts } from './llm-worker-harness.ts';

const contextLength = 512;
const limits = { maxN: 8, contextLength };

function completion(prompt: string) {
  const parsed = parseCompletionRequest({ model: 'tiny', prompt, max_tokens: 4 }, limits);
  assert.ok(parsed.ok);
  return parsed.request;
}

test('a prompt far longer than the context could hold: a 400 before tokenizing', async (t) => {
  const { tokenizer } = await referenceParts();
  const encode = t.mock.method(tokenizer, 'encode');
  const huge = 'free software '.repeat(150_000); // 2.1 MB
  const prepared = prepareCompletion('cmpl-1', completion(huge), tokenizer, contextLength);
  assert.ok('status' in prepared);
  assert.equal(prepared.status, 400);
  assert.equal(prepared.body.error.param, 'prompt');
  assert.match(prepared.body.error.message, /maximum context length is 512 tokens/);
  assert.equal(encode.mock.callCount(), 0, 'not tokenized');

  const chat = parseChatRequest(
    { model: 'tiny', messages: [{ role: 'user', content: huge }] },
    limits,
  );
  assert.ok(chat.ok);
  const preparedChat = prepareChat('chatcmpl-1', chat.request, tokenizer, contextLength);
  assert.ok('status' in preparedChat);
  assert.equal(preparedChat.status, 400);
  assert.equal(preparedChat.body.error.param, 'messages');
  assert.equal(encode.mock.callCount(), 0, 'not tokenized');
});

test('the bound never refuses a prompt that fits: the longest tokens, one short of it', async () => {
  const { tokenizer } = await referenceParts();
  // The tokens with the most bytes each: the densest text the context can hold.
  let longest = 0;
  for (let id = 0; id < tokenizer.vocabSize; id += 1) {
    if (tokenizer.tokenBytes(id).length > tokenizer.tokenBytes(longest).length) longest = id;
  }
  const text = tokenizer.decode(Array<number>(contextLength - 8).fill(longest));
  const ids = tokenizer.encode(text);
  assert.ok(ids.length + 4 <= contextLength, `${ids.length} tokens fit`);
  const prepared = prepareCompletion('cmpl-2', completion(text), tokenizer, contextLength);
  assert.ok(!('status' in prepared), 'status' in prepared ? prepared.body.error.message : '');
  assert.deepEqual(prepared.choices[0]?.request.promptTokens, ids);
});
