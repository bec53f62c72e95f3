// One OpenAI request (`/v1/completions`, `/v1/chat/completions`) on its way to an hf-llm
// replica. Like InferExchange, one object per request is the whole lifecycle and its own
// undici dispatch handler; what the two do alike (the body limit, the client's backpressure
// and stalls, upstream errors and the retry, the endings) is UpstreamExchange's:
//
//   readBody ─▶ onBodyData* (413 past the read limit) ─▶ onBodyEnd ─▶ admit:
//     JSON object (400) → `model` given (400) → an endpoint (404 model_not_found) that is
//     hf-llm (404 model_not_found) → key scope (403) → its body limit (413) → its
//     concurrency bound (429 busy) → its team's rate (429 rate limited) → take a slot
//   ─▶ send: LlmRouter.choose (load, prefix affinity) ─▶ pool.dispatch(the body as received)
//   ─▶ onResponseStart (the `kiln-load` header updates the replica's load and stops here)
//      / onResponseData* (piped: a full client socket pauses the upstream, so a slow reader
//        makes the gateway stop reading the worker, and the worker pauses the sequence)
//      / onResponseEnd
//   └▶ onResponseError before any response on a lost connection: eject the replica and
//      send once more elsewhere; after the response started: cut the client's response.
//
// The model is in the body, so the endpoint's own limits apply once the body is in: it is
// read up to the largest body limit of the LLM endpoints (openai-routes.ts), and only then
// held to its endpoint's. The client going away aborts the upstream request: the worker
// sees its connection close and cancels the sequence, freeing its KV blocks.

import { performance } from 'node:perf_hooks';
import type { IncomingHttpHeaders } from 'node:http';
import type { Dispatcher } from 'undici';
import type { ErrorCode, ErrorParams } from '../core/errors.ts';
import { grantCovers } from './auth.ts';
import type { GatewayRequest, GatewayResponse } from './http-types.ts';
import { parseLlmLoadReport } from './llm-replica-load.ts';
import { parseUsageHeader, usageHeader } from '../protocol/openai/usage-header.ts';
import type { LlmRouter } from './llm-router.ts';
import type { EndpointSeries, GatewayMetrics, LlmSeries } from './metrics.ts';
import { sendOpenAiError, sendOpenAiKilnError } from './openai-reply.ts';
import { promptPrefix, type OpenAiRoute } from './prompt-prefix.ts';
import type { ReplicaState } from './replica-set.ts';
import type { EndpointEntry, RouteTable } from './route-table.ts';
import type { TrafficEntry } from './traffic-entry.ts';
import type { ApiKeyGrant } from './routing-snapshot.ts';
import {
  skippedResponseHeaders,
  UpstreamExchange,
  type UpstreamSettings,
} from './upstream-exchange.ts';
import type { HeaderList } from './v2-reply.ts';
import { requestTraceparent, startAttemptSpan, traceRequest } from './gateway-tracing.ts';
import { traceparentOf, type KilnTracer } from '../observability/tracing/kiln-tracer.ts';

export interface OpenAiState extends UpstreamSettings {
  readonly table: RouteTable | null;
  readonly metrics: GatewayMetrics;
}

/**
 * How long a worker may take to start its answer, and to send a stream's next bytes. A
 * non-streamed completion starts when it is complete, which for a long generation on CPU can
 * be minutes; a stream goes quiet as long while it waits in the engine's queue behind a full
 * batch (its headers, and a chat's role chunk, already sent; no token yet) or waits to be
 * recomputed after a preemption. The gateway's general upstream limit (30 s) would cut
 * answers that are on their way: under load, streams the worker had accepted.
 */
const llmUpstreamTimeoutMs = 10 * 60_000;

// Worker response headers not passed on: also the load report (for routers, not clients).
const skippedLlmResponseHeaders: ReadonlySet<string> = new Set([
  ...skippedResponseHeaders,
  'kiln-load',
  // The answer's tokens, for the cost accounting (usage-header.ts), and a stream's trailer.
  usageHeader,
  'trailer',
]);

const upstreamPaths: Record<OpenAiRoute, string> = {
  completions: '/v1/completions',
  chat: '/v1/chat/completions',
};

