// One completion or chat request from its prepared choices to its answer:
//
//   submit every choice (GenerationRun) ─┬─ refused: 429 queue_full / 400 / 503, nothing runs
//                                        ├─ JSON: collect every choice's text, logprobs and
//                                        │   finish reason, then answer once all are done
//                                        └─ SSE: headers at once, then a chunk per choice per
//                                            engine step (SseWriter: backpressure), a usage
//                                            chunk when asked, `data: [DONE]`
//
// The client going away before the end cancels every choice at once (blocks freed); an
// engine error on any choice ends the whole answer (500, or an error event in a stream).

import { formatUsageHeader, usageHeader } from '../../protocol/openai/usage-header.ts';
import type { ServerResponse } from 'node:http';
import type { EngineEvent, SubmitRefusal } from '../../llm/serving/engine-api.ts';
import {
  chatChoice,
  chatChunk,
  chatLogprobs,
  chatResponse,
  chatUsageChunk,
} from '../../protocol/openai/chat-response.ts';
import {
  codePointCount,
  completionChunk,
  completionLogprobs,
  completionResponse,
  completionUsageChunk,
} from '../../protocol/openai/completion-response.ts';
import { openAiError, type OpenAiError } from '../../protocol/openai/openai-error.ts';
import {
  createdNow,
  openAiFinishReason,
  sseData,
  sseDone,
  usageOf,
  type OpenAiFinishReason,
  type TokenLogprob,
} from '../../protocol/openai/response-parts.ts';
import { GenerationRun } from './generation-run.ts';
import { loadReport, tokenText, type LlmService } from './llm-service.ts';
import type { ChoicePlan, PreparedChoices } from './prepare-choices.ts';
import { SseWriter } from './sse-writer.ts';

export interface ExchangeRequest {
  readonly kind: 'completion' | 'chat';
  readonly id: string;
  /** The `model` the client named (echoed back). */
  readonly model: string;
  readonly stream: boolean;
  readonly includeUsage: boolean;
  /** Chat: alternatives per position in `top_logprobs`. */
  readonly topLogprobs: number;
  readonly arrivedNs: bigint;
}

interface ChoiceState {
  readonly plan: ChoicePlan;
  text: string;
  logprobs: TokenLogprob[];
  /** Code points of text reported so far (completions' text_offset). */
  offset: number;
  finish: OpenAiFinishReason | null;
  completionTokens: number;
  cachedTokens: number;
  /** A stream: whether the choice's opening chunk (chat role, echoed prompt) was sent. */
  opened: boolean;
}

export function sendOpenAiError(
  response: ServerResponse,
  error: OpenAiError,
  headers: Record<string, string> = {},
): void {
  const body = JSON.stringify(error.body);
  const extra = error.status === 429 || error.status === 503 ? { 'retry-after': '1' } : {};
  response.writeHead(error.status, {
    'content-type': 'application/json',
    ...headers,
    ...extra,
    'content-length': Buffer.byteLength(body),
  });
  response.end(body);
}

function refusalError(refusal: SubmitRefusal): OpenAiError {
  switch (refusal.reason) {
    case 'queue_full':
      return openAiError(429, `the server is busy: ${refusal.message}; retry shortly`, {
        code: 'queue_full',
      });
    case 'invalid':
    case 'too_long':
      return openAiError(400, refusal.message, { param: 'prompt' });
    case 'closed':
      return openAiError(503, `the model is not serving: ${refusal.message}`);
  }
}

