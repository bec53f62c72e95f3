// One request on its way to a replica: the gateway's hot path. A single object per request
// carries the whole lifecycle and is itself the undici dispatch handler, so the path needs
// no per-request closures:
//
//   readBody ─▶ onBodyData* (count bytes, 413 past maxBodyBytes) ─▶ onBodyEnd
//     ─▶ take a slot of the endpoint's concurrency gate (429 busy if none), held until finish
//     ─▶ an endpoint with a traffic policy: pick the variant (sticky by caller key, read from
//        the `kiln-user` header or the body), which the request is then checked and sent as
//     ─▶ checkInferBody (lenient JSON + compiled schema; 400, the worker sees nothing)
//        └▶ refused, or a v1 predict body: adaptInferBody (v1 instances, any-name single
//           input, named features → the plain request, re-encoded; else the 400 stands)
//     ─▶ send: pick replica (least outstanding) ─▶ pool.dispatch(original bytes)
//        (the endpoint's latest entry reads requests otherwise, a new version's schema or
//        feature names: the client's body is checked again under it first)
//     ─▶ onResponseStart / onResponseData* / onResponseEnd (small answers with a length are
//        sent in one write at the end; others are streamed back as they arrive)
//        (v1 predict: every answer is held, and a 200's v2 outputs become `predictions`)
//     └▶ onResponseError before any response on a lost connection: eject the replica and
//        send once more to another one; else 503 (retryable, Retry-After: 1) or 504.
//     (no replica, the endpoint scaling from zero: held by the activator, activator.ts,
//      and sent from the latest table once one is ready)
//   ─▶ finish; with a traffic policy, after the answer is written: count it for the version
//      that answered (and its slice, and a 200's outputs) and offer copies to the sampled
//      shadows (shadow-sender.ts), which never touch this request again.
//
// A request still uploading its body holds no slot: a slot is taken once the body is in,
// so clients trickling bodies (bounded by the client timeout, 408) cannot fill the bound
// and starve requests that arrived whole. The door (v2-routes.ts) already refused, without
// reading, any request that found the gate full; the slot is released in `finish`, which
// every ending goes through (answer, error, client gone, timeout; a retry keeps it).
//
// What this shares with OpenAiExchange (the body limit, the client's backpressure and
// stalls, upstream errors and the retry, the endings) is in UpstreamExchange.
//
// Metadata requests for endpoints without a schema in the snapshot take the same path
// from `send` on (GET, no body, not counted in the request metrics).

import { performance } from 'node:perf_hooks';
import type { IncomingHttpHeaders } from 'node:http';
import type { Dispatcher } from 'undici';
import type { Span } from '@opentelemetry/api';
import type { ErrorCode, ErrorParams } from '../core/errors.ts';
import type { ConcurrencyGate } from './admission.ts';
import type { TokenBucket } from './token-bucket.ts';
import type { GatewayRequest, GatewayResponse } from './http-types.ts';
import type { EndpointSeries } from './metrics.ts';
import { pickReplica } from './replica-picker.ts';
import { notePoolResidency, pickPoolReplica } from './pool-replica-picker.ts';
import { poolResidentHeader } from '../protocol/pool/pool-protocol.ts';
import type { ReplicaState } from './replica-set.ts';
import { adaptInferBody, checkInferBody, decodeInferBody } from './request-check.ts';
import { encodeTensorRequest } from '../protocol/channel/tensor-frames.ts';
import { v1PredictResponse } from '../protocol/v1/predict-response.ts';
import type { DecodedInferRequest } from '../protocol/v2/decode-request.ts';
import { encodeInferRequest } from '../protocol/v2/encode-request.ts';
import type { V2ProtocolErrorCode } from '../protocol/v2/errors.ts';
import type { ChannelRequester, ChannelTrace } from './channel-client.ts';
import { startAttemptSpan } from './gateway-tracing.ts';
import { traceparentOf } from '../observability/tracing/kiln-tracer.ts';
import type { EndpointEntry } from './route-table.ts';
import type { ShadowSender } from './shadow-sender.ts';
import type { TrafficEntry } from './traffic-entry.ts';
import {
  skippedResponseHeaders,
  UpstreamExchange,
  type UpstreamSettings,
} from './upstream-exchange.ts';
import { sendV2Error, sendV2Message, type HeaderList } from './v2-reply.ts';
import { callerKey, keyAtPath, type CallerKeySource } from '../traffic/caller-key.ts';
import { parseJsonLenient, type JsonParseResult } from '../protocol/v2/lenient-json.ts';
import { maxSliceValueLength, SLICE_HEADER } from '../protocol/traffic/traffic-report.ts';
import { driftHeader } from '../protocol/drift/sketch-report.ts';

