// One OpenAI request (`/v1/completions`, `/v1/chat/completions`) on its way to an hf-llm
// replica. Like InferExchange, one object per request is the whole lifecycle and its own
// undici dispatch handler:
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
import type { GatewayLog } from './gateway-log.ts';
import {
  onRequestClose,
  onRequestData,
  onRequestEnd,
  onResponseClose,
  onResponseDrain,
  type ExchangeEvents,
  type GatewayRequest,
  type GatewayResponse,
} from './http-types.ts';
import { parseLlmLoadReport } from './llm-replica-load.ts';
import type { LlmRouter } from './llm-router.ts';
import type { EndpointSeries, GatewayMetrics, LlmSeries } from './metrics.ts';
import { sendOpenAiError, sendOpenAiKilnError } from './openai-reply.ts';
import { promptPrefix, type OpenAiRoute } from './prompt-prefix.ts';
import type { ReplicaState } from './replica-set.ts';
import type { EndpointEntry, RouteTable } from './route-table.ts';
import type { ApiKeyGrant } from './routing-snapshot.ts';
import { classifyUpstreamError } from './upstream-errors.ts';
import type { HeaderList } from './v2-reply.ts';

export interface OpenAiState {
  readonly table: RouteTable | null;
  readonly metrics: GatewayMetrics;
  readonly ejectMs: number;
  /** Longest stall of an upstream body (ms) before the request fails. */
  readonly upstreamTimeoutMs: number;
  /** How long a client may leave a streamed answer unread before it is cut (slot freed). */
  readonly clientStallMs: number;
  readonly log: GatewayLog;
}

/**
 * How long a worker may take to start its answer. A non-streamed completion starts when it
 * is complete, which for a long generation on CPU can be minutes, so the gateway's general
 * upstream limit (30 s) would cut answers that are on their way.
 */
const llmHeadersTimeoutMs = 10 * 60_000;

// Worker response headers not passed on: hop-by-hop ones, the ones the gateway sets
// itself, and the load report (for routers, not clients).
const skippedResponseHeaders = new Set([
  'connection',
  'keep-alive',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'proxy-connection',
  'date',
  'x-request-id',
  'traceparent',
  'kiln-endpoint',
  'kiln-model-version',
  'kiln-replica',
  'kiln-load',
]);

const upstreamPaths: Record<OpenAiRoute, string> = {
  completions: '/v1/completions',
  chat: '/v1/chat/completions',
};

export class OpenAiExchange implements ExchangeEvents, Dispatcher.DispatchHandler {
  private chunks: Buffer[] = [];
  private receivedBytes = 0;
  private body: Buffer | null = null;
  private entry: EndpointEntry | null = null;
  /** The request metrics: the unknown endpoint's until the model names an endpoint. */
  private series: EndpointSeries;
  private llmSeries: LlmSeries | null = null;
  private countedInflight = false;
  private prefix: string | null = null;
  /** Whether the client asked for a stream (its first byte's time is the TTFT). */
  private streamRequested = false;
  private replica: ReplicaState | null = null;
  /** The number of this request among those sent to `replica` (llm-replica-load.ts). */
  private sentIndex = 0;
  /** Bytes this request adds to its replica's awaitingFirstByteBytes (0: none now). */
  private awaitingBytes = 0;
  private controller: Dispatcher.DispatchController | null = null;
  private retried = false;
  private responseStarted = false;
  private firstByteSeen = false;
  private status = 0;
  private done = false;
  private holdsSlot = false;
  private stallTimer: NodeJS.Timeout | null = null;
  private readonly upstreamHeaders: string[];

  constructor(
    private readonly state: OpenAiState,
    private readonly router: LlmRouter,
    private readonly req: GatewayRequest,
    private readonly res: GatewayResponse,
    private readonly route: OpenAiRoute,
    /** The caller's key (null in dev mode). */
    private readonly grant: ApiKeyGrant | null,
    /** Most body bytes read before the endpoint is known. */
    private readonly readLimit: number,
    unknownSeries: EndpointSeries,
    private readonly requestId: string,
    private readonly traceparent: string,
    private readonly startMs: number,
  ) {
    this.series = unknownSeries;
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
    req.exchange = this;
    res.exchange = this;
    res.on('close', onResponseClose);
  }

  readBody(): void {
    this.req.on('data', onRequestData);
    this.req.on('end', onRequestEnd);
    this.req.on('close', onRequestClose);
  }

  // --- request body -------------------------------------------------------------------

