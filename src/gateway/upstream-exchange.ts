// What every request the gateway forwards to a replica does alike, whatever protocol the
// client spoke: InferExchange (v2/v1) and OpenAiExchange extend it. One object per request is
// the whole lifecycle and its own undici dispatch handler, so the shared steps are methods
// here, not callbacks, and the path needs no per-request closures:
//
//   readRequestBody ─▶ onBodyData* (413 past readLimit) ─▶ onBodyEnd (subclass: checks, send)
//   send (subclass: pick a replica, dispatch) ─▶ onRequestStart
//     ─▶ onResponseStart / onResponseData* (subclass; writeToClient pauses the upstream on a
//        full client socket and cuts a client that stays stalled) / onResponseEnd
//     └▶ onResponseError: eject the replica on a lost connection; before any response, send
//        once more elsewhere (once), else 504 on a timeout or 503; after it, cut the client.
//   onClientClose (499) / onRequestClose (gone mid-body) ─▶ finish ─▶ abortUpstream
//
// An endpoint at zero replicas whose route has `activation`: `send` finds no replica and
// hands the request to the activator (activator.ts) instead of failing it; the request gives
// its concurrency slot back while held (the activator's queue bounds held requests) and
// takes one again when released, then `send`s afresh from the latest route table.
//
// Every ending goes through `finish` exactly once: it frees the concurrency slot, records
// the request's metrics and its demand (load-counter.ts), lets the activator go of it if it
// is held, and measures the cold start that released it. The subclasses keep what differs: how the body is checked, how a
// replica is chosen, what the answer looks like and the shape of their errors.

import { performance } from 'node:perf_hooks';
import type { IncomingHttpHeaders } from 'node:http';
import type { Dispatcher } from 'undici';
import type { Span } from '@opentelemetry/api';
import type { ErrorCode, ErrorParams } from '../core/errors.ts';
import type { Activator, ColdStart, HeldRequest } from './activator.ts';
import type { ConcurrencyGate } from './admission.ts';
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
import type { EndpointLoadCounter } from './load-counter.ts';
import type { EndpointSeries } from './metrics.ts';
import type { ReplicaState } from './replica-set.ts';
import { hasReadyReplica, type EndpointEntry } from './route-table.ts';
import { classifyUpstreamError } from './upstream-errors.ts';
import { endRequestSpan, endWithError } from './gateway-tracing.ts';
import type { KilnTracer } from '../observability/tracing/kiln-tracer.ts';
import type { HeaderList } from './v2-reply.ts';

/** The settings every forwarded request reads. */
export interface UpstreamSettings {
  readonly ejectMs: number;
  /** How long a client may leave a streamed answer unread before it is cut (slot freed). */
  readonly clientStallMs: number;
  readonly log: GatewayLog;
  /** The routing table now (the activator's check reads the endpoint's latest entry). */
  readonly table: { readonly endpoints: ReadonlyMap<string, EndpointEntry> } | null;
  /** Holds requests of endpoints waking from zero; null: none (503 as without activation). */
  readonly activator: Activator | null;
  /** Records spans of traced requests (docs/tracing.md); null or absent: tracing is off. */
  readonly tracer?: KilnTracer | null;
}

// Worker response headers the gateway does not pass on: hop-by-hop ones (RFC 9110 §7.6.1)
// and the ones it sets itself.
export const skippedResponseHeaders: ReadonlySet<string> = new Set([
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
  'kiln-model',
  'kiln-replica',
  // A pool worker's residency (pool-replica-picker.ts): other endpoints' names.
  'kiln-pool-resident',
]);

