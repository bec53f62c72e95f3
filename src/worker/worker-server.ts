// The worker's HTTP server: Open Inference Protocol v2 for its one model, on loopback.
// Plain node:http — the worker sits on every request's path, and its routes are few.
//
// Request lifecycle: route → (infer) read body within the limit → lenient JSON parse →
// decode + check against the compiled schema → deadline + priority (infer-controls.ts) →
// runtime.infer, or, with batching on, the dynamic batcher (batching/) → encode → respond.
// Errors are v2 error bodies: {"error": "<message>", "code": "KILN_…"}.
// A request counts in `state.inflight` from arrival to response, queued time included, so a
// draining worker waits for everything it accepted.

import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { Socket } from 'node:net';
import { errorRegistry, kilnError, type KilnError } from '../core/errors.ts';
import { kilnVersion } from '../core/version.ts';
import type { InferOutcome, ModelRuntime } from '../runtimes/runtime.ts';
import { parseInferRequest, type DecodedInferRequest } from '../protocol/v2/decode-request.ts';
import { encodeInferResponse } from '../protocol/v2/encode-response.ts';
import type { CompiledSchema } from '../protocol/v2/schema.ts';
import type { FeatureColumnLayout } from './feature-columns.ts';
import { monotonicClock } from './batching/batch-timers.ts';
import { batchShape } from './batching/batch-tensors.ts';
import type { BatcherClock, CancelSignal } from './batching/dynamic-batcher.ts';
import type { InferBatcher } from './batching/infer-batcher.ts';
import { readInferControls } from './infer-controls.ts';
import { readRequestBody } from './read-request-body.ts';
import type { LlmService } from './llm/llm-service.ts';
import { handleOpenAiRoute, isOpenAiPath } from './llm/openai-routes.ts';
import type { WorkerMetrics } from './worker-metrics.ts';
import { workerLoadSampler } from './worker-load.ts';
import { workerLoadPath } from '../protocol/scaling/worker-load-report.ts';
import { acceptChannel } from './worker-channel.ts';
import { ServingSketches } from './drift/serving-sketches.ts';
import { driftHeader, sketchesPath } from '../protocol/drift/sketch-report.ts';
import { SLICE_HEADER } from '../protocol/traffic/traffic-report.ts';
import type { WorkerSpec } from './worker-spec.ts';
import type { KilnTracer } from '../observability/tracing/kiln-tracer.ts';
import { isSampledTraceparent } from '../observability/tracing/traceparent.ts';
import { WorkerTrace } from './worker-trace.ts';

export type WorkerPhase = 'loading' | 'ready' | 'failed' | 'draining';

/** What the server reads on each request; the loader fills it in. */
export interface WorkerState {
  phase: WorkerPhase;
  reason: string | null;
  runtime: ModelRuntime | null;
  schema: CompiledSchema | null;
  /** Queued + running + being read/written infer requests. */
  inflight: number;
  /** Set with the runtime when the spec turns batching on. */
  batcher: InferBatcher | null;
  /** A tree model declared one input per feature: requests' columns are joined into rows. */
  columns?: FeatureColumnLayout | null;
  /** An hf-llm worker's engine and tokenizer (its OpenAI routes), once loaded. */
  llm?: LlmService | null;
}

const jsonHeaders = { 'content-type': 'application/json' } as const;

function send(
  response: ServerResponse,
  status: number,
  body: string,
  headers: Record<string, string> = {},
): void {
  response.writeHead(status, {
    ...jsonHeaders,
    ...headers,
    'content-length': Buffer.byteLength(body),
  });
  response.end(body);
}

function sendError(
  response: ServerResponse,
  error: KilnError,
  headers: Record<string, string> = {},
): void {
  const extra: Record<string, string> = { ...headers };
  if (error.retryable && (error.status === 503 || error.status === 429)) extra['retry-after'] = '1';
  send(response, error.status, JSON.stringify({ error: error.message, code: error.code }), extra);
}

/**
 * The batcher's cancellation signal for one request: what it needs of an AbortSignal (one
 * listener, `aborted`) without an EventTarget's cost on every request.
 */
