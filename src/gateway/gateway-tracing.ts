// The gateway's spans (docs/tracing.md): one SERVER span per traced infer request, from the
// moment it passes the door to its last byte, and one CLIENT span per attempt to reach a
// replica (a retry after a lost connection is a second one), whose context the worker
// continues. Attribute names follow OpenTelemetry's HTTP semantic conventions where one fits
// (http.request.method, http.route, http.response.status_code, server.address,
// network.transport) and `kiln.*` otherwise. Spans exist only for traced requests, so
// nothing here runs for the others.

import { SpanStatusCode, type Span } from '@opentelemetry/api';
import { defaultTraceSampleRate } from '../observability/tracing/tracing-config.ts';
import {
  shouldTrace,
  SpanKind,
  traceparentOf,
  type KilnTracer,
} from '../observability/tracing/kiln-tracer.ts';
import { parseTraceparent } from '../observability/tracing/traceparent.ts';
import type { GatewayRequest } from './http-types.ts';
import type { ReplicaState } from './replica-set.ts';
import type { EndpointEntry } from './route-table.ts';

/** What a request forwards as its trace context: the span that records it, if traced. */
export interface RequestTrace {
  readonly span: Span | null;
  /** The `traceparent` the client gets back (and the worker, when no attempt span). */
  readonly traceparent: string;
}

/**
 * Head sampling for one infer request, and its gateway span when traced. `traceparent` is the
 * one the request would carry without tracing (the client's, else a new one).
 */
export function traceRequest(
  tracer: KilnTracer,
  req: GatewayRequest,
  entry: EndpointEntry,
  traceparent: string,
  /** The route as OpenTelemetry's `http.route` names it, e.g. `/v2/models/{model}/infer`. */
  route: string,
  requestId: string,
): RequestTrace {
  const caller = parseTraceparent(req.headers.traceparent);
  const rate = entry.route.tracing?.sampleRate ?? defaultTraceSampleRate;
  if (!shouldTrace(caller, rate)) {
    // Not recorded here, so not by the worker either: the trace the gateway started for a
    // caller without a valid context (`traceparent`, new) is marked unsampled; the caller's
    // own goes on as it came.
    if (caller !== null) return { span: null, traceparent };
    return { span: null, traceparent: `${traceparent.slice(0, 53)}00` };
  }
  const tracestate = req.headers.tracestate;
  const span = tracer.startRequest(
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
  return { span, traceparent: traceparentOf(span) };
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