export function runExchange(
  service: LlmService,
  request: ExchangeRequest,
  prepared: PreparedChoices,
  response: ServerResponse,
  headers: Record<string, string>,
): void {
  const header = { id: request.id, created: createdNow(), model: request.model };
  const states = new Map<string, ChoiceState>();
  for (const plan of prepared.choices)
    states.set(plan.request.requestId, {
      plan,
      text: '',
      logprobs: [],
      offset: codePointCount(plan.echo),
      finish: null,
      completionTokens: 0,
      cachedTokens: 0,
      opened: false,
    });
  const run = new GenerationRun(service.engine, service.metrics, request.arrivedNs);
  let ended = false;
  let writer: SseWriter | null = null;

  const usage = () => {
    let completionTokens = 0;
    let cachedTokens = 0;
    for (const state of states.values()) {
      completionTokens += state.completionTokens;
      // The prompt is counted once per prompt: its first choice's cache hits stand for it.
      if (state.plan.index % (prepared.choices.length / prepared.promptTokenCounts.length) === 0)
        cachedTokens += state.cachedTokens;
    }
    const promptTokens = prepared.promptTokenCounts.reduce((a, b) => a + b, 0);
    return usageOf({ promptTokens, completionTokens, cachedTokens });
  };

  const usageHeaderValue = (): string => {
    const counts = usage();
    return formatUsageHeader({
      promptTokens: counts.prompt_tokens,
      completionTokens: counts.completion_tokens,
    });
  };

  const entriesOf = (events: readonly EngineEvent[], stopIds: readonly number[]) => {
    const entries: TokenLogprob[] = [];
    let text = '';
    for (const event of events) {
      if (event.kind !== 'token') continue;
      text += event.text;
      // A stop token ends the text without being part of it: no entry either.
      if (event.logprob === null || stopIds.includes(event.token)) continue;
      entries.push({
        ...tokenText(service, event.token),
        logprob: event.logprob,
        top: event.topLogprobs.map((t) => ({ ...tokenText(service, t.token), logprob: t.logprob })),
      });
    }
    return { entries, text };
  };

  const fail = (message: string): void => {
    if (ended) return;
    ended = true;
    run.cancel();
    const error = openAiError(500, `the engine failed: ${message}`);
    if (writer === null)
      sendOpenAiError(response, error, {
        ...headers,
        'kiln-load': JSON.stringify(loadReport(service)),
      });
    else {
      writer.write(sseData(error.body));
      writer.end(sseDone);
    }
  };

  const finishWhole = (): void => {
    ended = true;
    const ordered = [...states.values()].sort((a, b) => a.plan.index - b.plan.index);
    const body =
      request.kind === 'completion'
        ? completionResponse(
            header,
            ordered.map((s) => ({
              index: s.plan.index,
              text: s.plan.echo + s.text,
              logprobs:
                s.plan.request.sampling.logprobs === undefined
                  ? null
                  : completionLogprobs(s.logprobs, codePointCount(s.plan.echo)).logprobs,
              finish_reason: s.finish,
            })),
            usage(),
          )
        : chatResponse(
            header,
            ordered.map((s) =>
              chatChoice(
                s.plan.index,
                s.text,
                s.plan.request.sampling.logprobs === undefined
                  ? null
                  : chatLogprobs(s.logprobs, request.topLogprobs),
                s.finish ?? 'stop',
              ),
            ),
            usage(),
          );
    const json = JSON.stringify(body);
    response.writeHead(200, {
      'content-type': 'application/json',
      ...headers,
      'kiln-load': JSON.stringify(loadReport(service)),
      // For the gateway's cost accounting (usage-header.ts); it passes the header on to no one.
      [usageHeader]: usageHeaderValue(),
      'content-length': Buffer.byteLength(json),
    });
    response.end(json);
  };

  /** The chunk for one choice's new text (and final reason), or null when there is nothing. */
  const chunkFor = (
    state: ChoiceState,
    text: string,
    entries: readonly TokenLogprob[],
    finish: OpenAiFinishReason | null,
  ): string | null => {
    const wantsLogprobs = state.plan.request.sampling.logprobs !== undefined;
    if (text === '' && finish === null && entries.length === 0) return null;
    if (request.kind === 'completion') {
      let logprobs = null;
      if (wantsLogprobs) {
        const built = completionLogprobs(entries, state.offset);
        state.offset = built.nextOffset;
        logprobs = built.logprobs;
      }
      return sseData(
        completionChunk(
          header,
          { index: state.plan.index, text, logprobs, finish_reason: finish },
          request.includeUsage,
        ),
      );
    }
    return sseData(
      chatChunk(
        header,
        {
          index: state.plan.index,
          delta: text === '' && finish !== null ? {} : { content: text },
          logprobs: wantsLogprobs ? chatLogprobs(entries, request.topLogprobs) : null,
          finish_reason: finish,
        },
        request.includeUsage,
      ),
    );
  };

  /**
   * A chat choice opens with the assistant's role, an echoed completion with its prompt:
   * sent with the choice's first output, as vLLM sends them. Sent at once they would reach
   * the client while the request still waits in the engine's queue, and the gateway takes
   * a stream's first byte as its first token (its TTFT histogram, its prefill estimate).
   */
  const openingChunk = (plan: ChoicePlan): string | null => {
    if (request.kind === 'chat')
      return sseData(
        chatChunk(
          header,
          {
            index: plan.index,
            delta: { role: 'assistant', content: '' },
            logprobs: null,
            finish_reason: null,
          },
          request.includeUsage,
        ),
      );
    if (plan.echo === '') return null;
    return sseData(
      completionChunk(
        header,
        { index: plan.index, text: plan.echo, logprobs: null, finish_reason: null },
        request.includeUsage,
      ),
    );
  };

  const onEvents = (plan: ChoicePlan, events: readonly EngineEvent[]): void => {
    if (ended) return;
    const state = states.get(plan.request.requestId);
    if (state === undefined) return;
    const { entries, text } = entriesOf(events, plan.request.stopTokenIds);
    let tail = '';
    let finish: OpenAiFinishReason | null = null;
    for (const event of events) {
      if (event.kind === 'error') return fail(event.message);
      if (event.kind === 'done') {
        tail = event.text;
        finish = openAiFinishReason(event.reason);
        state.completionTokens = event.completionTokens;
        state.cachedTokens = event.cachedPromptTokens;
      }
    }
    state.text += text + tail;
    state.logprobs.push(...entries);
    state.finish = finish;
    if (writer !== null) {
      if (!state.opened) {
        state.opened = true;
        const opening = openingChunk(plan);
        if (opening !== null) writer.write(opening);
      }
      const chunk = chunkFor(state, text + tail, entries, finish);
      if (chunk !== null) writer.write(chunk);
    }
    if (run.liveCount > 0) return;
    if (writer === null) return finishWhole();
    ended = true;
    if (request.includeUsage) {
      const final =
        request.kind === 'completion'
          ? completionUsageChunk(header, usage())
          : chatUsageChunk(header, usage());
      writer.write(sseData(final));
    }
    // The stream's tokens for the gateway's cost accounting, whatever the client asked.
    if (!response.destroyed) response.addTrailers({ [usageHeader]: usageHeaderValue() });
    writer.end(sseDone);
  };

  // The client gone before the end: every choice still live is dropped at once.
  response.once('close', () => {
    if (ended || response.writableFinished) return;
    ended = true;
    run.cancel();
    service.metrics.clientCancels.inc();
  });

  if (request.stream) {
    writer = new SseWriter(
      response,
      service.config.streamBufferBytes,
      service.config.slowReaderTimeoutMs,
      {
        pause: () => {
          run.pause();
          service.metrics.pausedStreams.inc();
        },
        resume: () => {
          run.resume();
          service.metrics.pausedStreams.dec();
        },
        timedOut: () => {
          ended = true;
          service.metrics.pausedStreams.dec();
          service.metrics.slowReaderAborts.inc();
          run.cancel();
        },
      },
    );
  }
  const refusal = run.submit(prepared.choices, onEvents);
  if (refusal !== null) {
    ended = true;
    if (refusal.reason === 'queue_full') service.metrics.queueFull.inc();
    sendOpenAiError(response, refusalError(refusal), {
      ...headers,
      'kiln-load': JSON.stringify(loadReport(service)),
    });
    return;
  }
  writer?.open(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    trailer: usageHeader,
    ...headers,
    'kiln-load': JSON.stringify(loadReport(service)),
  });
}
