// The gateway's routes, matched by hand on the hot path (no router, no per-request
// closures). Open Inference Protocol v2 REST plus Prometheus:
//
//   GET  /v2/health/live                        200 always
//   GET  /v2/health/ready                       200 once a routing snapshot is loaded, else 503
//   GET  /v2                                    server metadata
//   GET  /v2/models/{m}[/versions/{v}]          model metadata (snapshot schema, else a replica)
//   GET  /v2/models/{m}[/versions/{v}]/ready    200 if the endpoint has a ready replica
//   POST /v2/models/{m}[/versions/{v}]/infer    checked, then forwarded to a replica
//   GET  /metrics                               Prometheus text
//
// and the KServe v1 / TensorFlow Serving predict protocol beside it (docs/v1-protocol.md),
// through the same checks, limits and metrics:
//
//   GET  /v1/models/{m}[/versions/{v}]          {"name","ready"}
//   POST /v1/models/{m}[/versions/{v}]:predict  {"instances"} → {"predictions"}
//
// An LLM endpoint's /v1/models/{m} paths, and /v1/models, /v1/completions and
// /v1/chat/completions, belong to the OpenAI routes (openai-routes.ts), which share the
// prefix: `GET /v1/models/{m}` of an hf-llm endpoint is its OpenAI model object.
//
// For /v2/models/… and /v1/models/… the order is: snapshot loaded → authenticate (401) →
// endpoint exists (404) → key scope (403) → version served (404) → route action. {m} is the
// endpoint name.
// Infer then refuses, before reading any of the body: too large (413) → endpoint at its
// concurrency bound (429 busy) → team over its rate (429 rate limited). The slot of the
// bound is taken only once the body is in (infer-exchange.ts), so slow uploads hold none.

import { performance } from 'node:perf_hooks';
import type { ErrorCode, ErrorParams } from '../core/errors.ts';
import { kilnVersion } from '../core/version.ts';
import { authenticate, grantCovers } from './auth.ts';
import type { GatewayRequest, GatewayResponse } from './http-types.ts';
import { InferExchange, type ExchangeSettings } from './infer-exchange.ts';
import { requestTraceparent, traceRequest } from './gateway-tracing.ts';
import { unknownLabel, type EndpointSeries, type GatewayMetrics } from './metrics.ts';
import type { OpenAiRoutes } from './openai-routes.ts';
import type { EndpointEntry, RouteTable } from './route-table.ts';
import { requestIdFrom, traceparentFrom } from './trace-context.ts';
import { sendJson, sendV2Error, type HeaderList } from './v2-reply.ts';

export interface GatewayState extends ExchangeSettings {
  /** null until the first snapshot is loaded (the gateway is not ready). */
  table: RouteTable | null;
  readonly metrics: GatewayMetrics;
}

type ModelAction = 'metadata' | 'ready' | 'infer' | 'v1-status' | 'v1-predict';

const modelsPrefix = '/v2/models/';
const v1ModelsPrefix = '/v1/models/';
/** `http.route` of the traced infer routes (docs/tracing.md). */
const v2Route = '/v2/models/{model}/infer';
const v1Route = '/v1/models/{model}:predict';
const serverMetadata = JSON.stringify({ name: 'kiln', version: kilnVersion, extensions: [] });

export class V2Routes {
  private readonly unknownSeries: EndpointSeries;

  constructor(
    private readonly state: GatewayState,
    private readonly openAi: OpenAiRoutes,
  ) {
    this.unknownSeries = state.metrics.seriesFor(unknownLabel, unknownLabel);
  }

