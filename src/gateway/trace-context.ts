// Request ids and W3C trace context (https://www.w3.org/TR/trace-context/). With tracing off
// (no `kiln up --otlp`) the gateway records no spans, so it passes a valid client
// `traceparent` through unchanged (a new parent-id would point at a span nobody exports) and
// starts a new trace when the client sent none or a malformed one. With tracing on, a traced
// request's `traceparent` names the gateway's own span instead (v2-routes.ts, kiln-tracer.ts),
// and an untraced one without a valid client header gets a new trace marked unsampled, so
// that the worker records nothing of it either.

import { randomFillSync, randomUUID } from 'node:crypto';

const traceparentPattern = /^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;
const zeroTraceId = '00000000000000000000000000000000';
const zeroParentId = '0000000000000000';
const maxRequestIdLength = 128;

/** The client's `x-request-id` when it is reasonable, else a new UUID. */
export function requestIdFrom(header: string | string[] | undefined): string {
  if (typeof header === 'string' && header.length > 0 && header.length <= maxRequestIdLength) {
    return header;
  }
  return randomUUID();
}

/** The client's `traceparent` when valid, else a new sampled trace. */
export function traceparentFrom(header: string | string[] | undefined): string {
  if (typeof header === 'string' && isValidTraceparent(header)) return header;
  return newTraceparent();
}

export function isValidTraceparent(value: string): boolean {
  return (
    traceparentPattern.test(value) &&
    !value.startsWith('ff') &&
    value.slice(3, 35) !== zeroTraceId &&
    value.slice(36, 52) !== zeroParentId
  );
}

// Random bytes come from a pool refilled in one syscall per 170 traces.
const poolBytes = 4080;
const pool = Buffer.allocUnsafe(poolBytes);
let poolOffset = poolBytes;

/** `00-<32 hex trace-id>-<16 hex parent-id>-01`. */
export function newTraceparent(): string {
  if (poolOffset + 24 > poolBytes) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  const traceId = pool.toString('hex', poolOffset, poolOffset + 16);
  const parentId = pool.toString('hex', poolOffset + 16, poolOffset + 24);
  poolOffset += 24;
  // An all-zero id is invalid; with 128 random bits this never happens in practice.
  return `00-${traceId}-${parentId}-01`;
}
