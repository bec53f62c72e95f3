// The CLI's way to the data plane, for `kiln predict`:
//
//   POST {gateway}/v2/models/{endpoint}[/versions/{n}]/infer   (request bytes sent untouched)
//
// The request body is never parsed or re-serialized: a v2 request may carry NaN tokens that
// JSON.parse rejects but the gateway accepts. Gateway errors come in the v2 shape
// `{"error": "<message>", "code": "KILN_…"}` (a string, unlike the control plane's object)
// and become CliErrors with that code, so they print as the usual one line.

import { Agent, request } from 'undici';
import type { V2InferResponse } from './api-types.ts';
import { CliError } from './errors.ts';
import { unreachableError } from './http-client.ts';

export interface InferCall {
  /** Base URL of the gateway, without a trailing slash. */
  readonly gatewayUrl: string;
  readonly endpoint: string;
  /** Ask for this model version (404 KILN_VERSION_NOT_SERVED if the endpoint serves another). */
  readonly version?: number | undefined;
  /** The v2 infer request, exactly as read from the file. */
  readonly body: Uint8Array;
  readonly apiKey?: string | undefined;
}

export interface InferReply {
  readonly status: number;
  /** The gateway's `x-request-id` header (null if it sent none). */
  readonly requestId: string | null;
  /** The response body as received. */
  readonly text: string;
  readonly response: V2InferResponse;
}

/** `/v2/models/{endpoint}/infer` or `/v2/models/{endpoint}/versions/{n}/infer`, encoded. */
export function inferPath(endpoint: string, version?: number): string {
  const model = `/v2/models/${encodeURIComponent(endpoint)}`;
  return version === undefined ? `${model}/infer` : `${model}/versions/${version}/infer`;
}

export async function postInfer(call: InferCall): Promise<InferReply> {
  const path = inferPath(call.endpoint, call.version);
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json',
  };
  if (call.apiKey !== undefined) headers.authorization = `Bearer ${call.apiKey}`;
  // Our own dispatcher, closed when the call ends, so no keep-alive socket holds the process.
  const agent = new Agent({ connect: { timeout: 10_000 } });
  try {
    let status: number;
    let text: string;
    let requestId: string | null;
    try {
      const response = await request(call.gatewayUrl + path, {
        method: 'POST',
        dispatcher: agent,
        headers,
        body: call.body,
      });
      status = response.statusCode;
      requestId = headerText(response.headers['x-request-id']);
      text = await response.body.text();
    } catch (error) {
      throw unreachableError(
        error,
        `the Kiln gateway at ${call.gatewayUrl}`,
        'check --gateway / KILN_GATEWAY_URL, or that `kiln up` is running',
      );
    }
    const parsed = parseLenientJson(text);
    if (status >= 400) {
      throw gatewayError(status, parsed, {
        path,
        endpoint: call.endpoint,
        hasKey: call.apiKey !== undefined,
      });
    }
    if (!isInferResponse(parsed)) {
      throw new CliError(
        'KILN_BAD_RESPONSE',
        `POST ${path} answered HTTP ${status} without a v2 infer response`,
        { status, hint: 'is --gateway pointing at a Kiln gateway?' },
      );
    }
    return { status, requestId, text, response: parsed };
  } finally {
    await agent.close();
  }
}

function headerText(value: string | string[] | undefined): string | null {
  if (Array.isArray(value)) return value[0] ?? null;
  return value ?? null;
}

function isInferResponse(value: unknown): value is V2InferResponse {
  return (
    typeof value === 'object' &&
    value !== null &&
    Array.isArray((value as { outputs?: unknown }).outputs)
  );
}

export interface GatewayErrorContext {
  readonly path: string;
  readonly endpoint: string;
  /** Whether the request carried an API key (changes the 401 hint). */
  readonly hasKey: boolean;
}

/**
 * A gateway error response → CliError. Understands the v2 shape `{"error": "msg", "code"}`
 * and, in case a control-plane style body comes back, `{"error": {"code", "message", "hint"}}`.
 * Anything else is KILN_BAD_RESPONSE.
 */
