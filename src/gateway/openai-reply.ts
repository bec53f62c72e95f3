// The gateway's own answers on the OpenAI routes, in OpenAI's error shape
// (src/protocol/openai/openai-error.ts), so OpenAI clients raise their usual errors
// (AuthenticationError, NotFoundError, RateLimitError, …). A Kiln error keeps its registry
// status and message; its OpenAI `code` is OpenAI's own name where one exists
// (`invalid_api_key`, `model_not_found`, `rate_limit_exceeded`), else the Kiln code in
// lower case without its prefix (`endpoint_busy`, `no_ready_replica`, `upstream_timeout`).

import type { ServerResponse } from 'node:http';
import { errorRegistry, kilnError, type ErrorCode, type ErrorParams } from '../core/errors.ts';
import { openAiError } from '../protocol/openai/openai-error.ts';
import { sendJson, type HeaderList } from './v2-reply.ts';

const openAiCodes: Partial<Record<ErrorCode, string>> = {
  KILN_UNAUTHENTICATED: 'invalid_api_key',
  KILN_ENDPOINT_NOT_FOUND: 'model_not_found',
  KILN_RATE_LIMITED: 'rate_limit_exceeded',
};

/** Sends an OpenAI-shaped error; returns the status. */
export function sendOpenAiError(
  res: ServerResponse,
  status: number,
  message: string,
  options: { readonly param?: string | null; readonly code?: string | null },
  headers: HeaderList | null = null,
): number {
  const error = openAiError(status, message, options);
  sendJson(res, status, JSON.stringify(error.body), headers);
  return status;
}

/** Sends a Kiln error in OpenAI's shape (retryable 503s with `Retry-After: 1`); returns the status. */
export function sendOpenAiKilnError(
  res: ServerResponse,
  code: ErrorCode,
  params: ErrorParams,
  headers: HeaderList | null = null,
  param: string | null = null,
): number {
  const spec = errorRegistry[code];
  const list: HeaderList = headers ?? [];
  if (spec.status === 503 && spec.retryable) list.push('retry-after', '1');
  const openAiCode = openAiCodes[code] ?? code.slice('KILN_'.length).toLowerCase();
  return sendOpenAiError(
    res,
    spec.status,
    kilnError(code, params).message,
    { code: openAiCode, param },
    list,
  );
}
