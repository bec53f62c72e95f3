// From a parsed OpenAI request to the engine requests that answer it: prompts tokenized (a
// chat through the model's chat template), checked against the context, and one engine
// request per choice — prompt-major, choice index p·n + i — each with its own sampling seed
// (seed + i), the tokens that end it (the tokenizer's EOS ids; for a chat, also the
// template's end-of-turn token), and a group per prompt (its choices share one engine thread
// and the prompt's KV blocks).

import type { EngineRequest } from '../../llm/serving/engine-api.ts';
import type { Tokenizer } from '../../llm/tokenizer/tokenizer.ts';
import type { ChatRequest } from '../../protocol/openai/chat-request.ts';
import type { CompletionRequest } from '../../protocol/openai/completion-request.ts';
import {
  checkPromptLength,
  checkPromptTokens,
  resolveMaxTokens,
  samplingFor,
} from '../../protocol/openai/generation-budget.ts';
import { openAiError, type OpenAiError } from '../../protocol/openai/openai-error.ts';

export interface ChoicePlan {
  /** The choice's `index` in the answer. */
  readonly index: number;
  readonly promptIndex: number;
  readonly request: EngineRequest;
  /** Text the answer puts before the output (`echo`: the prompt); usually ''. */
  readonly echo: string;
}

export interface PreparedChoices {
  readonly choices: readonly ChoicePlan[];
  /** Prompt tokens of each prompt (usage counts each prompt once, whatever n is). */
  readonly promptTokenCounts: readonly number[];
}

/** Tokens chat templates end an assistant turn with, when the vocabulary has them. */
const endOfTurnTokens = ['<|eot_id|>', '<|im_end|>', '<end_of_turn>', '<|end|>', '</s>'];

export function chatStopTokenIds(tokenizer: Tokenizer): number[] {
  const ids = [...tokenizer.eosTokenIds];
  for (const token of endOfTurnTokens) {
    const id = tokenizer.tokenId(token);
    if (id !== undefined && !ids.includes(id)) ids.push(id);
  }
  return ids;
}

function plans(
  requestId: string,
  fields: CompletionRequest | ChatRequest,
  prompts: readonly { readonly tokens: readonly number[]; readonly echo: string }[],
  contextLength: number,
  promptParam: 'prompt' | 'messages',
  stopTokenIds: readonly number[],
  logprobs: number | null,
): PreparedChoices | OpenAiError {
  const choices: ChoicePlan[] = [];
  for (const [promptIndex, prompt] of prompts.entries()) {
    const maxTokens = resolveMaxTokens(prompt.tokens.length, fields, contextLength, promptParam);
    if (typeof maxTokens !== 'number') return maxTokens;
    for (let i = 0; i < fields.n; i += 1) {
      const index = promptIndex * fields.n + i;
      choices.push({
        index,
        promptIndex,
        echo: prompt.echo,
        request: {
          requestId: `${requestId}-${index}`,
          promptTokens: prompt.tokens,
          maxTokens,
          sampling: samplingFor(fields, i, logprobs),
          stopTokenIds: fields.ignoreEos ? [] : stopTokenIds,
          stopStrings: fields.stop,
          // One engine thread for a prompt's choices: they share its KV blocks there.
          group: `${requestId}/${promptIndex}`,
        },
      });
    }
  }
  return { choices, promptTokenCounts: prompts.map((p) => p.tokens.length) };
}

export function prepareCompletion(
  requestId: string,
  request: CompletionRequest,
  tokenizer: Tokenizer,
  contextLength: number,
): PreparedChoices | OpenAiError {
  const prompts: { tokens: readonly number[]; echo: string }[] = [];
  for (const prompt of request.prompts) {
    if (prompt.kind === 'tokens') {
      const problem = checkPromptTokens(prompt.tokens, tokenizer.vocabSize);
      if (problem !== null) return problem;
      prompts.push({
        tokens: prompt.tokens,
        echo: request.echo ? tokenizer.decode(prompt.tokens, { skipSpecialTokens: true }) : '',
      });
    } else {
      // Tokenizing runs on the event loop: a prompt that cannot fit is refused before it.
      const tooLong = checkPromptLength(
        prompt.text.length,
        tokenizer.maxTextLength(contextLength),
        contextLength,
        'prompt',
      );
      if (tooLong !== null) return tooLong;
      prompts.push({
        tokens: tokenizer.encode(prompt.text),
        echo: request.echo ? prompt.text : '',
      });
    }
  }
  return plans(
    requestId,
    request,
    prompts,
    contextLength,
    'prompt',
    tokenizer.eosTokenIds,
    request.logprobs,
  );
}

export function prepareChat(
  requestId: string,
  request: ChatRequest,
  tokenizer: Tokenizer,
  contextLength: number,
): PreparedChoices | OpenAiError {
  if (!tokenizer.hasChatTemplate)
    return openAiError(400, 'this model has no chat template: use /v1/completions', {
      param: 'messages',
    });
  const rendered = tokenizer.applyChatTemplate(request.messages, { addGenerationPrompt: true });
  if (!rendered.ok)
    return openAiError(
      400,
      `the chat template could not render these messages: ${rendered.message}`,
      {
        param: 'messages',
      },
    );
  const tooLong = checkPromptLength(
    rendered.text.length,
    tokenizer.maxTextLength(contextLength),
    contextLength,
    'messages',
  );
  if (tooLong !== null) return tooLong;
  // The template wrote the special tokens (BOS included) itself.
  const tokens = tokenizer.encode(rendered.text, { addSpecialTokens: false });
  return plans(
    requestId,
    request,
    [{ tokens, echo: '' }],
    contextLength,
    'messages',
    chatStopTokenIds(tokenizer),
    request.logprobs ? request.topLogprobs : null,
  );
}
