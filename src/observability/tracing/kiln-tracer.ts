// The spans Kiln records for one request, on an OpenTelemetry tracer that start-tracing.ts
// set up (or a test's). Only @opentelemetry/api is imported here: the SDK is loaded by
// start-tracing.ts, and only when tracing is on.
//
// Whether a request is traced is decided before any span exists (`shouldTrace`), so an
// unsampled request costs one random number and allocates nothing; every span this class
// starts is recorded (the provider's sampler is always-on), and its children follow it:
//
//   gateway  kiln.gateway (SERVER) ─ kiln.channel (CLIENT, one per attempt)
//                                         │ traceparent (channel frame meta or HTTP header)
//   worker   kiln.worker (SERVER) ─ kiln.queue ─ kiln.batch ─ kiln.runtime ─ kiln.encode
//
// The worker records only when the traceparent it receives carries the sampled flag.

import {
  ROOT_CONTEXT,
  SpanKind,
  TraceFlags,
  createTraceState,
  trace,
  type Attributes,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import { formatTraceparent, parseTraceparent, type ParentContext } from './traceparent.ts';

export { SpanKind, type Span };

/** Head sampling: a sampled caller is followed; otherwise the endpoint's rate decides. */
export function shouldTrace(
  caller: ParentContext | null,
  sampleRate: number,
  random: () => number = Math.random,
): boolean {
  if (caller?.sampled === true) return true;
  return sampleRate > 0 && random() < sampleRate;
}

export class KilnTracer {
  constructor(private readonly tracer: Tracer) {}

  /**
   * Starts a request's first span in this process, the child of the caller's span when the
   * caller sent a valid `traceparent` (same trace id), else the root of a new trace.
   */
  startRequest(
    name: string,
    kind: SpanKind,
    caller: ParentContext | null,
    tracestate: string | undefined,
    attributes?: Attributes,
  ): Span {
    let parent = ROOT_CONTEXT;
    if (caller !== null) {
      parent = trace.setSpanContext(ROOT_CONTEXT, {
        traceId: caller.traceId,
        spanId: caller.spanId,
        // The decision to record was ours (shouldTrace): the children carry it on.
        traceFlags: TraceFlags.SAMPLED,
        isRemote: true,
        ...(tracestate === undefined || tracestate === ''
          ? {}
          : { traceState: createTraceState(tracestate) }),
      });
    }
    return this.tracer.startSpan(
      name,
      attributes === undefined ? { kind } : { kind, attributes },
      parent,
    );
  }

  /**
   * The worker's side: a span continuing the trace in `traceparent` when it carries the
   * sampled flag, else null (nothing is recorded for the request).
   */
  continueSampled(
    name: string,
    traceparent: string | string[] | undefined,
    tracestate: string | string[] | undefined,
    attributes?: Attributes,
  ): Span | null {
    const caller = parseTraceparent(traceparent);
    if (caller === null || !caller.sampled) return null;
    return this.startRequest(
      name,
      SpanKind.SERVER,
      caller,
      typeof tracestate === 'string' ? tracestate : undefined,
      attributes,
    );
  }

  /** A child of `parent`; `startTime`/`attributes` as OpenTelemetry takes them. */
  child(
    parent: Span,
    name: string,
    kind: SpanKind = SpanKind.INTERNAL,
    startTime?: number,
    attributes?: Attributes,
  ): Span {
    const options: { kind: SpanKind; startTime?: number; attributes?: Attributes } = { kind };
    if (startTime !== undefined) options.startTime = startTime;
    if (attributes !== undefined) options.attributes = attributes;
    return this.tracer.startSpan(name, options, trace.setSpan(ROOT_CONTEXT, parent));
  }
}

/** The `traceparent` naming `span` as the parent (what the next hop receives). */
export function traceparentOf(span: Span): string {
  const context = span.spanContext();
  return formatTraceparent(
    context.traceId,
    context.spanId,
    (context.traceFlags & 1) === 1, // TraceFlags.SAMPLED
  );
}

/** The `tracestate` to pass on with `span`'s traceparent (undefined: none). */
export function tracestateOf(span: Span): string | undefined {
  const state = span.spanContext().traceState?.serialize();
  return state === undefined || state === '' ? undefined : state;
}

/** Now, as OpenTelemetry takes a time in milliseconds since the epoch. */
export function epochMs(monotonicMs: number = performance.now()): number {
  return performance.timeOrigin + monotonicMs;
}