export class OpenAiExchange
  extends UpstreamExchange<OpenAiState>
  implements Dispatcher.DispatchHandler
{
  private body: Buffer | null = null;
  private llmSeries: LlmSeries | null = null;
  private prefix: string | null = null;
  /** Whether the client asked for a stream (its first byte's time is the TTFT). */
  private streamRequested = false;
  /** The number of this request among those sent to `replica` (llm-replica-load.ts). */
  private sentIndex = 0;
  /** Bytes this request adds to its replica's awaitingFirstByteBytes (0: none now). */
  private awaitingBytes = 0;
  private firstByteSeen = false;
  private readonly upstreamHeaders: string[];
  /** Where the `traceparent` value sits in upstreamHeaders (tracing replaces it). */
  private static readonly traceparentAt = 7;
  /** The traffic policy the request was placed in (null: none, nothing counted). */
  private traffic: TrafficEntry<EndpointEntry> | null = null;
  private trafficBucket = 0;
  private slice: string | null = null;
  /** The parsed request, kept to place it again if a newer snapshot changes the policy. */
  private request: object | null = null;
  /** The replica whose answer the client got. */
  private answeredBy: ReplicaState | null = null;

  constructor(
    state: OpenAiState,
    private readonly router: LlmRouter,
    req: GatewayRequest,
    res: GatewayResponse,
    private readonly route: OpenAiRoute,
    /** The caller's key (null in dev mode). */
    private readonly grant: ApiKeyGrant | null,
    /** Most body bytes read before the endpoint is known. */
    readLimit: number,
    /** The request metrics until the model names an endpoint: the unknown endpoint's. */
    unknownSeries: EndpointSeries,
    requestId: string,
    traceparent: string,
    startMs: number,
  ) {
    super(state, req, res, null, unknownSeries, readLimit, requestId, traceparent, startMs);
    const headers = req.headers;
    this.upstreamHeaders = [
      'content-type',
      headers['content-type'] ?? 'application/json',
      'accept',
      headers.accept ?? '*/*',
      'x-request-id',
      requestId,
      'traceparent',
      traceparent,
    ];
    const tracestate = headers.tracestate;
    if (typeof tracestate === 'string') this.upstreamHeaders.push('tracestate', tracestate);
  }

  readBody(): void {
    this.readRequestBody();
  }

  // --- request body -------------------------------------------------------------------

  onBodyEnd(): void {
    if (this.done) return;
    this.admit(this.takeBody());
  }

  /** The checks that need the body, in order; sends the request if it passes them all. */
  private admit(body: Buffer): void {
    let parsed: unknown;
    try {
      parsed = JSON.parse(body.toString('utf8'));
    } catch (error) {
      this.fail('KILN_INVALID_JSON', { reason: (error as Error).message });
      return;
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
      this.failMessage(400, 'the request body must be a JSON object', null, 'invalid_request');
      return;
    }
    const request = parsed as Record<string, unknown>;
    const model = request.model;
    if (typeof model !== 'string' || model === '') {
      const message = 'you must provide a model parameter (the name of an LLM endpoint)';
      this.failMessage(400, message, 'model', 'missing_model');
      return;
    }
    const entry = this.settings.table?.endpoints.get(model);
    if (entry === undefined) {
      this.fail('KILN_ENDPOINT_NOT_FOUND', { endpoint: model }, false, 'model');
      return;
    }
    if (entry.route.format !== 'hf-llm') {
      const message = `endpoint ${model} serves a ${entry.route.format} model, not an LLM: the OpenAI routes serve hf-llm endpoints (use /v2/models/${model}/infer)`;
      this.failMessage(404, message, 'model', 'model_not_found');
      return;
    }
    if (this.grant !== null && !grantCovers(this.grant, entry)) {
      this.fail('KILN_FORBIDDEN', { endpoint: model }, false, 'model');
      return;
    }
    // From here on the request counts in its endpoint's metrics and demand (and its trace).
    this.entry = entry;
    const tracer = this.settings.tracer;
    if (tracer != null) this.startTrace(tracer, entry);
    this.series = entry.series;
    this.load = entry.load;
    this.load?.arrive();
    const traffic = entry.traffic;
    if (traffic !== null) {
      // A policy: the variant (sticky by caller key), which the request is sent as.
      this.request = request;
      this.place(traffic);
      const variant = traffic.entryAt(this.trafficBucket);
      this.entry = variant;
      this.series = variant.series;
    }
    this.llmSeries = this.settings.metrics.llmSeriesFor(entry.name);
    entry.series.inflight.inc();
    this.countedInflight = true;
    if (body.length > entry.maxBodyBytes) {
      this.fail('KILN_PAYLOAD_TOO_LARGE', { size: body.length, limit: entry.maxBodyBytes });
      return;
    }
    const gate = entry.gate;
    if (gate.isFull()) {
      const params = { endpoint: entry.name, limit: gate.limit ?? 0 };
      this.refuse('KILN_ENDPOINT_BUSY', params, '1');
      entry.series.rejected('busy');
      return;
    }
    const bucket = entry.bucket;
    const nowMs = performance.now();
    if (bucket !== null && !bucket.tryTake(nowMs)) {
      const params = { team: entry.team, requestsPerSecond: entry.teamRequestsPerSecond ?? 0 };
      this.refuse('KILN_RATE_LIMITED', params, String(bucket.retryAfterSeconds(nowMs)));
      entry.series.rejected('rate_limited');
      return;
    }
    gate.enter();
    this.gate = gate;
    this.holdsSlot = true;
    this.prefix = promptPrefix(this.route, request);
    this.streamRequested = request.stream === true;
    this.body = body;
    this.send(null, null);
  }

  // --- upstream -----------------------------------------------------------------------

  protected send(failed: ReplicaState | null, failure: Error | null): void {
    if (this.done) return;
    // The replicas of the latest snapshot (those a newer one dropped are closing).
    const known = this.entry!;
    const latest = this.settings.table?.endpoints.get(known.name);
    let entry = latest !== undefined && latest.route.format === 'hf-llm' ? latest : known;
    const traffic = entry.traffic;
    if (traffic !== null && this.request !== null) {
      if (traffic !== this.traffic) this.place(traffic);
      entry = traffic.entryAt(this.trafficBucket);
    }
    const replica = this.router.choose(entry, this.prefix, failed, performance.now());
    if (replica === null) {
      // At zero replicas and scaling from zero: held until one is ready (activator.ts).
      if (this.holdForActivation(entry.name)) return;
      this.failNoReplica(entry.name, failure);
      return;
    }
    replica.outstanding += 1;
    this.replica = replica;
    if (this.span !== null) this.traceAttempt(replica);
    this.sentIndex = replica.llmLoad.noteSent();
    this.awaitingBytes = this.body!.length;
    replica.llmLoad.awaitingFirstByteBytes += this.awaitingBytes;
    this.controller = null;
    try {
      replica.pool.dispatch(
        {
          path: replica.pathPrefix + upstreamPaths[this.route],
          method: 'POST',
          headers: this.upstreamHeaders,
          body: this.body,
          headersTimeout: llmUpstreamTimeoutMs,
          bodyTimeout: llmUpstreamTimeoutMs,
        },
        this,
      );
    } catch (error) {
      this.onResponseError(null, error as Error);
    }
  }

  onResponseStart(
    controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: IncomingHttpHeaders,
  ): void {
    if (statusCode < 200) return; // 1xx informational
    this.attemptSpan?.setAttribute('http.response.status_code', statusCode);
    const replica = this.replica!;
    const load = headers['kiln-load'];
    if (typeof load === 'string') {
      const report = parseLlmLoadReport(load);
      if (report !== null) replica.llmLoad.applyReport(report, this.sentIndex, performance.now());
    }
    this.countTokens(headers[usageHeader]);
    if (this.done) {
      controller.abort(new Error('the client went away'));
      return;
    }
    this.responseStarted = true;
    this.status = statusCode;
    this.answeredBy = replica;
    const list = this.answerHeaders(headers, skippedLlmResponseHeaders, this.traceparent, replica);
    this.res.writeHead(statusCode, list);
    // A stream's headers go out at once (clients wait for them before reading events).
    if (headers['content-length'] === undefined) this.res.flushHeaders();
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.done) return;
    if (!this.firstByteSeen) {
      this.firstByteSeen = true;
      this.endPrefill();
      if (this.streamRequested && this.status === 200) {
        this.llmSeries?.firstByte((performance.now() - this.startMs) / 1000);
      }
    }
    this.writeToClient(controller, chunk);
  }

  onResponseEnd(_controller: Dispatcher.DispatchController, trailers: IncomingHttpHeaders): void {
    this.countTokens(trailers[usageHeader]);
    this.releaseReplica();
    if (this.done) return;
    this.res.end();
    this.finish(this.status);
  }

  protected upstreamTimeoutMs(): number {
    return llmUpstreamTimeoutMs;
  }

  /** A worker's `kiln-usage` (header or trailer) into the endpoint's load report. */
  private countTokens(value: string | string[] | undefined): void {
    if (typeof value !== 'string' || this.load === null) return;
    const counts = parseUsageHeader(value);
    if (counts !== null) this.load.tokens(counts.promptTokens, counts.completionTokens);
  }

  // --- endings ------------------------------------------------------------------------

  private place(traffic: TrafficEntry<EndpointEntry>): void {
    const placement = traffic.place(this.req.headers, this.request!);
    this.traffic = traffic;
    this.trafficBucket = placement.bucket;
    this.slice = placement.slice;
  }

  protected override finish(status: number): void {
    if (this.done) return;
    super.finish(status);
    const traffic = this.traffic;
    if (traffic === null) return;
    // Counted for the version that answered (no outputs: these answers are not v2 tensors).
    const latencyMs = performance.now() - this.startMs;
    traffic.count(this.entry!, this.answeredBy, status, latencyMs, this.slice, null);
  }

  /** The answer has begun (or ended): this prompt no longer weighs on its replica's prefill. */
  private endPrefill(): void {
    if (this.awaitingBytes !== 0 && this.replica !== null) {
      this.replica.llmLoad.awaitingFirstByteBytes -= this.awaitingBytes;
    }
    this.awaitingBytes = 0;
  }

  protected override releaseReplica(): ReplicaState | null {
    this.endPrefill();
    return super.releaseReplica();
  }

  /** Head sampling once the endpoint is known (it is named in the body), and its span. */
  private startTrace(tracer: KilnTracer, entry: EndpointEntry): void {
    const route = upstreamPaths[this.route];
    const span = traceRequest(tracer, this.req, entry, this.traceparent, route, this.requestId);
    this.traceparent = requestTraceparent(this.req, this.traceparent, span);
    this.upstreamHeaders[OpenAiExchange.traceparentAt] = this.traceparent;
    this.span = span;
  }

  /** A traced request's attempt on `replica`: the worker gets its span as the parent. */
  private traceAttempt(replica: ReplicaState): void {
    const tracer = this.settings.tracer;
    if (tracer == null || this.span === null) return;
    const attempt = startAttemptSpan(tracer, this.span, replica, 'http');
    this.attemptSpan = attempt;
    this.upstreamHeaders[OpenAiExchange.traceparentAt] = traceparentOf(attempt);
  }

  protected override answeringReplica(): ReplicaState | null {
    return this.answeredBy;
  }

  private refuse(code: ErrorCode, params: ErrorParams, retryAfterSeconds: string): void {
    const headers = this.ownHeaders();
    headers.push('retry-after', retryAfterSeconds);
    this.finish(sendOpenAiKilnError(this.res, code, params, headers));
  }

  protected fail(
    code: ErrorCode,
    params: ErrorParams,
    closeConnection = false,
    param: string | null = null,
  ): void {
    const headers = this.ownHeaders();
    if (closeConnection) headers.push('connection', 'close');
    this.finish(sendOpenAiKilnError(this.res, code, params, headers, param));
  }

  private failMessage(status: number, message: string, param: string | null, code: string): void {
    this.finish(sendOpenAiError(this.res, status, message, { param, code }, this.ownHeaders()));
  }

  private ownHeaders(): HeaderList {
    const headers: HeaderList = ['x-request-id', this.requestId, 'traceparent', this.traceparent];
    const entry = this.entry;
    if (entry !== null) {
      headers.push(
        'kiln-endpoint',
        entry.name,
        'kiln-model-version',
        entry.versionText,
        'kiln-model',
        entry.model,
      );
    }
    return headers;
  }
}