  handle(req: GatewayRequest, res: GatewayResponse): void {
    const url = req.url ?? '/';
    const query = url.indexOf('?');
    const path = query === -1 ? url : url.slice(0, query);
    const method = req.method ?? 'GET';
    const isGet = method === 'GET' || method === 'HEAD';
    if (path.startsWith(modelsPrefix)) {
      this.model(req, res, path, method, isGet);
      return;
    }
    if (path.startsWith('/v1/') && this.openAi.handle(req, res, path, method)) return;
    if (path.startsWith(v1ModelsPrefix)) {
      this.v1Model(req, res, path, method, isGet);
      return;
    }
    if (isGet) {
      switch (path) {
        case '/v2/health/live':
          sendJson(res, 200, '{"live":true}');
          return;
        case '/v2/health/ready':
          if (this.state.table === null) sendJson(res, 503, '{"ready":false}');
          else sendJson(res, 200, '{"ready":true}');
          return;
        case '/v2':
        case '/v2/':
          sendJson(res, 200, serverMetadata);
          return;
        case '/metrics':
          this.metrics(res);
          return;
      }
    }
    sendV2Error(res, 'KILN_ROUTE_NOT_FOUND', { method, url: path });
  }

  private model(
    req: GatewayRequest,
    res: GatewayResponse,
    path: string,
    method: string,
    isGet: boolean,
  ): void {
    const parts = path.slice(modelsPrefix.length).split('/');
    let version: string | null = null;
    let next = 1;
    if (parts[1] === 'versions') {
      version = parts[2] ?? '';
      next = 3;
    }
    const actionPart = parts[next];
    const action: ModelAction | null =
      parts.length > next + 1 || version === ''
        ? null
        : actionPart === undefined
          ? 'metadata'
          : actionPart === 'ready'
            ? 'ready'
            : actionPart === 'infer'
              ? 'infer'
              : null;
    const methodOk = action === 'infer' ? method === 'POST' : isGet;
    const rawName = parts[0] ?? '';
    if (action === null || !methodOk || rawName === '') {
      sendV2Error(res, 'KILN_ROUTE_NOT_FOUND', { method, url: path });
      return;
    }
    this.serve(req, res, rawName, version, action);
  }

  /** `/v1/models/{m}[/versions/{v}][:predict]`, KServe v1's and TensorFlow Serving's paths. */
  private v1Model(
    req: GatewayRequest,
    res: GatewayResponse,
    path: string,
    method: string,
    isGet: boolean,
  ): void {
    const rest = path.slice(v1ModelsPrefix.length);
    const colon = rest.lastIndexOf(':');
    const parts = (colon === -1 ? rest : rest.slice(0, colon)).split('/');
    const verb = colon === -1 ? null : rest.slice(colon + 1);
    const versioned = parts.length === 3 && parts[1] === 'versions' && parts[2] !== '';
    const action: ModelAction | null =
      (parts.length !== 1 && !versioned) || parts[0] === ''
        ? null
        : verb === null
          ? isGet
            ? 'v1-status'
            : null
          : verb === 'predict' && method === 'POST'
            ? 'v1-predict'
            : null;
    if (action === null) {
      sendV2Error(res, 'KILN_ROUTE_NOT_FOUND', { method, url: path });
      return;
    }
    this.serve(req, res, parts[0] ?? '', versioned ? (parts[2] ?? null) : null, action);
  }

