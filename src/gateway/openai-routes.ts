// The OpenAI-compatible routes on the gateway's port, beside v2 (v2-routes.ts hands them
// over). The body's `model` names the endpoint; only hf-llm endpoints serve them.
//
//   POST /v1/completions          forwarded to a replica (openai-exchange.ts)
//   POST /v1/chat/completions     forwarded to a replica
//   GET  /v1/models               the hf-llm endpoints the caller's key may use (with
//                                 max_model_len, asked of a replica once per version)
//   GET  /v1/models/{m}           one of them (v2-routes.ts matches the path: the same path is
//                                 KServe v1's status route for other endpoints)
//
// Same API keys, team limits, concurrency bounds and request metrics as v2; every answer the
// gateway writes itself is in OpenAI's error shape (openai-reply.ts). Before the body is
// read: snapshot loaded (503) → authenticate (401) → a declared length over the largest
// LLM endpoint's body limit (413). The checks that need the model follow in the exchange.

import { performance } from 'node:perf_hooks';
import { authenticate, grantCovers } from './auth.ts';
import type { GatewayRequest, GatewayResponse } from './http-types.ts';
import { LlmModelLengths } from './llm-model-lengths.ts';
import type { LlmRouter } from './llm-router.ts';
import type { EndpointSeries } from './metrics.ts';
import { unknownLabel } from './metrics.ts';
import { OpenAiExchange, type OpenAiState } from './openai-exchange.ts';
import { sendOpenAiKilnError } from './openai-reply.ts';
import type { OpenAiRoute } from './prompt-prefix.ts';
import type { EndpointEntry, RouteTable } from './route-table.ts';
import type { ApiKeyGrant } from './routing-snapshot.ts';
import { requestIdFrom, traceparentFrom } from './trace-context.ts';
import { sendJson, type HeaderList } from './v2-reply.ts';

/** Body bytes read to find the model when no endpoint is an LLM (the answer is a 404). */
const noLlmReadLimit = 64 * 1024;

/** How long a listing waits for a replica's own `/v1/models` (its `max_model_len`), ms. */
const modelLengthTimeoutMs = 1000;

export class OpenAiRoutes {
  private readonly unknownSeries: EndpointSeries;
  /** The largest hf-llm body limit of each route table (computed once per table). */
  private readonly readLimits = new WeakMap<RouteTable, number>();
  /** `created` of the model objects: when this gateway started (Unix seconds). */
  private readonly createdS = Math.floor(Date.now() / 1000);
  private readonly modelLengths = new LlmModelLengths(modelLengthTimeoutMs);

  constructor(
    private readonly state: OpenAiState,
    private readonly router: LlmRouter,
  ) {
    this.unknownSeries = state.metrics.seriesFor(unknownLabel, unknownLabel);
  }

  /** Serves `path` if it is one of the OpenAI routes; false to let v2 routing match it. */
  handle(req: GatewayRequest, res: GatewayResponse, path: string, method: string): boolean {
    switch (path) {
      case '/v1/completions':
        this.completion(req, res, 'completions', method);
        return true;
      case '/v1/chat/completions':
        this.completion(req, res, 'chat', method);
        return true;
      case '/v1/models':
      case '/v1/models/':
        this.listModels(req, res, method);
        return true;
      default:
        return false;
    }
  }

  /** `GET /v1/models/{m}` for an hf-llm endpoint the caller may use (checked by v2-routes). */
  sendModel(res: GatewayResponse, entry: EndpointEntry, headers: HeaderList): void {
    void this.modelLengths.learn([entry]).then(() => {
      if (!res.destroyed) sendJson(res, 200, JSON.stringify(this.modelObject(entry)), headers);
    });
  }

