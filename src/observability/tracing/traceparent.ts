// W3C trace context headers (https://www.w3.org/TR/trace-context/) read and written without
// the OpenTelemetry SDK: what the gateway and the worker need to decide, per request, whether
// to record a trace before they spend anything on one. Pure.
//
//   traceparent  00-<32 hex trace-id>-<16 hex parent-id>-<2 hex flags>   (flags bit 0: sampled)

export interface ParentContext {
  readonly traceId: string;
  /** The caller's span (the parent of the span we start). */
  readonly spanId: string;
  readonly sampled: boolean;
}

const traceparentPattern = /^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;
const zeroTraceId = '00000000000000000000000000000000';
const zeroSpanId = '0000000000000000';

/** The caller's trace context, or null when the header is absent or malformed. */
export function parseTraceparent(value: string | string[] | undefined): ParentContext | null {
  if (typeof value !== 'string' || value.length !== 55 || !traceparentPattern.test(value)) {
    return null;
  }
  if (value.startsWith('ff')) return null;
  const traceId = value.slice(3, 35);
  const spanId = value.slice(36, 52);
  if (traceId === zeroTraceId || spanId === zeroSpanId) return null;
  return { traceId, spanId, sampled: (parseInt(value.slice(53, 55), 16) & 1) === 1 };
}

/** Whether the header carries the sampled flag (cheap: no parse of the ids). */
export function isSampledTraceparent(value: string | string[] | undefined): boolean {
  return (
    typeof value === 'string' && value.length === 55 && (parseInt(value.charAt(54), 16) & 1) === 1
  );
}

export function formatTraceparent(traceId: string, spanId: string, sampled: boolean): string {
  return `00-${traceId}-${spanId}-${sampled ? '01' : '00'}`;
}