class CancelFlag implements CancelSignal {
  aborted = false;
  private listener: (() => void) | null = null;
  addEventListener(_type: 'abort', listener: () => void): void {
    this.listener = listener;
  }
  removeEventListener(_type: 'abort', listener: () => void): void {
    if (this.listener === listener) this.listener = null;
  }
  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    const listener = this.listener;
    this.listener = null;
    listener?.();
  }
}

/** What an infer request comes to, whichever way it arrived. */
export interface WorkerReply {
  readonly status: number;
  /** The v2 JSON body ('' for 499: nobody is listening). */
  readonly body: string;
  readonly retryAfter: string | null;
}

/** Registers `abort` to run if the requester goes away; returns the undo. */
export type CancelWatch = (abort: () => void) => () => void;

function sendReply(
  response: ServerResponse,
  reply: WorkerReply,
  echo: Record<string, string>,
): void {
  const headers = reply.retryAfter === null ? echo : { ...echo, 'retry-after': reply.retryAfter };
  send(response, reply.status, reply.body, headers);
}

function errorReply(error: KilnError): WorkerReply {
  const retryAfter = error.retryable && (error.status === 503 || error.status === 429) ? '1' : null;
  return {
    status: error.status,
    body: JSON.stringify({ error: error.message, code: error.code }),
    retryAfter,
  };
}

/** A body announced larger than `limit` is refused (413) before it is read: true if so. */
function refuseAnnouncedBody(
  request: IncomingMessage,
  response: ServerResponse,
  limit: number,
): boolean {
  const announced = Number(request.headers['content-length'] ?? Number.NaN);
  if (!(announced > limit)) return false;
  sendError(response, kilnError('KILN_PAYLOAD_TOO_LARGE', { size: announced, limit }), {
    connection: 'close',
  });
  request.resume();
  return true;
}

/** Parses `/v2/models/{m}[/versions/{v}][/ready|/infer]`. */
function parseModelPath(
  path: string,
): { model: string; version: string | null; action: 'metadata' | 'ready' | 'infer' } | null {
  const match = /^\/v2\/models\/([^/]+)(?:\/versions\/([^/]+))?(?:\/(ready|infer))?$/.exec(path);
  if (match === null) return null;
  const action = (match[3] ?? 'metadata') as 'metadata' | 'ready' | 'infer';
  let model: string;
  try {
    model = decodeURIComponent(match[1] ?? '');
  } catch {
    return null; // a malformed %-escape names no model: 404, not a 500
  }
  return { model, version: match[2] ?? null, action };
}

/** How an HTTP infer request reaches runInfer: accepted, and counted by infer() itself. */
const acceptedAndCounted = { accepted: true, counted: true } as const;

