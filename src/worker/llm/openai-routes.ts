// The OpenAI routes of an hf-llm worker (and its load report):
//
//   GET  /v1/models              the one model, under the endpoint's name
//   POST /v1/completions         ─┐ body ─► JSON ─► model check (404) ─► parse (400, naming
//   POST /v1/chat/completions    ─┘ `param`) ─► tokenize + context check ─► openai-exchange.ts
//   GET  /kiln/v1/load           running / waiting / paused / KV blocks / inflight, for routers,
//                                and the worker load the autoscaler polls (worker-load.ts)
//
// Every error on these routes is in OpenAI's shape (protocol/openai/openai-error.ts).

import type { IncomingMessage, ServerResponse } from 'node:http';
import { parseChatRequest } from '../../protocol/openai/chat-request.ts';
import { parseCompletionRequest } from '../../protocol/openai/completion-request.ts';
import { openAiError, type OpenAiError } from '../../protocol/openai/openai-error.ts';
import { responseId } from '../../protocol/openai/response-parts.ts';
import { readRequestBody } from '../read-request-body.ts';
import type { WorkerSpec } from '../worker-spec.ts';
import type { WorkerLoadReport } from '../../protocol/scaling/worker-load-report.ts';
import { loadReport, type LlmService } from './llm-service.ts';
import { runExchange, sendOpenAiError } from './openai-exchange.ts';
import { prepareChat, prepareCompletion } from './prepare-choices.ts';

/** The routes this file answers (the worker server sends these paths here). */
export function isOpenAiPath(path: string): boolean {
  return path.startsWith('/v1/') || path === '/kiln/v1/load';
}

async function readJson(
  request: IncomingMessage,
  limit: number,
): Promise<{ ok: true; value: unknown } | { ok: false; error: OpenAiError }> {
  const body = await readRequestBody(request, limit);
  if (body === 'too_large')
    return { ok: false, error: openAiError(413, `the request body is larger than ${limit} bytes`) };
  if (body === 'unreadable')
    return { ok: false, error: openAiError(400, 'the request body could not be read') };
  try {
    return { ok: true, value: JSON.parse(body.toString('utf8')) };
  } catch (error) {
    const reason = (error as Error).message;
    const message = `We could not parse the JSON body of your request: ${reason}`;
    return { ok: false, error: openAiError(400, message) };
  }
}

function sendJson(
  response: ServerResponse,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  response.writeHead(200, {
    'content-type': 'application/json',
    ...headers,
    'content-length': Buffer.byteLength(text),
  });
  response.end(text);
}

export interface OpenAiRouteContext {
  readonly spec: WorkerSpec;
  /** null while loading, after a failed load, or when the worker serves no LLM. */
  readonly service: LlmService | null;
  /** Whether new requests are taken (ready, not draining). */
  readonly accepting: boolean;
  /** The worker's load for the autoscaler (worker-load.ts), merged into the load report. */
  readonly workerLoad?: () => WorkerLoadReport;
  /** Counts a request the worker must finish before a drain completes. */
  readonly hold: (response: ServerResponse) => void;
}

export async function handleOpenAiRoute(
  request: IncomingMessage,
  response: ServerResponse,
  path: string,
  context: OpenAiRouteContext,
  headers: Record<string, string>,
): Promise<void> {
  const { spec, service } = context;
  const method = request.method ?? 'GET';
  const generation = path === '/v1/completions' || path === '/v1/chat/completions';
  const known = generation || path === '/v1/models' || path === '/kiln/v1/load';
  // HEAD is GET without the body (Node leaves the body out), as the gateway answers it.
  const allowed = generation ? method === 'POST' : method === 'GET' || method === 'HEAD';
  if (!known || !allowed) {
    request.resume();
    return sendOpenAiError(
      response,
      openAiError(known ? 405 : 404, `no such route: ${method} ${path}`),
      known ? { ...headers, allow: generation ? 'POST' : 'GET, HEAD' } : headers,
    );
  }
  if (spec.format !== 'hf-llm') {
    request.resume();
    return sendOpenAiError(
      response,
      openAiError(404, `${spec.endpoint} is not a language model: it has no OpenAI routes`),
      headers,
    );
  }
  if (service === null || !context.accepting) {
    request.resume();
    return sendOpenAiError(response, openAiError(503, `${spec.endpoint} is not ready`), headers);
  }
  if (path === '/kiln/v1/load')
    return sendJson(response, { ...loadReport(service), ...context.workerLoad?.() }, headers);
  // Routers read the load from every answer, refusals included.
  const loaded = (): Record<string, string> => ({
    ...headers,
    'kiln-load': JSON.stringify(loadReport(service)),
  });
  if (path === '/v1/models') {
    return sendJson(
      response,
      {
        object: 'list',
        data: [
          {
            id: spec.endpoint,
            object: 'model',
            created: service.createdSeconds,
            owned_by: 'kiln',
            root: spec.model,
            parent: null,
            max_model_len: service.engine.contextLength,
          },
        ],
      },
      headers,
    );
  }
  const arrivedNs = process.hrtime.bigint();
  // Held from here until its answer has left: a drain waits for it.
  context.hold(response);
  service.inflight += 1;
  response.once('close', () => {
    service.inflight -= 1;
  });
  const body = await readJson(request, spec.maxBodyBytes);
  if (!body.ok) return sendOpenAiError(response, body.error, loaded());
  const named = (body.value as { model?: unknown } | null)?.model;
  if (typeof named === 'string' && named !== spec.endpoint && named !== spec.model) {
    return sendOpenAiError(
      response,
      openAiError(404, `The model \`${named}\` does not exist.`, {
        type: 'invalid_request_error',
        param: 'model',
        code: 'model_not_found',
      }),
      loaded(),
    );
  }
  const limits = { maxN: service.config.maxN, contextLength: service.engine.contextLength };
  const contextLength = service.engine.contextLength;
  if (path === '/v1/completions') {
    const parsed = parseCompletionRequest(body.value, limits);
    if (!parsed.ok) return sendOpenAiError(response, parsed.error, loaded());
    const id = responseId('cmpl');
    const prepared = prepareCompletion(id, parsed.request, service.tokenizer, contextLength);
    if ('status' in prepared) return sendOpenAiError(response, prepared, loaded());
    return runExchange(
      service,
      { ...exchangeOf(parsed.request, id, arrivedNs), kind: 'completion', topLogprobs: 0 },
      prepared,
      response,
      headers,
    );
  }
  const parsed = parseChatRequest(body.value, limits);
  if (!parsed.ok) return sendOpenAiError(response, parsed.error, loaded());
  const id = responseId('chatcmpl');
  const prepared = prepareChat(id, parsed.request, service.tokenizer, contextLength);
  if ('status' in prepared) return sendOpenAiError(response, prepared, loaded());
  return runExchange(
    service,
    {
      ...exchangeOf(parsed.request, id, arrivedNs),
      kind: 'chat',
      topLogprobs: parsed.request.topLogprobs,
    },
    prepared,
    response,
    headers,
  );
}

function exchangeOf(
  request: { readonly model: string; readonly stream: boolean; readonly includeUsage: boolean },
  id: string,
  arrivedNs: bigint,
) {
  return {
    id,
    model: request.model,
    stream: request.stream,
    includeUsage: request.includeUsage,
    arrivedNs,
  };
}