  /** A model route, once matched: the checks every protocol shares, then the action. */
  private serve(
    req: GatewayRequest,
    res: GatewayResponse,
    rawName: string,
    version: string | null,
    action: ModelAction,
  ): void {
    const name = rawName.includes('%') ? safeDecode(rawName) : rawName;

    const startMs = performance.now();
    const requestId = requestIdFrom(req.headers['x-request-id']);
    const traceparent = traceparentFrom(req.headers.traceparent);
    const table = this.state.table;
    const entry = table?.endpoints.get(name);
    const counted = action === 'infer' || action === 'v1-predict';
    const series = counted ? (entry?.series ?? this.unknownSeries) : null;
    let refusal: [ErrorCode, ErrorParams] | null = null;
    if (table === null) {
      refusal = [
        'KILN_NO_READY_REPLICA',
        { endpoint: name, reason: 'the gateway has no routing snapshot yet' },
      ];
    } else {
      const grant = table.auth === 'api-keys' ? authenticate(table.apiKeys, req.headers) : null;
      if (table.auth === 'api-keys' && grant === null) {
        refusal = ['KILN_UNAUTHENTICATED', {}];
      } else if (entry === undefined) {
        refusal = ['KILN_ENDPOINT_NOT_FOUND', { endpoint: name }];
      } else if (grant !== null && !grantCovers(grant, entry)) {
        refusal = ['KILN_FORBIDDEN', { endpoint: name }];
      } else if (version !== null && version !== entry.versionText) {
        refusal = [
          'KILN_VERSION_NOT_SERVED',
          { endpoint: name, served: entry.version, version: version },
        ];
      }
    }
    if (refusal !== null || entry === undefined) {
      const [code, params] = refusal ?? ['KILN_INTERNAL', { reason: 'no route entry' }];
      const headers: HeaderList = ['x-request-id', requestId, 'traceparent', traceparent];
      const status = sendV2Error(res, code, params, headers);
      series?.record(status, (performance.now() - startMs) / 1000);
      return;
    }

    // An LLM endpoint's /v1 paths are the OpenAI routes' (decided by the endpoint's kind).
    const llm = entry.route.format === 'hf-llm';
    switch (action) {
      case 'infer':
        this.infer(req, res, entry, requestId, traceparent, startMs);
        return;
      case 'v1-predict':
        if (llm) {
          this.notForLlm(req, res, entry, requestId, traceparent, startMs);
          return;
        }
        this.infer(req, res, entry, requestId, traceparent, startMs, 'v1');
        return;
      case 'v1-status': {
        const headers = entryHeaders(entry, requestId, traceparent);
        if (llm) {
          this.openAi.sendModel(res, entry, headers);
          return;
        }
        if (servable(entry)) {
          sendJson(res, 200, `{"name":${JSON.stringify(name)},"ready":true}`, headers);
        } else {
          const params = { model: name, reason: 'no replica is ready' };
          sendV2Error(res, 'KILN_MODEL_NOT_READY', params, headers);
        }
        return;
      }
      case 'metadata':
        if (entry.metadataBody !== null) {
          sendJson(res, 200, entry.metadataBody, entryHeaders(entry, requestId, traceparent));
        } else {
          const exchange = new InferExchange(
            this.state,
            req,
            res,
            entry,
            null,
            requestId,
            traceparent,
            startMs,
          );
          exchange.forwardGet(entry.metadataPath);
        }
        return;
      case 'ready': {
        const headers = entryHeaders(entry, requestId, traceparent);
        if (servable(entry)) {
          sendJson(res, 200, `{"name":${JSON.stringify(name)},"ready":true}`, headers);
        } else {
          sendV2Error(
            res,
            'KILN_MODEL_NOT_READY',
            { model: name, reason: 'no replica is ready' },
            headers,
          );
        }
        return;
      }
    }
  }