export function createWorkerServer(
  spec: WorkerSpec,
  state: WorkerState,
  metrics: WorkerMetrics,
  clock: BatcherClock = monotonicClock,
  /** Records the spans of requests whose trace context is sampled; null: tracing off. */
  tracer: KilnTracer | null = null,
): Server {
  const version = String(spec.version);
  const series = { endpoint: spec.endpoint, version };
  // Metric series bound once: the hot path then hashes no label sets per request.
  const inflightGauge = metrics.inflight.labels({ endpoint: spec.endpoint });
  const durationSeconds = metrics.duration.labels(series);
  const executions = metrics.executions.labels(series);
  const batchSize = metrics.batchSize.labels(series);
  const queueWait = metrics.queueWait.labels(series);
  const shed = metrics.shed.labels(series);
  const expiredCount = metrics.expired.labels(series);
  const requestsByStatus = new Map<number, { inc(): void }>();
  const countRequest = (status: number): void => {
    let counter = requestsByStatus.get(status);
    if (counter === undefined) {
      counter = metrics.requests.labels({ ...series, code: String(status) });
      requestsByStatus.set(status, counter);
    }
    counter.inc();
  };

  // The worker's load for the autoscaler (GET /kiln/v1/load), sampled while it listens.
  const load = workerLoadSampler(spec, state);
  // Sketches of the inputs and outputs of requests the gateway marks for drift (issue 15),
  // taken by the control plane at GET /kiln/v1/sketches.
  const sketches = new ServingSketches(
    {
      replicaId: spec.replicaId,
      endpoint: spec.endpoint,
      model: spec.model,
      version: spec.version,
    },
    () => ({ featureNames: state.runtime?.featureNames ?? null }),
  );

  function notReady(): KilnError {
    return kilnError('KILN_MODEL_NOT_READY', {
      model: spec.endpoint,
      reason: state.phase === 'failed' ? (state.reason ?? 'load failed') : state.phase,
    });
  }

  function metadata(): string {
    const runtime = state.runtime;
    const schema = spec.schema;
    return JSON.stringify({
      name: spec.endpoint,
      versions: [version],
      platform: runtime?.name ?? spec.format,
      inputs: schema?.inputs ?? runtime?.inputs ?? [],
      outputs: schema?.outputs ?? runtime?.outputs ?? [],
    });
  }

  /**
   * One infer request, from its body (or, from the channel, its decoded tensors) to its
   * answer; the HTTP route and the gateway's channel (worker-channel.ts) both call it.
   * `watch` registers what to do if the requester goes away while the request waits in the
   * batcher, and returns the undo.
   */
  async function runInfer(
    input: Buffer | DecodedInferRequest,
    headers: IncomingHttpHeaders,
    watch: CancelWatch | null,
    how: {
      /** Taken in while the worker was ready: it runs even if a drain began since. */
      readonly accepted?: boolean;
      /** The caller counts it in state.inflight already (until its answer has left). */
      readonly counted?: boolean;
    } = {},
  ): Promise<WorkerReply> {
    const started = process.hrtime.bigint();
    const arrivalMicros = clock.nowMicros();
    if (how.counted !== true) state.inflight += 1;
    inflightGauge.inc();
    let status = 200;
    // Only a request the gateway traces (sampled flag) is recorded here too.
    const trace =
      tracer !== null && isSampledTraceparent(headers.traceparent)
        ? WorkerTrace.start(tracer, spec, headers, clock)
        : null;
    const fail = (error: KilnError): WorkerReply => {
      status = error.status;
      return errorReply(error);
    };
    try {
      const runtime = state.runtime;
      const admitted =
        state.phase === 'ready' || (how.accepted === true && state.phase === 'draining');
      if (!admitted || runtime === null) return fail(notReady());
      // The same checks the gateway ran, now decoding into typed arrays (exact INT64 too).
      // A request that came as tensors on the channel was decoded and checked by the gateway.
      const decoded = Buffer.isBuffer(input)
        ? parseInferRequest(input, state.schema)
        : { ok: true as const, request: input };
      if (!decoded.ok) {
        status = 400;
        // The codec's message is already a full sentence: send it as is, like the gateway.
        return {
          status: errorRegistry[decoded.code].status,
          body: JSON.stringify({ error: decoded.message, code: decoded.code }),
          retryAfter: null,
        };
      }
      // Declared feature columns become the runtime's rows (feature-columns.ts).
      const request = state.columns?.join(decoded.request) ?? decoded.request;
      const controls = readInferControls(headers, request, spec.defaultTimeoutMs);
      if (!controls.ok)
        return fail(kilnError('KILN_INVALID_INFER_REQUEST', { reason: controls.message }));
      const deadlineMicros =
        controls.timeoutMs === null ? null : arrivalMicros + controls.timeoutMs * 1000;
      const expired = (): WorkerReply => {
        expiredCount.inc();
        return fail(kilnError('KILN_DEADLINE_EXCEEDED', { timeoutMs: controls.timeoutMs ?? 0 }));
      };
      let outcome: InferOutcome;
      const batcher = state.batcher;
      const rows = decoded.request.inputs[0]?.shape[0] ?? 1;
      // With a batcher whose model is free, nothing waiting and no gathering, the request
      // runs here too: the batch it would form is itself (runNow).
      const release = batcher?.runNow(rows) ?? null;
      if (batcher === null || release !== null) {
        // No queue here, but reading the body took time: a request already late is not run.
        if (deadlineMicros !== null && clock.nowMicros() >= deadlineMicros) {
          release?.('skipped');
          return expired();
        }
        if (release !== null) queueWait.observe(0);
        executions.inc();
        batchSize.observe(rows);
        const running = trace?.runtime(runtime.name, rows);
        let ran: 'ran' | 'failed' = 'failed';
        try {
          outcome = await runtime.infer(controls.request);
          ran = 'ran';
        } finally {
          release?.(ran);
        }
        running?.end();
      } else {
        const shape = batchShape(controls.request);
        const enqueuedMicros = trace === null ? 0 : clock.nowMicros();
        const gone = watch === null ? null : new CancelFlag();
        const unwatch = gone === null ? null : watch!(() => gone.abort());
        const queued = batcher.enqueue({
          key: shape?.key ?? 'alone',
          rows: shape?.rows ?? 1,
          alone: shape === null,
          priority: controls.priority,
          deadlineMicros,
          payload: controls.request,
          ...(gone === null ? {} : { signal: gone }),
        });
        if (!queued.ok) {
          unwatch?.();
          shed.inc();
          return fail(
            kilnError('KILN_QUEUE_FULL', { model: spec.endpoint, queued: batcher.depth }),
          );
        }
        const settled = await queued.done;
        unwatch?.();
        switch (settled.kind) {
          case 'done':
            queueWait.observe(settled.queuedMicros / 1e6);
            trace?.batched(enqueuedMicros, settled.batch, runtime.name, shape?.rows ?? 1);
            outcome = settled.value;
            break;
          case 'expired':
            return expired();
          case 'cancelled':
            status = 499; // the requester went away; nothing to answer
            return { status, body: '', retryAfter: null };
          case 'failed':
            // The executor threw (a runtime bug): the whole batch fails, like one request would.
            throw settled.error instanceof Error ? settled.error : new Error(String(settled.error));
        }
      }
      if (!outcome.ok) {
        return fail(
          outcome.kind === 'invalid_input'
            ? kilnError('KILN_INVALID_INFER_REQUEST', { reason: outcome.message })
            : kilnError('KILN_INFERENCE_FAILED', { reason: outcome.message }),
        );
      }
      const meta =
        decoded.request.id === undefined
          ? { modelName: spec.endpoint, modelVersion: version }
          : { modelName: spec.endpoint, modelVersion: version, id: decoded.request.id };
      if (headers[driftHeader] === '1') {
        const slice = headers[SLICE_HEADER];
        sketches.record(
          typeof slice === 'string' ? slice : null,
          decoded.request.inputs,
          outcome.outputs,
        );
      }
      const encoding = trace?.encode();
      const body = encodeInferResponse(outcome, meta);
      encoding?.end();
      return { status: 200, body, retryAfter: null };
    } catch (error) {
      process.stderr.write(
        `worker ${spec.replicaId}: unexpected error: ${String((error as Error).stack ?? error)}\n`,
      );
      return fail(kilnError('KILN_INFERENCE_FAILED', { reason: 'unexpected error in the worker' }));
    } finally {
      if (how.counted !== true) state.inflight -= 1;
      inflightGauge.dec();
      countRequest(status);
      durationSeconds.observe(Number(process.hrtime.bigint() - started) / 1e9);
      trace?.end(status);
    }
  }

  async function infer(
    request: IncomingMessage,
    response: ServerResponse,
    echo: Record<string, string>,
  ): Promise<void> {
    if (spec.format === 'hf-llm') {
      request.resume();
      return sendError(
        response,
        kilnError('KILN_INVALID_INFER_REQUEST', {
          reason: `${spec.endpoint} is a language model: use POST /v1/completions or /v1/chat/completions`,
        }),
        echo,
      );
    }
    if (state.phase !== 'ready') {
      request.resume();
      // Through runInfer all the same, so the refusal is counted like any answer.
      return sendReply(response, await runInfer(Buffer.alloc(0), request.headers, null), echo);
    }
    // Accepted: counted in flight from here until its answer has left (the response's
    // close), so a draining worker neither refuses it once its body is in nor closes the
    // connection while a large answer is still being written.
    state.inflight += 1;
    response.once('close', () => {
      state.inflight -= 1;
    });
    const limit = spec.maxBodyBytes;
    if (refuseAnnouncedBody(request, response, limit)) return;
    const body = await readRequestBody(request, limit);
    if (typeof body === 'string') {
      // Over the limit while arriving: 413. Unreadable: the client is gone, no one to answer.
      if (body === 'too_large') {
        const params = { size: `more than ${limit}`, limit };
        sendError(response, kilnError('KILN_PAYLOAD_TOO_LARGE', params), { connection: 'close' });
      }
      return;
    }
    const reply = await runInfer(
      body,
      request.headers,
      (abort) => {
        const onClose = (): void => {
          if (!response.writableFinished) abort();
        };
        response.once('close', onClose);
        return () => response.off('close', onClose);
      },
      acceptedAndCounted,
    );
    if (reply.status !== 499) sendReply(response, reply, echo);
  }

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const path = (request.url ?? '/').split('?')[0] ?? '/';
    const echo: Record<string, string> = {
      'kiln-model-version': version,
      'kiln-replica': spec.replicaId,
    };
    const requestId = request.headers['x-request-id'];
    if (typeof requestId === 'string') echo['x-request-id'] = requestId;
    const traceparent = request.headers.traceparent;
    if (typeof traceparent === 'string') echo.traceparent = traceparent;

    if (request.method === 'GET' && path === '/v2/health/live')
      return send(response, 200, '{"live":true}');
    if (request.method === 'GET' && path === '/v2/health/ready') {
      return state.phase === 'ready'
        ? send(response, 200, '{"ready":true}')
        : sendError(response, notReady());
    }
    if (request.method === 'GET' && path === '/v2') {
      return send(
        response,
        200,
        JSON.stringify({ name: 'kiln-worker', version: kilnVersion, extensions: [] }),
      );
    }
    if (request.method === 'GET' && path === '/metrics') {
      if (state.llm != null) await state.llm.metrics.refresh(state.llm.engine);
      const text = await metrics.registry.metrics();
      response.writeHead(200, { 'content-type': metrics.registry.contentType });
      response.end(text);
      return;
    }
    // Any phase: a draining worker's queue is load all the same (an LLM's is its own route).
    if (request.method === 'GET' && path === workerLoadPath && spec.format !== 'hf-llm')
      return send(response, 200, JSON.stringify(load.report()));
    if (request.method === 'GET' && path === sketchesPath)
      return send(response, 200, JSON.stringify(sketches.take()));
    if (isOpenAiPath(path)) {
      return handleOpenAiRoute(
        request,
        response,
        path,
        {
          spec,
          service: state.llm ?? null,
          accepting: state.phase === 'ready',
          workerLoad: load.report,
          hold: (held) => {
            state.inflight += 1;
            held.once('close', () => {
              state.inflight -= 1;
            });
          },
        },
        echo,
      );
    }
    const route = parseModelPath(path);
    if (route === null || route.model !== spec.endpoint) {
      request.resume();
      return sendError(
        response,
        kilnError('KILN_ENDPOINT_NOT_FOUND', { endpoint: route?.model ?? path }),
        echo,
      );
    }
    if (route.version !== null && route.version !== version) {
      request.resume();
      return sendError(
        response,
        kilnError('KILN_VERSION_NOT_SERVED', {
          endpoint: spec.endpoint,
          served: version,
          version: route.version,
        }),
        echo,
      );
    }
    if (route.action === 'infer' && request.method === 'POST')
      return infer(request, response, echo);
    if (route.action === 'ready' && request.method === 'GET') {
      return state.phase === 'ready'
        ? send(response, 200, '{"ready":true}', echo)
        : sendError(response, notReady(), echo);
    }
    if (route.action === 'metadata' && request.method === 'GET')
      return send(response, 200, metadata(), echo);
    request.resume();
    return sendError(
      response,
      kilnError('KILN_ROUTE_NOT_FOUND', { method: request.method ?? '?', url: path }),
      echo,
    );
  }

  const server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      process.stderr.write(`worker ${spec.replicaId}: ${String(error)}\n`);
      if (!response.headersSent)
        send(response, 500, '{"error":"internal error","code":"KILN_INTERNAL"}');
    });
  });
  server.on('upgrade', (request: IncomingMessage, socket: Socket, head: Buffer) => {
    acceptChannel(
      server,
      request,
      socket,
      head,
      state.phase === 'ready',
      runInfer,
      spec.maxBodyBytes,
    );
  });
  server.keepAliveTimeout = 65_000;
  server.on('listening', load.start);
  server.on('close', load.stop);
  return server;
}
