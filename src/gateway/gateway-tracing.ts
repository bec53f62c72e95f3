// The gateway's spans (docs/tracing.md): one SERVER span per traced infer request, from the
// moment it passes the door to its last byte, and one CLIENT span per attempt to reach a
// replica (a retry after a lost connection is a second one), whose context the worker
// continues. Attribute names follow OpenTelemetry's HTTP semantic conventions where one fits
// (http.request.method, http.route, http.response.status_code, server.address,
// network.transport) and `kiln.*` otherwise. Spans exist only for traced requests, so
// nothing here runs for the others.

import { SpanStatusCode, type Span } from '@opentelemetry/api';
import { defaultTraceSampleRate } from '../observability/tracing/tracing-config.ts';
import { SpanKind, traceparentOf, type KilnTracer } from '../observability/tracing/kiln-tracer.ts';
import { isSampledTraceparent, parseTraceparent } from '../observability/tracing/traceparent.ts';
import type { GatewayRequest } from './http-types.ts';
import type { ReplicaState } from './replica-set.ts';
import type { EndpointEntry } from './route-table.ts';

/**
 * Head sampling for one infer request: its gateway span when traced, else null. An untraced
 * request (99 in 100 at a 1 % rate) gets no span, no parsed context and no object: one
 * random draw, and the traceparent it carries on is `requestTraceparent`'s.
 * `traceparent` is the one the request would carry without tracing (trace-context.ts: the
 * client's header itself when valid, else a new one).
 */
export function traceRequest(
  tracer: KilnTracer,
  req: GatewayRequest,
  entry: EndpointEntry,
  traceparent: string,
  /** The route as OpenTelemetry's `http.route` names it, e.g. `/v2/models/{model}/infer`. */
  route: string,
  requestId: string,
): Span | null {
  // shouldTrace's rule (a sampled caller is traced, else a draw at the rate), with the
  // caller's flag read from the header without parsing its ids.
  const fromCaller = traceparent === req.headers.traceparent;
  const rate = entry.route.tracing?.sampleRate ?? defaultTraceSampleRate;
  if (!(fromCaller && isSampledTraceparent(traceparent)) && !(rate > 0 && Math.random() < rate)) {
    return null;
  }
  const caller = fromCaller ? parseTraceparent(traceparent) : null;
  const tracestate = req.headers.tracestate;
  return tracer.startRequest(
    `POST ${route}`,
    SpanKind.SERVER,
    caller,
    typeof tracestate === 'string' ? tracestate : undefined,
    {
      'http.request.method': 'POST',
      'http.route': route,
      'url.path': (req.url ?? '').split('?')[0] ?? '',
      'kiln.endpoint': entry.name,
      'kiln.request_id': requestId,
    },
  );
}

/**
 * The `traceparent` a request forwards (and the client gets back) once sampled: its gateway
 * span's when traced (`span`). Not traced, it is not recorded here, so not by the worker
 * either: the trace the gateway started for a caller without a valid context is marked
 * unsampled; the caller's own goes on as it came.
 */
export function requestTraceparent(
  req: GatewayRequest,
  traceparent: string,
  span: Span | null,
): string {
  if (span !== null) return traceparentOf(span);
  if (traceparent === req.headers.traceparent) return traceparent;
  return `${traceparent.slice(0, 53)}00`;
}

/** A traced request's attempt on `replica` (the channel or an HTTP exchange). */
export function startAttemptSpan(
  tracer: KilnTracer,
  parent: Span,
  replica: ReplicaState,
  transport: 'channel' | 'http',
): Span {
  return tracer.child(parent, 'kiln.channel', SpanKind.CLIENT, undefined, {
    'kiln.replica': replica.id,
    'kiln.version': replica.versionText,
    'kiln.model': replica.model,
    'kiln.transport': transport === 'channel' ? (replica.channel?.transport ?? 'tcp') : 'http',
    'server.address': replica.url,
  });
}

/** Ends a span with the HTTP status of its answer (5xx marks it an error). */
export function endWithStatus(span: Span, status: number): void {
  span.setAttribute('http.response.status_code', status);
  if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
  span.end();
}

/** Ends an attempt that got no answer (lost connection, timeout, client gone). */
export function endWithError(span: Span, error: Error): void {
  span.setStatus({ code: SpanStatusCode.ERROR, message: error.message });
  const code = (error as { code?: unknown }).code;
  span.setAttribute('error.type', typeof code === 'string' ? code : error.name);
  span.end();
}

/** The server span's closing facts: which version and replica answered, and the status. */
export function endRequestSpan(
  span: Span,
  status: number,
  entry: EndpointEntry | null,
  answeredBy: ReplicaState | null,
): void {
  if (answeredBy !== null) {
    span.setAttribute('kiln.version', answeredBy.versionText);
    span.setAttribute('kiln.model', answeredBy.model);
    span.setAttribute('kiln.replica', answeredBy.id);
  } else if (entry !== null) {
    span.setAttribute('kiln.version', entry.versionText);
    span.setAttribute('kiln.model', entry.model);
  }
  endWithStatus(span, status);
}