  private infer(
    req: GatewayRequest,
    res: GatewayResponse,
    entry: EndpointEntry,
    requestId: string,
    traceparent: string,
    startMs: number,
    form: 'v1' | 'v2' = 'v2',
  ): void {
    // Demand for the autoscaler counts every arrival, refused at the door or not.
    const load = entry.load;
    load?.arrive();
    // Refusals at the door, before reading a byte of the body. Side-effect-free checks come
    // first, so a request refused for its size or a busy endpoint spends no team token.
    // Refuse an oversized body at once; streamed bodies (no Content-Length) are counted as
    // they arrive.
    const declared = req.headers['content-length'];
    if (declared !== undefined && Number(declared) > entry.maxBodyBytes) {
      const headers = entryHeaders(entry, requestId, traceparent);
      headers.push('connection', 'close');
      const params = { size: declared, limit: entry.maxBodyBytes };
      const status = sendV2Error(res, 'KILN_PAYLOAD_TOO_LARGE', params, headers);
      const elapsedMs = performance.now() - startMs;
      entry.series.record(status, elapsedMs / 1000);
      load?.complete(status, elapsedMs);
      return;
    }
    const gate = entry.gate;
    if (gate.isFull()) {
      const params = { endpoint: entry.name, limit: gate.limit ?? 0 };
      refuse(res, entry, 'KILN_ENDPOINT_BUSY', params, '1', requestId, traceparent, startMs);
      entry.series.rejected('busy');
      return;
    }
    const bucket = entry.bucket;
    if (bucket !== null && !bucket.tryTake(startMs)) {
      const params = { team: entry.team, requestsPerSecond: entry.teamRequestsPerSecond ?? 0 };
      const retryAfter = String(bucket.retryAfterSeconds(startMs));
      refuse(res, entry, 'KILN_RATE_LIMITED', params, retryAfter, requestId, traceparent, startMs);
      entry.series.rejected('rate_limited');
      return;
    }
    // Tracing on: head sampling, and the gateway's span for a traced request (its context
    // is what the client gets back and what the worker continues).
    const tracer = this.state.tracer;
    const route = form === 'v1' ? v1Route : v2Route;
    const span =
      tracer == null ? null : traceRequest(tracer, req, entry, traceparent, route, requestId);
    const exchange = new InferExchange(
      this.state,
      req,
      res,
      entry,
      entry.series,
      requestId,
      tracer == null ? traceparent : requestTraceparent(req, traceparent, span),
      startMs,
    );
    if (span !== null) exchange.traced(span);
    exchange.countsIn(load);
    if (form === 'v1') exchange.speakV1();
    exchange.readBody(gate, bucket);
  }

  /** A v1 predict-protocol path on an LLM endpoint: those belong to the OpenAI routes. */
  private notForLlm(
    req: GatewayRequest,
    res: GatewayResponse,
    entry: EndpointEntry,
    requestId: string,
    traceparent: string,
    startMs: number,
  ): void {
    req.resume();
    const headers = entryHeaders(entry, requestId, traceparent);
    const url = (req.url ?? '/').split('?')[0] ?? '/';
    const status = sendV2Error(
      res,
      'KILN_ROUTE_NOT_FOUND',
      { method: req.method ?? '', url },
      headers,
    );
    if (req.method === 'POST') entry.series.record(status, (performance.now() - startMs) / 1000);
  }

  private metrics(res: GatewayResponse): void {
    const metrics = this.state.metrics;
    metrics.render().then(
      (text) => {
        res.writeHead(200, ['content-type', metrics.contentType]);
        res.end(text);
      },
      (error: unknown) => {
        sendV2Error(res, 'KILN_INTERNAL', { reason: String(error) });
      },
    );
  }
}

/**
 * Whether the model is ready for inference: a ready replica, or scaled to zero with an
 * activator (its next inference request is held while it wakes, then answered). Clients that
 * ask `ready` before they infer (Triton's `is_model_ready`, KServe's) would otherwise never
 * send the request that wakes it; asking does not wake it.
 */
function servable(entry: EndpointEntry): boolean {
  return entry.replicas.length > 0 || entry.route.activation !== undefined;
}

/** A 429 at the door, with `Retry-After` in whole seconds. */
function refuse(
  res: GatewayResponse,
  entry: EndpointEntry,
  code: ErrorCode,
  params: ErrorParams,
  retryAfterSeconds: string,
  requestId: string,
  traceparent: string,
  startMs: number,
): void {
  const headers = entryHeaders(entry, requestId, traceparent);
  headers.push('retry-after', retryAfterSeconds);
  const status = sendV2Error(res, code, params, headers);
  const elapsedMs = performance.now() - startMs;
  entry.series.record(status, elapsedMs / 1000);
  entry.load?.complete(status, elapsedMs);
}

function entryHeaders(entry: EndpointEntry, requestId: string, traceparent: string): HeaderList {
  return [
    'x-request-id',
    requestId,
    'traceparent',
    traceparent,
    'kiln-endpoint',
    entry.name,
    'kiln-model-version',
    entry.versionText,
    'kiln-model',
    entry.model,
  ];
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