export interface ExchangeSettings extends UpstreamSettings {
  readonly upstreamTimeoutMs: number;
  /** The routing table now: a request picks (and re-picks) replicas from the latest one. */
  readonly table: { readonly endpoints: ReadonlyMap<string, EndpointEntry> } | null;
  /** Where copies for shadow versions go, once a primary answer is written. */
  readonly shadows: ShadowSender;
}

/** Largest answer held back to be sent in one write, in bytes. */
const maxHeldResponseBytes = 256 * 1024;

/** Largest streamed answer whose outputs are counted (traffic policies), in bytes. */
const maxCountedAnswerBytes = 4 * 1024 * 1024;

export class InferExchange
  extends UpstreamExchange<ExchangeSettings>
  implements Dispatcher.DispatchHandler, ChannelRequester
{
  /** The entry the request is checked under (a newer one if its version changed, `send`). */
  declare protected entry: EndpointEntry;
  private body: Buffer | null = null;
  /** Where the `traceparent` value sits in upstreamHeaders (an attempt span replaces it). */
  private static readonly traceparentAt = 5;
  /** The client's body as it came (kept to check it again if the endpoint's version changes). */
  private clientBody: Buffer | null = null;
  private method: 'POST' | 'GET' = 'POST';
  private path: string;
  /** The decoded request as a tensors frame, for replicas with a channel (null: send JSON). */
  private tensorFrame: { readonly meta: string; readonly body: Buffer } | null = null;
  /** The frame id of the current attempt on a worker channel (0: none). */
  private channelId = 0;
  /** The protocol the client spoke: v1 bodies are rewritten, and so are their answers. */
  private form: 'v1' | 'v2' = 'v2';
  /** Response headers and body held back to go out in one write (null: streaming). */
  private heldHeaders: HeaderList | null = null;
  private heldChunks: Buffer[] = [];
  /** The team's bucket this request took a token from at the door (null: none taken). */
  private bucket: TokenBucket | null = null;
  private readonly upstreamHeaders: string[];
  /** The traffic policy the request was picked under (null: none, nothing is counted). */
  private traffic: TrafficEntry<EndpointEntry> | null = null;
  /** The request's bucket in that policy's split (sticky by caller key). */
  private trafficBucket = 0;
  /** The slice value it counts under (null: none). */
  private slice: string | null = null;
  /** The replica whose answer the client got (null: the gateway answered itself). */
  private answeredBy: ReplicaState | null = null;
  /** A 200's v2 body, kept (policy endpoints only) to count its outputs once it is sent. */
  private answerBody: Buffer | null = null;
  /** A streamed 200's chunks so far, kept as `answerBody` (policy endpoints; null: not kept). */
  private answerChunks: Buffer[] | null = null;
  private answerBytes = 0;
  /** Held before its body could be read (no schema yet): read afresh when released. */
  private readAfterHold = false;
  /**
   * Drift sketches (issue 15): the slice value the worker sketches this request under ('':
   * none), or undefined when the endpoint collects no sketches (the request is not marked).
   */
  private driftSlice: string | undefined = undefined;
  /**
   * The body as parseJsonLenient read it when a slice path needed it (undefined: not parsed
   * yet): the traffic placement and the check reuse it rather than parse the body again.
   */
  private parsedBody: JsonParseResult | undefined = undefined;

  constructor(
    settings: ExchangeSettings,
    req: GatewayRequest,
    res: GatewayResponse,
    entry: EndpointEntry,
    /** null for requests the metrics do not count (metadata). */
    series: EndpointSeries | null,
    requestId: string,
    traceparent: string,
    startMs: number,
  ) {
    super(settings, req, res, entry, series, entry.maxBodyBytes, requestId, traceparent, startMs);
    this.path = entry.inferPath;
    const headers = req.headers;
    const contentType = headers['content-type'];
    this.upstreamHeaders = [
      'content-type',
      contentType ?? 'application/json',
      'x-request-id',
      requestId,
      'traceparent',
      traceparent,
    ];
    const tracestate = headers.tracestate;
    if (typeof tracestate === 'string') this.upstreamHeaders.push('tracestate', tracestate);
    // The worker's batcher reads the request's deadline and priority from these.
    const timeoutMs = headers['kiln-timeout-ms'];
    if (typeof timeoutMs === 'string') this.upstreamHeaders.push('kiln-timeout-ms', timeoutMs);
    const priority = headers['kiln-priority'];
    if (typeof priority === 'string') this.upstreamHeaders.push('kiln-priority', priority);
    if (series !== null) {
      series.inflight.inc();
      this.countedInflight = true;
    }
  }

  /**
   * Reads the body, then takes a slot of `gate` (until finished), checks and sends it.
   * `bucket`: the team's, when the door took a token from it.
   */
  readBody(gate: ConcurrencyGate, bucket: TokenBucket | null): void {
    this.gate = gate;
    this.bucket = bucket;
    this.readRequestBody();
  }

  /** The request is traced: `span` is its gateway span (ended at finish). */
  traced(span: Span): void {
    this.span = span;
  }

  /** The request is a v1 predict (`{"instances"}`): call before readBody. */
  speakV1(): void {
    this.form = 'v1';
  }

  /** Sends a bodiless GET to `path` on a replica (metadata without a snapshot schema). */
  forwardGet(path: string): void {
    this.method = 'GET';
    this.path = path;
    this.upstreamHeaders[1] = 'application/json';
    this.upstreamHeaders[0] = 'accept';
    this.req.resume();
    this.send(null, null);
  }

  // --- request body -------------------------------------------------------------------

  onBodyEnd(): void {
    if (this.done) return;
    const gate = this.gate;
    if (gate !== null) {
      if (gate.isFull()) {
        // Filled while this body was arriving: refused now, as it would have been at the door.
        this.chunks = [];
        const headers = this.ownHeaders();
        headers.push('retry-after', '1');
        const params = { endpoint: this.entry.name, limit: gate.limit ?? 0 };
        this.finish(sendV2Error(this.res, 'KILN_ENDPOINT_BUSY', params, headers));
        this.entry.series.rejected('busy');
        // A busy endpoint is no fault of the team's: the door would have refused without
        // taking its token, so the token taken there goes back.
        this.bucket?.giveBack(performance.now());
        return;
      }
      gate.enter();
      this.holdsSlot = true;
    }
    const body = this.takeBody();
    this.clientBody = body;
    const drift = this.entry.drift;
    if (
      drift !== null &&
      (drift.sampleRate >= 1 || Math.random() < drift.sampleRate) &&
      (drift.bucket === null || drift.bucket.tryTake(performance.now()))
    )
      this.markForDrift(drift.slice, body);
    const traffic = this.entry.traffic;
    if (traffic !== null) {
      this.pick(traffic, body);
      const variant = traffic.entryAt(this.trafficBucket);
      this.entry = variant;
      this.series = variant.series;
    }
    this.checkAndSend(body);
  }

  /**
   * Marks the request for the workers' drift sketches under its slice value: the `kiln-slice`
   * header, else the value at the drift config's slice path (the body parsed only then).
   */
  private markForDrift(source: CallerKeySource | null, body: Buffer): void {
    let slice =
      source === null ? null : callerKey(source, this.req.headers[SLICE_HEADER], undefined);
    if (slice === null && source !== null && source.segments.length > 0) {
      const parsed = parseJsonLenient(body);
      this.parsedBody = parsed;
      if (parsed.ok) slice = keyAtPath(parsed.value, source.segments);
    }
    if (slice !== null && slice.length > maxSliceValueLength) {
      slice = slice.slice(0, maxSliceValueLength);
    }
    this.driftSlice = slice ?? '';
    this.upstreamHeaders.push(driftHeader, '1');
    if (slice !== null) this.upstreamHeaders.push(SLICE_HEADER, slice);
  }

  /** Places the request in `traffic`'s split (traffic-entry.ts: caller key and slice). */
  private pick(traffic: TrafficEntry<EndpointEntry>, body: Buffer): void {
    const parsed = this.parsedBody;
    const placement = traffic.place(
      this.req.headers,
      parsed?.ok === true && typeof parsed.value === 'object' && parsed.value !== null
        ? parsed.value
        : body,
    );
    this.traffic = traffic;
    this.trafficBucket = placement.bucket;
    this.slice = placement.slice;
  }

  /** Checks the body under `entry` (decoding or rewriting it as needed) and sends it. */
  private checkAndSend(body: Buffer): void {
    const check = this.entry.check;
    if (this.form === 'v1') {
      this.sendAdapted(body, null);
      return;
    }
    if (check !== null && this.entry.workerChannels) {
      // Kiln workers: decode here and send the tensors, so the worker does not parse the
      // same JSON again (checked against the same schema: same verdict, same message).
      const decoded = decodeInferBody(body, check, this.parsedBody);
      if (!decoded.ok) {
        this.sendAdapted(body, decoded);
        return;
      }
      const headers = this.req.headers;
      const timeout = headers['kiln-timeout-ms'];
      const priority = headers['kiln-priority'];
      this.tensorFrame = encodeTensorRequest(
        decoded.request,
        typeof timeout === 'string' ? timeout : undefined,
        typeof priority === 'string' ? priority : undefined,
        this.driftSlice,
      );
    } else {
      const problem = checkInferBody(body, check, this.parsedBody);
      if (problem !== null) {
        this.sendAdapted(body, problem);
        return;
      }
    }
    this.body = body;
    this.send(null, null);
  }

  /**
   * A body in another form than plain v2 (a v1 predict; inputs named otherwise, which the
   * strict check refused as `strict`): rewritten into the plain request and sent as tensors
   * or re-encoded JSON. A v2 body that is no such form gets the strict check's 400.
   */
  private sendAdapted(
    body: Buffer,
    strict: { readonly code: V2ProtocolErrorCode; readonly message: string } | null,
  ): void {
    const check = this.entry.check;
    if (check === null) {
      // Without the schema the gateway cannot rewrite (a schema arrives with the first
      // ready replica, so this is the moment before one is).
      if (strict === null) {
        // At zero replicas and scaling from zero: held, and read once a replica is ready.
        if (this.holdForActivation(this.entry.name)) {
          this.readAfterHold = true;
          return;
        }
        const reason = 'its schema is not known yet; retry once it has a ready replica';
        this.fail('KILN_MODEL_NOT_READY', { model: this.entry.name, reason });
      } else {
        this.finish(sendV2Message(this.res, strict.code, strict.message, this.ownHeaders()));
      }
      return;
    }
    // null only for a v2 body (a v1 body always gets a verdict), so `strict` is set then.
    const adapted = adaptInferBody(body, check, this.entry.naming, this.form);
    if (adapted !== null && adapted.ok) {
      this.sendRequest(adapted.request);
      return;
    }
    const failure = adapted ?? strict;
    const code = failure?.code ?? 'KILN_INVALID_INFER_REQUEST';
    const message = failure?.message ?? 'the request could not be read';
    this.finish(sendV2Message(this.res, code, message, this.ownHeaders()));
  }

  /** Sends a request the gateway decoded (and rewrote): tensors on a channel, else JSON. */
  private sendRequest(request: DecodedInferRequest): void {
    if (this.entry.workerChannels) {
      const headers = this.req.headers;
      const timeout = headers['kiln-timeout-ms'];
      const priority = headers['kiln-priority'];
      this.tensorFrame = encodeTensorRequest(
        request,
        typeof timeout === 'string' ? timeout : undefined,
        typeof priority === 'string' ? priority : undefined,
        this.driftSlice,
      );
    }
    // Replicas without a channel (and BYTES requests) get the rewritten request as JSON.
    this.body = Buffer.from(encodeInferRequest(request));
    this.send(null, null);
  }

  protected override resumeAfterHold(): void {
    const body = this.clientBody;
    if (!this.readAfterHold || body === null) {
      this.send(null, null);
      return;
    }
    this.readAfterHold = false;
    this.entry = this.settings.table?.endpoints.get(this.entry.name) ?? this.entry;
    this.checkAndSend(body);
  }

  // --- upstream -----------------------------------------------------------------------

  protected send(failed: ReplicaState | null, failure: Error | null): void {
    if (this.done) return;
    // The replicas of the latest snapshot, not of the one the request arrived under: those
    // a newer snapshot dropped have their connections closed (a rollout, a scale down).
    let latest = this.settings.table?.endpoints.get(this.entry.name);
    const body = this.clientBody;
    const traffic = latest?.traffic ?? null;
    if (traffic !== null && body !== null) {
      // The variant of the latest policy: the same bucket unless the policy changed (then
      // placed afresh, as a new request of the same caller would be).
      if (traffic !== this.traffic) this.pick(traffic, body);
      latest = traffic.entryAt(this.trafficBucket);
      this.series = latest.series;
    }
    if (latest !== undefined && latest.requestKey !== this.entry.requestKey && body !== null) {
      // The endpoint now serves a version that reads requests otherwise (another schema,
      // other feature names): what was checked and rewritten under the old one could give
      // it wrong numbers (a rewrite in the old feature order; tensor frames are not checked
      // again), so the client's body is checked afresh for the version it goes to.
      this.entry = latest;
      this.tensorFrame = null;
      this.body = null;
      this.checkAndSend(body);
      return;
    }
    const entry = latest ?? this.entry;
    // A pool endpoint goes where its model is loaded, else to its rendezvous worker.
    const replica =
      entry.route.pool === undefined
        ? pickReplica(entry.replicas, entry.cursor++, performance.now(), failed)
        : pickPoolReplica(entry.replicas, entry.name, performance.now(), failed);
    if (replica === null) {
      // An endpoint at zero that scales from zero: held until it has a replica (infer only).
      if (this.method === 'POST' && this.holdForActivation(entry.name)) return;
      this.failNoReplica(entry.name, failure);
      return;
    }
    replica.outstanding += 1;
    this.replica = replica;
    this.controller = null;
    const channel = replica.channel;
    const onChannel = channel !== null && this.method === 'POST';
    // A traced request: this attempt's span is the parent the worker continues.
    const trace = this.span === null ? null : this.traceAttempt(replica, onChannel);
    if (onChannel && this.tensorFrame !== null) {
      this.channelId = channel.sendTensors(this, this.tensorFrame, trace);
      return;
    }
    if (onChannel && this.body !== null) {
      const headers = this.req.headers;
      const timeout = headers['kiln-timeout-ms'];
      const priority = headers['kiln-priority'];
      this.channelId = channel.send(
        this,
        this.body,
        typeof timeout === 'string' ? timeout : undefined,
        typeof priority === 'string' ? priority : undefined,
        trace,
        this.driftSlice,
      );
      return;
    }
    try {
      replica.pool.dispatch(
        {
          path: replica.pathPrefix + this.path,
          method: this.method,
          headers: this.upstreamHeaders,
          body: this.body,
        },
        this,
      );
    } catch (error) {
      this.onResponseError(null, error as Error);
    }
  }

  /** Starts the attempt's span; the trace context the worker gets names it. */
  private traceAttempt(replica: ReplicaState, onChannel: boolean): ChannelTrace | null {
    const tracer = this.settings.tracer;
    if (tracer == null || this.span === null) return null;
    const attempt = startAttemptSpan(tracer, this.span, replica, onChannel ? 'channel' : 'http');
    this.attemptSpan = attempt;
    const traceparent = traceparentOf(attempt);
    this.upstreamHeaders[InferExchange.traceparentAt] = traceparent;
    const tracestate = this.req.headers.tracestate;
    return { traceparent, tracestate: typeof tracestate === 'string' ? tracestate : undefined };
  }

  protected override answeringReplica(): ReplicaState | null {
    return this.answeredBy;
  }

  onResponseStart(
    controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: IncomingHttpHeaders,
  ): void {
    if (statusCode < 200) return; // 1xx informational
    this.attemptSpan?.setAttribute('http.response.status_code', statusCode);
    if (this.done) {
      controller.abort(new Error('the client went away'));
      return;
    }
    const replica = this.replica!;
    if (this.entry.route.pool !== undefined)
      notePoolResidency(replica, headers[poolResidentHeader]);
    this.responseStarted = true;
    this.status = statusCode;
    this.answeredBy = replica;
    // With tracing on the client gets the gateway's span, not the attempt's the worker echoes.
    const upstreamTrace = this.settings.tracer == null ? headers.traceparent : undefined;
    const traceparent = typeof upstreamTrace === 'string' ? upstreamTrace : this.traceparent;
    const list = this.answerHeaders(headers, skippedResponseHeaders, traceparent, replica);
    if (this.form === 'v1') {
      // The answer is rewritten at the end: its length is the rewritten one's.
      const at = list.indexOf('content-length');
      if (at !== -1 && at % 2 === 0) list.splice(at, 2);
    }
    // A small answer of known length goes out with its headers in one write (one syscall)
    // at the end; anything else (no length, large, server-sent events) streams.
    const length = headers['content-length'];
    if (this.form === 'v1' || (length !== undefined && Number(length) <= maxHeldResponseBytes)) {
      this.heldHeaders = list;
    } else {
      this.res.writeHead(statusCode, list);
      if (this.keepsAnswer() && statusCode === 200) this.answerChunks = [];
    }
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.done) return;
    if (this.heldHeaders !== null) {
      this.heldChunks.push(chunk);
      return;
    }
    this.writeToClient(controller, chunk);
    const kept = this.answerChunks;
    if (kept !== null) {
      // Outputs of a larger answer are not counted (it is let go, not parsed).
      this.answerBytes += chunk.length;
      if (this.answerBytes <= maxCountedAnswerBytes) kept.push(chunk);
      else this.answerChunks = null;
    }
  }

  onResponseEnd(): void {
    this.releaseReplica();
    if (this.done) return;
    const held = this.heldHeaders;
    if (held === null) {
      this.res.end();
      const kept = this.answerChunks;
      if (kept !== null) this.answerBody = Buffer.concat(kept, this.answerBytes);
    } else if (this.form === 'v1') {
      const v2Body = Buffer.concat(this.heldChunks);
      if (this.keepsAnswer() && this.status === 200) this.answerBody = v2Body;
      const answer = this.v1Answer(this.status, v2Body);
      if (answer === null) return;
      held.push('content-length', String(answer.length));
      this.res.writeHead(this.status, held);
      this.res.end(answer);
    } else {
      const chunks = this.heldChunks;
      this.res.writeHead(this.status, held);
      if (chunks.length === 0) {
        this.res.end();
      } else {
        const answer = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
        if (this.keepsAnswer() && this.status === 200) this.answerBody = answer;
        this.res.end(answer);
      }
    }
    this.finish(this.status);
  }

  /**
   * The v1 body for a replica's answer: a 200's outputs as `predictions`; errors as they are
   * (`{"error": …}` is v1's error shape too). null when a 200 is no v2 response, answered
   * here as a 500.
   */
  private v1Answer(status: number, body: Buffer): Buffer | null {
    if (status !== 200) return body;
    const predictions = v1PredictResponse(body);
    if (predictions !== null) return Buffer.from(predictions);
    const reason = 'the replica answered something other than a v2 response';
    this.fail('KILN_INFERENCE_FAILED', { reason });
    return null;
  }

  // --- upstream on a worker channel ---------------------------------------------------

  onChannelReply(status: number, retryAfter: string | null, reply: Buffer): void {
    this.attemptSpan?.setAttribute('http.response.status_code', status);
    const replica = this.releaseReplica();
    this.channelId = 0;
    if (this.done || replica === null) return;
    this.answeredBy = replica;
    if (this.keepsAnswer() && status === 200) this.answerBody = reply;
    const body = this.form === 'v1' ? this.v1Answer(status, reply) : reply;
    if (body === null) return;
    const headers = this.baseHeaders();
    headers.push(
      'content-type',
      'application/json',
      'content-length',
      String(body.length),
      'kiln-model-version',
      replica.versionText,
      'kiln-model',
      replica.model,
      'kiln-replica',
      replica.id,
    );
    if (retryAfter !== null) headers.push('retry-after', retryAfter);
    this.res.writeHead(status, headers);
    this.res.end(body);
    this.finish(status);
  }

  onChannelError(error: Error): void {
    this.channelId = 0;
    this.onResponseError(null, error);
  }

  protected override dropHeldResponse(): boolean {
    if (this.heldHeaders === null) return false;
    this.heldHeaders = null;
    this.heldChunks = [];
    return true;
  }

  protected upstreamTimeoutMs(): number {
    return this.settings.upstreamTimeoutMs;
  }

  // --- client side --------------------------------------------------------------------

  protected override abortUpstream(): void {
    if (this.channelId !== 0) {
      const replica = this.releaseReplica();
      replica?.channel?.cancel(this.channelId);
      this.channelId = 0;
      return;
    }
    super.abortUpstream();
  }

  // --- endings ------------------------------------------------------------------------

  protected override finish(status: number): void {
    if (this.done) return;
    super.finish(status);
    const observer = this.entry.observer;
    // Before countTraffic, which lets the answer go; only requests whose body was read.
    if (observer !== null && this.clientBody !== null && this.method === 'POST') {
      const replica = this.answeredBy;
      observer.observe({
        requestId: this.requestId,
        model: replica?.model ?? this.entry.model,
        version: replica?.version ?? this.entry.version,
        status,
        latencyMs: performance.now() - this.startMs,
        headers: this.req.headers,
        body: this.clientBody,
        answer: this.answerBody,
      });
    }
    const traffic = this.traffic;
    if (traffic !== null) this.countTraffic(traffic, status);
  }

  /** A 200's answer is kept for counting (traffic policy) or the prediction observer. */
  private keepsAnswer(): boolean {
    return this.traffic !== null || this.entry.observer !== null;
  }

  /**
   * The answer is written: counts it for the version that answered (the picked variant's
   * when the gateway answered itself) and offers copies to the sampled shadows.
   */
  private countTraffic(traffic: TrafficEntry<EndpointEntry>, status: number): void {
    const latencyMs = performance.now() - this.startMs;
    const entry = this.entry;
    const answer = this.answerBody;
    this.answerBody = null;
    const outputs = traffic.count(entry, this.answeredBy, status, latencyMs, this.slice, answer);
    // Only a request that was sent (its body passed the check) is copied.
    const body = this.body;
    if (traffic.shadows.length === 0 || body === null || this.method !== 'POST') return;
    for (const shadow of traffic.pickShadows()) {
      this.settings.shadows.offer({
        shadow,
        endpoint: entry.name,
        path: this.path,
        body,
        requestKey: entry.requestKey,
        requestId: this.requestId,
        primaryStatus: status,
        primaryOutputs: outputs,
        primaryLatencyMs: latencyMs,
      });
    }
  }

  protected fail(code: ErrorCode, params: ErrorParams, closeConnection = false): void {
    const headers = this.ownHeaders();
    if (closeConnection) headers.push('connection', 'close');
    this.finish(sendV2Error(this.res, code, params, headers));
  }

  /** The headers of an answer the gateway writes itself: the version it was meant for. */
  private ownHeaders(): HeaderList {
    const headers = this.baseHeaders();
    headers.push('kiln-model-version', this.entry.versionText, 'kiln-model', this.entry.model);
    return headers;
  }

  private baseHeaders(): HeaderList {
    return [
      'x-request-id',
      this.requestId,
      'traceparent',
      this.traceparent,
      'kiln-endpoint',
      this.entry.name,
    ];
  }
}