export function gatewayError(
  status: number,
  body: unknown,
  context: GatewayErrorContext,
): CliError {
  const { code, message, hint } = errorFields(body);
  if (code !== undefined && message !== undefined) {
    return new CliError(code, message, {
      status,
      hint: gatewayHint(status, code, context) ?? hint,
    });
  }
  return new CliError('KILN_BAD_RESPONSE', `POST ${context.path} failed with HTTP ${status}`, {
    status,
    hint: gatewayHint(status, undefined, context) ?? 'is --gateway pointing at a Kiln gateway?',
  });
}

function errorFields(body: unknown): { code?: string; message?: string; hint?: string } {
  if (typeof body !== 'object' || body === null) return {};
  const { error, code } = body as { error?: unknown; code?: unknown };
  if (typeof error === 'string' && typeof code === 'string') return { code, message: error };
  if (typeof error === 'object' && error !== null) {
    const inner = error as { code?: unknown; message?: unknown; hint?: unknown };
    if (typeof inner.code === 'string' && typeof inner.message === 'string') {
      return {
        code: inner.code,
        message: inner.message,
        ...(typeof inner.hint === 'string' ? { hint: inner.hint } : {}),
      };
    }
  }
  return {};
}

/** What to do next, for the errors a `kiln predict` user can act on. */
function gatewayHint(
  status: number,
  code: string | undefined,
  { endpoint, hasKey }: GatewayErrorContext,
): string | undefined {
  const create = `\`kiln keys api create NAME --endpoint ${endpoint}\``;
  if (status === 401) {
    return hasKey
      ? `the key is unknown or revoked; create a new one with ${create}`
      : `pass an API key with --key or KILN_API_KEY; create one with ${create}`;
  }
  if (status === 403) {
    return `this key's team or endpoint does not cover ${endpoint}; create one with ${create}`;
  }
  return code === undefined ? undefined : codeHints[code]?.(endpoint);
}

const codeHints: Readonly<Record<string, (endpoint: string) => string>> = {
  KILN_ENDPOINT_NOT_FOUND: () =>
    'list endpoints with `kiln endpoints list`, or create one with `kiln deploy`',
  KILN_NO_READY_REPLICA: (endpoint) => `see why with \`kiln endpoints show ${endpoint}\``,
  KILN_MODEL_NOT_READY: (endpoint) => `see why with \`kiln endpoints show ${endpoint}\``,
  KILN_VERSION_NOT_SERVED: (endpoint) =>
    `drop --version, or deploy that version with \`kiln deploy MODEL:VERSION --endpoint ${endpoint}\``,
};

// JSON with the non-finite number tokens some v2 servers write (`NaN`, `Infinity`,
// `-Infinity`): each bare token outside a string is swapped for a marker string, parsed, and
// turned back into the number by a reviver. Strict JSON takes the fast path.
const nonFiniteMarkers: Readonly<Record<string, number>> = {
  '\u0000NaN': Number.NaN,
  '\u0000Infinity': Number.POSITIVE_INFINITY,
  '\u0000-Infinity': Number.NEGATIVE_INFINITY,
};

/** Parsed JSON (NaN / Infinity tokens allowed), or undefined when the text is not JSON. */
export function parseLenientJson(text: string): unknown {
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    // fall through: maybe non-finite tokens
  }
  const marked = markNonFinite(text);
  if (marked === text) return undefined;
  try {
    return JSON.parse(marked, (_key, value: unknown) =>
      typeof value === 'string' && value in nonFiniteMarkers ? nonFiniteMarkers[value] : value,
    );
  } catch {
    return undefined;
  }
}

function markNonFinite(text: string): string {
  let out = '';
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    if (inString) {
      out += char;
      if (char === '\\') out += text[++i] ?? '';
      else if (char === '"') inString = false;
      continue;
    }
    if (char === '"') {
      inString = true;
      out += char;
      continue;
    }
    const token = ['-Infinity', 'Infinity', 'NaN'].find((t) => text.startsWith(t, i));
    if (token !== undefined) {
      out += JSON.stringify(`\u0000${token}`);
      i += token.length - 1;
      continue;
    }
    out += char;
  }
  return out;
}