  onBodyData(chunk: Buffer): void {
    if (this.done) return;
    this.receivedBytes += chunk.length;
    if (this.receivedBytes > this.readLimit) {
      this.chunks = [];
      const params = { size: `at least ${this.receivedBytes}`, limit: this.readLimit };
      this.failKiln('KILN_PAYLOAD_TOO_LARGE', params, true);
      return;
    }
    this.chunks.push(chunk);
  }

  onBodyEnd(): void {
    if (this.done) return;
    const chunks = this.chunks;
    this.chunks = [];
    this.admit(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, this.receivedBytes));
  }

  /** The checks that need the body, in order; sends the request if it passes them all. */
  private admit(body: Buffer): void {
    let parsed: unknown;
    try {
      parsed = JSON.parse(body.toString('utf8'));
    } catch (error) {
      this.failKiln('KILN_INVALID_JSON', { reason: (error as Error).message });
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
    const entry = this.state.table?.endpoints.get(model);
    if (entry === undefined) {
      this.failKiln('KILN_ENDPOINT_NOT_FOUND', { endpoint: model }, false, 'model');
      return;
    }
    if (entry.route.format !== 'hf-llm') {
      const message = `endpoint ${model} serves a ${entry.route.format} model, not an LLM: the OpenAI routes serve hf-llm endpoints (use /v2/models/${model}/infer)`;
      this.failMessage(404, message, 'model', 'model_not_found');
      return;
    }
    if (this.grant !== null && !grantCovers(this.grant, entry)) {
      this.failKiln('KILN_FORBIDDEN', { endpoint: model }, false, 'model');
      return;
    }
    // From here on the request counts in its endpoint's metrics.
    this.entry = entry;
    this.series = entry.series;
    this.llmSeries = this.state.metrics.llmSeriesFor(entry.name);
    entry.series.inflight.inc();
    this.countedInflight = true;
    if (body.length > entry.maxBodyBytes) {
      this.failKiln('KILN_PAYLOAD_TOO_LARGE', { size: body.length, limit: entry.maxBodyBytes });
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
    this.holdsSlot = true;
    this.prefix = promptPrefix(this.route, request);
    this.streamRequested = request.stream === true;
    this.body = body;
    this.send(null, null);
  }

  // --- upstream -----------------------------------------------------------------------

  private send(failed: ReplicaState | null, failure: Error | null): void {
    if (this.done) return;
    // The replicas of the latest snapshot (those a newer one dropped are closing).
    const known = this.entry!;
    const latest = this.state.table?.endpoints.get(known.name);
    const entry = latest !== undefined && latest.route.format === 'hf-llm' ? latest : known;
    const replica = this.router.choose(entry, this.prefix, failed, performance.now());
    if (replica === null) {
      if (failure === null) {
        this.failKiln('KILN_NO_READY_REPLICA', { endpoint: entry.name, reason: 'none is ready' });
      } else {
        const params = { endpoint: entry.name, reason: failure.message };
        this.failKiln('KILN_REPLICA_UNAVAILABLE', params);
      }
      return;
    }
    replica.outstanding += 1;
    this.replica = replica;
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
          headersTimeout: llmHeadersTimeoutMs,
          bodyTimeout: this.state.upstreamTimeoutMs,
        },
        this,
      );
    } catch (error) {
      this.onResponseError(null, error as Error);
    }
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.done) controller.abort(new Error('the client went away'));
  }

  onResponseStart(
    controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: IncomingHttpHeaders,
  ): void {
    if (statusCode < 200) return; // 1xx informational
    const replica = this.replica!;
    const load = headers['kiln-load'];
    if (typeof load === 'string') {
      const report = parseLlmLoadReport(load);
      if (report !== null) replica.llmLoad.applyReport(report, this.sentIndex, performance.now());
    }
    if (this.done) {
      controller.abort(new Error('the client went away'));
      return;
    }
    this.responseStarted = true;
    this.status = statusCode;
    const list: HeaderList = [];
    for (const name in headers) {
      if (skippedResponseHeaders.has(name)) continue;
      const value = headers[name];
      if (typeof value === 'string') list.push(name, value);
      else if (value !== undefined) for (const item of value) list.push(name, item);
    }
    const entry = this.entry!;
    list.push(
      'x-request-id',
      this.requestId,
      'traceparent',
      this.traceparent,
      'kiln-endpoint',
      entry.name,
      'kiln-model-version',
      replica.versionText,
      'kiln-replica',
      replica.id,
    );
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
    if (!this.res.write(chunk)) {
      // Backpressure: read no more of the worker's answer until the client drains.
      controller.pause();
      this.res.once('drain', onResponseDrain);
      this.stallTimer ??= setTimeout(clientStalled, this.state.clientStallMs, this);
    }
  }

  onResponseEnd(): void {
    this.releaseReplica();
    if (this.done) return;
    this.res.end();
    this.finish(this.status);
  }

  onResponseError(_controller: Dispatcher.DispatchController | null, error: Error): void {
    const replica = this.releaseReplica();
    if (this.done) return;
    const failure = classifyUpstreamError(error);
    const entry = this.entry!;
    entry.series.upstreamError(this.responseStarted ? 'response_aborted' : failure.reason);
    if (failure.connectionLost && replica !== null) this.eject(replica, error);
    if (this.responseStarted) {
      // Too late for another status: cut the response so the client sees it incomplete.
      this.res.destroy(error);
      this.finish(this.status);
      return;
    }
    if (failure.timedOut) {
      const params = { endpoint: entry.name, timeoutMs: this.state.upstreamTimeoutMs };
      this.failKiln('KILN_UPSTREAM_TIMEOUT', params);
      return;
    }
    if (failure.connectionLost && replica !== null && !this.retried) {
      // The worker never saw the request: once more, elsewhere (not from inside undici's
      // error callback: on the next tick).
      this.retried = true;
      process.nextTick(sendAgain, this, replica, error);
      return;
    }
    this.failKiln('KILN_REPLICA_UNAVAILABLE', { endpoint: entry.name, reason: error.message });
  }

  private eject(replica: ReplicaState, error: Error): void {
    replica.ejectedUntilMs = performance.now() + this.state.ejectMs;
    this.state.log.warn(
      { endpoint: this.entry?.name, replica: replica.id, url: replica.url, error: error.message },
      'replica ejected after a connection failure',
    );
  }

  /** Entry for the retry tick. */
  retry(failed: ReplicaState, failure: Error): void {
    this.send(failed, failure);
  }

  // --- client side --------------------------------------------------------------------

  onClientClose(): void {
    if (this.done) return;
    // Finish first: aborting calls onResponseError at once, which must find us done.
    this.finish(499);
    this.controller?.abort(new Error('the client went away'));
  }

  onClientDrain(): void {
    this.clearStallTimer();
    this.controller?.resume();
  }

  onRequestClose(): void {
    if (!this.req.complete) this.onClientClose();
  }

  /** The client has not read the stream for clientStallMs: cut it (its close ends us). */
  cutStalledClient(): void {
    this.stallTimer = null;
    if (!this.done) this.res.destroy();
  }

  private clearStallTimer(): void {
    if (this.stallTimer !== null) clearTimeout(this.stallTimer);
    this.stallTimer = null;
  }

  // --- endings ------------------------------------------------------------------------

  /** The answer has begun (or ended): this prompt no longer weighs on its replica's prefill. */
  private endPrefill(): void {
    if (this.awaitingBytes !== 0 && this.replica !== null) {
      this.replica.llmLoad.awaitingFirstByteBytes -= this.awaitingBytes;
    }
    this.awaitingBytes = 0;
  }

  private releaseReplica(): ReplicaState | null {
    this.endPrefill();
    const replica = this.replica;
    if (replica !== null) {
      replica.outstanding -= 1;
      this.replica = null;
    }
    return replica;
  }

  private refuse(code: ErrorCode, params: ErrorParams, retryAfterSeconds: string): void {
    const headers = this.ownHeaders();
    headers.push('retry-after', retryAfterSeconds);
    this.finish(sendOpenAiKilnError(this.res, code, params, headers));
  }

  private failKiln(
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
    if (this.entry !== null) headers.push('kiln-endpoint', this.entry.name);
    return headers;
  }

  private finish(status: number): void {
    if (this.done) return;
    this.done = true;
    this.clearStallTimer();
    if (this.holdsSlot) {
      this.holdsSlot = false;
      this.entry!.gate.leave();
    }
    if (this.countedInflight) this.series.inflight.dec();
    this.series.record(status, (performance.now() - this.startMs) / 1000);
  }
}

function clientStalled(exchange: OpenAiExchange): void {
  exchange.cutStalledClient();
}

function sendAgain(exchange: OpenAiExchange, failed: ReplicaState, failure: Error): void {
  exchange.retry(failed, failure);
}
