// Answers the gateway writes itself (errors, metadata, health), in the Open Inference
// Protocol's shapes. v2 error bodies are `{"error": "<message>", "code": "KILN_…"}`: the
// spec's shape plus our stable code. Retryable 503s carry `Retry-After: 1`.

import type { ServerResponse } from 'node:http';
import { errorRegistry, kilnError, type ErrorCode, type ErrorParams } from '../core/errors.ts';

const jsonType = 'application/json';

/** Flat `[name, value, name, value, …]` header list, as `writeHead` accepts it. */
export type HeaderList = string[];

export function sendJson(
  res: ServerResponse,
  status: number,
  body: string,
  headers: HeaderList | null = null,
): void {
  const list: HeaderList = ['content-type', jsonType, 'content-length', String(byteLength(body))];
  if (headers !== null) list.push(...headers);
  res.writeHead(status, list);
  res.end(body);
}

/** Sends the v2 error for `code`; returns the HTTP status it used. */
export function sendV2Error(
  res: ServerResponse,
  code: ErrorCode,
  params: ErrorParams,
  headers: HeaderList | null = null,
): number {
  return sendV2Message(res, code, kilnError(code, params).message, headers);
}

/** Like `sendV2Error`, with a message already rendered (e.g. the codec's own words). */
export function sendV2Message(
  res: ServerResponse,
  code: ErrorCode,
  message: string,
  headers: HeaderList | null = null,
): number {
  const spec = errorRegistry[code];
  const list: HeaderList = headers === null ? [] : headers;
  if (spec.status === 503 && spec.retryable) list.push('retry-after', '1');
  sendJson(res, spec.status, v2ErrorBody(code, message), list);
  return spec.status;
}

export function v2ErrorBody(code: string, message: string): string {
  return `{"error":${JSON.stringify(message)},"code":${JSON.stringify(code)}}`;
}

function byteLength(body: string): number {
  // Most bodies are ASCII; Buffer.byteLength is exact either way.
  return Buffer.byteLength(body);
}