export abstract class UpstreamExchange<Settings extends UpstreamSettings>
  implements ExchangeEvents, Dispatcher.DispatchHandler, HeldRequest
{
  protected chunks: Buffer[] = [];
  protected receivedBytes = 0;
  /** The replica the current attempt went to (null between attempts). */
  protected replica: ReplicaState | null = null;
  protected controller: Dispatcher.DispatchController | null = null;
  private retried = false;
  protected responseStarted = false;
  protected status = 0;
  protected done = false;
  /** The gate this request holds a slot of while `holdsSlot` (released at finish). */
  protected gate: ConcurrencyGate | null = null;
  protected holdsSlot = false;
  /** Whether `series` counts this request in flight (released at finish). */
  protected countedInflight = false;
  /** Cuts a streamed answer the client stopped reading (armed while paused on it). */
  private stallTimer: NodeJS.Timeout | null = null;
  /** The demand counter this request's arrival was counted in (its answer is, at finish). */
  protected load: EndpointLoadCounter | null = null;
  /** Held by the activator now. */
  private held = false;
  /** When the activator took it (while `held`) and how long it was held before. */
  private heldSinceMs = 0;
  private heldForMs = 0;
  /** Gave its concurrency slot back to be held: takes one again when released. */
  private slotOnRelease = false;
  /** The cold start that released this request (its answer may be the one that ends it). */
  private coldStart: ColdStart | null = null;
  /** A traced request's gateway span (null: not traced), ended at finish. */
  protected span: Span | null = null;
  /** The span of the attempt in flight on a replica (null: none, or not traced). */
  protected attemptSpan: Span | null = null;

  constructor(
    protected readonly settings: Settings,
    protected readonly req: GatewayRequest,
    protected readonly res: GatewayResponse,
    /** The endpoint the request goes to (null until known, for OpenAI: it is in the body). */
    protected entry: EndpointEntry | null,
    /** The request metrics (null for requests they do not count: metadata). */
    protected series: EndpointSeries | null,
    /** Most body bytes read (413 past it). */
    protected readLimit: number,
    protected readonly requestId: string,
    /** The one the client gets back (a traced request's names the gateway's span). */
    protected traceparent: string,
    protected readonly startMs: number,
  ) {
    req.exchange = this;
    res.exchange = this;
    res.on('close', onResponseClose);
  }

  // --- subclass steps -------------------------------------------------------------------

  abstract onBodyEnd(): void;

  /** Picks a replica (not `failed`, the one a retry follows) and dispatches to it. */
  protected abstract send(failed: ReplicaState | null, failure: Error | null): void;

  /** Answers with a Kiln error in the protocol's shape and finishes. */
  protected abstract fail(code: ErrorCode, params: ErrorParams, closeConnection?: boolean): void;

  /** How long the replica had (for the 504's message). */
  protected abstract upstreamTimeoutMs(): number;

  /** An answer started but held back unsent is dropped (true), so a clean 503 can go out. */
  protected dropHeldResponse(): boolean {
    return false;
  }

  // --- request body ---------------------------------------------------------------------

  protected readRequestBody(): void {
    this.req.on('data', onRequestData);
    this.req.on('end', onRequestEnd);
    // A pipelined request's response waits behind the one before it, and gets no 'close'
    // when the client leaves mid-body: the request stream's own 'close' says so.
    this.req.on('close', onRequestClose);
  }

  onBodyData(chunk: Buffer): void {
    if (this.done) return;
    this.receivedBytes += chunk.length;
    if (this.receivedBytes > this.readLimit) {
      this.chunks = [];
      // Close the connection after answering rather than read the rest of a huge body.
      const params = { size: `at least ${this.receivedBytes}`, limit: this.readLimit };
      this.fail('KILN_PAYLOAD_TOO_LARGE', params, true);
      return;
    }
    this.chunks.push(chunk);
  }

  /** The body read, in one buffer (the chunks are let go). */
  protected takeBody(): Buffer {
    const chunks = this.chunks;
    this.chunks = [];
    return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, this.receivedBytes);
  }

  // --- upstream -------------------------------------------------------------------------

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.done) controller.abort(new Error('the client went away'));
  }

  /** Its arrival was counted in `load` (the door counts it): the answer is counted at finish. */
  countsIn(load: EndpointLoadCounter | null): void {
    this.load = load;
  }

  /**
   * No replica to send to: if the endpoint (its latest entry) scales from zero and has no
   * ready replica, the activator holds the request (true; or refuses it, full, and it is
   * answered: true too). false: not such an endpoint, the caller answers as usual.
   */
  protected holdForActivation(endpoint: string): boolean {
    const activator = this.settings.activator;
    const entry = this.settings.table?.endpoints.get(endpoint);
    if (activator === null || entry === undefined) return false;
    const activation = entry.route.activation;
    if (activation === undefined || hasReadyReplica(entry)) return false;
    const outcome = activator.hold(endpoint, activation, this);
    if (!outcome.ok) {
      this.fail('KILN_ACTIVATOR_FULL', { endpoint, held: outcome.held });
      return true;
    }
    this.held = true;
    this.heldSinceMs = performance.now();
    if (this.holdsSlot) {
      this.holdsSlot = false;
      this.gate!.leave();
      this.slotOnRelease = true;
    }
    return true;
  }

  /** The activator releases the request: the endpoint has a ready replica now. */
  release(coldStart: ColdStart): void {
    this.unhold();
    this.coldStart = coldStart;
    if (this.done) return;
    if (this.slotOnRelease) {
      // Admitted before it was held: it takes its slot back even above the bound.
      this.slotOnRelease = false;
      this.gate!.enter();
      this.holdsSlot = true;
    }
    this.resumeAfterHold();
  }

  /** The activator fails the request (timed out, endpoint gone). */
  expire(code: ErrorCode, params: ErrorParams): void {
    this.unhold();
    if (!this.done) this.fail(code, params);
  }

  private unhold(): void {
    if (this.held) this.heldForMs += performance.now() - this.heldSinceMs;
    this.held = false;
  }

  /** Goes on after being held: picks a replica from the latest table. */
  protected resumeAfterHold(): void {
    this.send(null, null);
  }

  /** No replica to send to: none is ready, or `failure` put the last one out. */
  protected failNoReplica(endpoint: string, failure: Error | null): void {
    if (failure === null) {
      this.fail('KILN_NO_READY_REPLICA', { endpoint, reason: 'none is ready' });
    } else {
      this.fail('KILN_REPLICA_UNAVAILABLE', { endpoint, reason: failure.message });
    }
  }

  /**
   * The headers of `replica`'s answer for the client: the replica's own less those in
   * `skipped`, then the gateway's (`traceparent`: the one the client gets).
   */
  protected answerHeaders(
    headers: IncomingHttpHeaders,
    skipped: ReadonlySet<string>,
    traceparent: string,
    replica: ReplicaState,
  ): HeaderList {
    const list: HeaderList = [];
    for (const name in headers) {
      if (skipped.has(name)) continue;
      const value = headers[name];
      if (typeof value === 'string') list.push(name, value);
      else if (value !== undefined) for (const item of value) list.push(name, item);
    }
    list.push(
      'x-request-id',
      this.requestId,
      'traceparent',
      traceparent,
      'kiln-endpoint',
      this.entry!.name,
      'kiln-model-version',
      replica.versionText,
      'kiln-model',
      replica.model,
      'kiln-replica',
      replica.id,
    );
    return list;
  }

  /** Streams a chunk of the answer on; a full client socket pauses the upstream. */
  protected writeToClient(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (!this.res.write(chunk)) {
      // Backpressure: read no more of the replica's answer until the client drains.
      controller.pause();
      this.res.once('drain', onResponseDrain);
      this.stallTimer ??= setTimeout(clientStalled, this.settings.clientStallMs, this);
    }
  }

  onResponseError(_controller: Dispatcher.DispatchController | null, error: Error): void {
    if (this.attemptSpan !== null) {
      endWithError(this.attemptSpan, error);
      this.attemptSpan = null;
    }
    const replica = this.releaseReplica();
    if (this.done) return;
    const failure = classifyUpstreamError(error);
    const entry = this.entry!;
    entry.series.upstreamError(this.responseStarted ? 'response_aborted' : failure.reason);
    if (failure.connectionLost && replica !== null) this.eject(replica, error);
    if (this.responseStarted) {
      if (!this.dropHeldResponse()) {
        // Too late for another status: cut the response so the client sees it incomplete.
        this.res.destroy(error);
        this.finish(this.status);
        return;
      }
      // Nothing sent yet, so a clean 503; no retry, as the worker did start to answer.
    } else if (failure.timedOut) {
      const params = { endpoint: entry.name, timeoutMs: this.upstreamTimeoutMs() };
      this.fail('KILN_UPSTREAM_TIMEOUT', params);
      return;
    } else if (failure.connectionLost && replica !== null && !this.retried) {
      // The worker never saw the request: once more, elsewhere (not from inside undici's
      // error callback: on the next tick).
      this.retried = true;
      process.nextTick(sendAgain, this, replica, error);
      return;
    }
    this.fail('KILN_REPLICA_UNAVAILABLE', { endpoint: entry.name, reason: error.message });
  }

  private eject(replica: ReplicaState, error: Error): void {
    replica.ejectedUntilMs = performance.now() + this.settings.ejectMs;
    this.settings.log.warn(
      { endpoint: this.entry?.name, replica: replica.id, url: replica.url, error: error.message },
      'replica ejected after a connection failure',
    );
  }

  /** Entry for the retry tick (module-level `sendAgain` calls it). */
  retry(failed: ReplicaState, failure: Error): void {
    this.send(failed, failure);
  }

  // --- client side ----------------------------------------------------------------------

  onClientClose(): void {
    if (this.done) return;
    // The client went away before its answer (499, nginx's "client closed request").
    // Finish first: aborting calls onResponseError at once, which must find us done.
    this.finish(499);
    this.abortUpstream();
  }

  /** Stops the attempt in flight, the client being gone. */
  protected abortUpstream(): void {
    this.controller?.abort(new Error('the client went away'));
  }

  onClientDrain(): void {
    this.clearStallTimer();
    this.controller?.resume();
  }

  onRequestClose(): void {
    if (!this.req.complete) this.onClientClose();
  }

  /** The client has not read the answer for clientStallMs: cut it (its close ends us). */
  cutStalledClient(): void {
    this.stallTimer = null;
    if (!this.done) this.res.destroy();
  }

  private clearStallTimer(): void {
    if (this.stallTimer !== null) clearTimeout(this.stallTimer);
    this.stallTimer = null;
  }

  // --- endings --------------------------------------------------------------------------

  protected releaseReplica(): ReplicaState | null {
    const attempt = this.attemptSpan;
    if (attempt !== null) {
      this.attemptSpan = null;
      attempt.end();
    }
    const replica = this.replica;
    if (replica !== null) {
      replica.outstanding -= 1;
      this.replica = null;
    }
    return replica;
  }

  protected finish(status: number): void {
    if (this.done) return;
    this.done = true;
    this.clearStallTimer();
    if (this.holdsSlot) {
      this.holdsSlot = false;
      this.gate!.leave();
    }
    if (this.held) {
      this.unhold();
      this.settings.activator?.leave(this);
    }
    const elapsedMs = performance.now() - this.startMs;
    const series = this.series;
    if (series !== null) {
      if (this.countedInflight) series.inflight.dec();
      series.record(status, elapsedMs / 1000);
    }
    // The demand rows' latency is the endpoint's service time (the simulator's, `kiln
    // simulate --endpoint`): a wait for a replica to wake is a cold start, not service.
    this.load?.complete(status, elapsedMs - this.heldForMs);
    this.coldStart?.answered(status);
    if (this.span !== null) this.endSpan(this.span, status);
  }

  /** Ends the request's span (traced requests), once, at finish. */
  protected endSpan(span: Span, status: number): void {
    this.span = null;
    const attempt = this.attemptSpan;
    if (attempt !== null) {
      this.attemptSpan = null;
      endWithError(attempt, new Error('the request ended before its answer'));
    }
    endRequestSpan(span, status, this.entry, this.answeringReplica());
  }

  /** The replica whose answer the client got, for the span (null: the gateway answered). */
  protected answeringReplica(): ReplicaState | null {
    return null;
  }
}

function clientStalled(exchange: UpstreamExchange<UpstreamSettings>): void {
  exchange.cutStalledClient();
}

function sendAgain(
  exchange: UpstreamExchange<UpstreamSettings>,
  failed: ReplicaState,
  failure: Error,
): void {
  exchange.retry(failed, failure);
}