  private completion(
    req: GatewayRequest,
    res: GatewayResponse,
    route: OpenAiRoute,
    method: string,
  ): void {
    const startMs = performance.now();
    const requestId = requestIdFrom(req.headers['x-request-id']);
    const traceparent = traceparentFrom(req.headers.traceparent);
    const headers: HeaderList = ['x-request-id', requestId, 'traceparent', traceparent];
    if (method !== 'POST') {
      req.resume();
      const params = { method, url: req.url ?? '' };
      sendOpenAiKilnError(res, 'KILN_ROUTE_NOT_FOUND', params, headers);
      return;
    }
    const table = this.state.table;
    const admitted = this.caller(req, res, table, headers);
    if (admitted === null || table === null) {
      this.unknownSeries.record(res.statusCode, (performance.now() - startMs) / 1000);
      return;
    }
    const readLimit = this.readLimit(table);
    const declared = req.headers['content-length'];
    if (declared !== undefined && Number(declared) > readLimit) {
      headers.push('connection', 'close');
      const params = { size: declared, limit: readLimit };
      const status = sendOpenAiKilnError(res, 'KILN_PAYLOAD_TOO_LARGE', params, headers);
      this.unknownSeries.record(status, (performance.now() - startMs) / 1000);
      return;
    }
    const exchange = new OpenAiExchange(
      this.state,
      this.router,
      req,
      res,
      route,
      admitted.grant,
      readLimit,
      this.unknownSeries,
      requestId,
      traceparent,
      startMs,
    );
    exchange.readBody();
  }

  private listModels(req: GatewayRequest, res: GatewayResponse, method: string): void {
    req.resume();
    const requestId = requestIdFrom(req.headers['x-request-id']);
    const headers: HeaderList = ['x-request-id', requestId];
    if (method !== 'GET' && method !== 'HEAD') {
      sendOpenAiKilnError(res, 'KILN_ROUTE_NOT_FOUND', { method, url: req.url ?? '' }, headers);
      return;
    }
    const table = this.state.table;
    const admitted = this.caller(req, res, table, headers);
    if (admitted === null || table === null) return;
    const entries: EndpointEntry[] = [];
    for (const entry of table.endpoints.values()) {
      if (entry.route.format !== 'hf-llm') continue;
      if (admitted.grant !== null && !grantCovers(admitted.grant, entry)) continue;
      entries.push(entry);
    }
    void this.modelLengths.learn(entries).then(() => {
      if (res.destroyed) return;
      const data = entries.map((entry) => this.modelObject(entry));
      sendJson(res, 200, JSON.stringify({ object: 'list', data }), headers);
    });
  }

  /**
   * The caller's grant (null in dev mode, where there are no keys), or null after answering
   * 503 (no snapshot yet) or 401.
   */
  private caller(
    req: GatewayRequest,
    res: GatewayResponse,
    table: RouteTable | null,
    headers: HeaderList,
  ): { readonly grant: ApiKeyGrant | null } | null {
    if (table === null) {
      req.resume();
      const params = { endpoint: '*', reason: 'the gateway has no routing snapshot yet' };
      sendOpenAiKilnError(res, 'KILN_NO_READY_REPLICA', params, headers);
      return null;
    }
    if (table.auth !== 'api-keys') return { grant: null };
    const grant = authenticate(table.apiKeys, req.headers);
    if (grant === null) {
      req.resume();
      sendOpenAiKilnError(res, 'KILN_UNAUTHENTICATED', {}, headers);
      return null;
    }
    return { grant };
  }

  private modelObject(entry: EndpointEntry): Record<string, unknown> {
    return {
      id: entry.name,
      object: 'model',
      created: this.createdS,
      owned_by: entry.team,
      root: entry.route.model,
      // The context length, as vLLM lists it, once a replica has told it (llm-model-lengths.ts).
      max_model_len: this.modelLengths.maxModelLen(entry),
    };
  }

  private readLimit(table: RouteTable): number {
    let limit = this.readLimits.get(table);
    if (limit === undefined) {
      limit = 0;
      for (const entry of table.endpoints.values()) {
        if (entry.route.format === 'hf-llm') limit = Math.max(limit, entry.maxBodyBytes);
      }
      if (limit === 0) limit = noLlmReadLimit;
      this.readLimits.set(table, limit);
    }
    return limit;
  }
}
