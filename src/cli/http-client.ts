// The CLI's only way to the platform: JSON over the control-plane HTTP API (docs/api.md).
// API errors (`{"error": {code, message, hint}}`) become CliErrors carrying the platform's
// code; a refused connection becomes one readable "cannot reach Kiln" line.

import { Readable } from 'node:stream';
import { Agent, request } from 'undici';
import { CliError } from './errors.ts';
import type { Page } from './api-types.ts';

export type Query = Readonly<Record<string, string | number | boolean | undefined>>;

type Method = 'GET' | 'HEAD' | 'POST' | 'PUT' | 'DELETE';

/** `segments` joined and percent-encoded under /api/v1, e.g. apiPath('models', name). */
export function apiPath(...segments: ReadonlyArray<string | number>): string {
  return `/api/v1/${segments.map((s) => encodeURIComponent(String(s))).join('/')}`;
}

export class KilnClient {
  readonly baseUrl: string;
  private readonly agent: Agent;
  private readonly authorization: Record<string, string>;

  /** `token`: the control-plane bearer token, sent with every call (none in --dev). */
  constructor(baseUrl: string, token?: string) {
    this.baseUrl = baseUrl;
    this.authorization = token === undefined ? {} : { authorization: `Bearer ${token}` };
    // Our own dispatcher, closed when the command ends, so no keep-alive socket holds the
    // process open after its output is written.
    // A server that accepts the connection and never answers fails the command in two
    // minutes (registration's format checks take seconds), not after undici's five.
    this.agent = new Agent({ connect: { timeout: 10_000 }, headersTimeout: 120_000 });
  }

  async get<T>(path: string, query?: Query): Promise<T> {
    return this.json<T>('GET', path, { query });
  }

  async post<T>(path: string, body?: unknown): Promise<T> {
    return this.json<T>('POST', path, { body: body ?? {} });
  }

  async put<T>(path: string, body: unknown): Promise<T> {
    return this.json<T>('PUT', path, { body });
  }

  async delete<T>(path: string): Promise<T> {
    return this.json<T>('DELETE', path, {});
  }

  /** Follows `nextPageToken` until the last page, or until `limit` items are collected. */
  async listAll<T>(path: string, query: Query = {}, limit?: number): Promise<Page<T>> {
    const items: T[] = [];
    let pageToken: string | undefined;
    for (;;) {
      const want = limit === undefined ? 500 : Math.min(500, limit - items.length);
      const page = await this.get<Page<T>>(path, { ...query, limit: want, pageToken });
      items.push(...page.items);
      if (page.nextPageToken === null || page.nextPageToken === undefined) {
        return { items, nextPageToken: null };
      }
      if (limit !== undefined && items.length >= limit) {
        return { items: items.slice(0, limit), nextPageToken: page.nextPageToken };
      }
      pageToken = page.nextPageToken;
    }
  }

  /** HEAD request; true for 200, false for 404, a CliError for anything else. */
  async exists(path: string): Promise<boolean> {
    return (await this.head(path)).exists;
  }

  /** HEAD request: whether it exists (200) or not (404), and the response headers. */
  async head(path: string): Promise<{ exists: boolean; headers: Record<string, unknown> }> {
    const response = await this.send('HEAD', path, {});
    await response.body.dump();
    const headers = response.headers as Record<string, unknown>;
    if (response.statusCode === 200) return { exists: true, headers };
    if (response.statusCode === 404) return { exists: false, headers };
    throw new CliError('KILN_BAD_RESPONSE', `HEAD ${path} answered HTTP ${response.statusCode}`, {
      status: response.statusCode,
    });
  }

  /** PUT of raw bytes, streamed from `body`, with a Content-Length of `size`. */
  async putStream<T>(
    path: string,
    body: Iterable<Uint8Array> | AsyncIterable<Uint8Array>,
    size: number,
  ): Promise<T> {
    const response = await this.send('PUT', path, {
      body: Readable.from(body, { objectMode: false }),
      headers: { 'content-type': 'application/octet-stream', 'content-length': String(size) },
    });
    return this.decode<T>('PUT', path, response);
  }

  async close(): Promise<void> {
    await this.agent.close();
  }

  private async json<T>(
    method: Method,
    path: string,
    options: { query?: Query | undefined; body?: unknown },
  ): Promise<T> {
    const hasBody = options.body !== undefined;
    const response = await this.send(method, path, {
      query: options.query,
      ...(hasBody
        ? { body: JSON.stringify(options.body), headers: { 'content-type': 'application/json' } }
        : {}),
    });
    return this.decode<T>(method, path, response);
  }

  private async send(
    method: Method,
    path: string,
    options: {
      query?: Query | undefined;
      body?: string | Readable;
      headers?: Record<string, string>;
    },
  ): Promise<Awaited<ReturnType<typeof request>>> {
    const url = new URL(this.baseUrl + path);
    for (const [key, value] of Object.entries(options.query ?? {})) {
      if (value !== undefined) url.searchParams.set(key, String(value));
    }
    try {
      return await request(url, {
        method,
        dispatcher: this.agent,
        headers: { accept: 'application/json', ...this.authorization, ...options.headers },
        ...(options.body === undefined ? {} : { body: options.body }),
      });
    } catch (error) {
      throw connectionError(this.baseUrl, error);
    }
  }

  private async decode<T>(
    method: Method,
    path: string,
    response: Awaited<ReturnType<typeof request>>,
  ): Promise<T> {
    let text: string;
    try {
      text = await response.body.text();
    } catch (error) {
      throw connectionError(this.baseUrl, error);
    }
    let parsed: unknown;
    try {
      parsed = text === '' ? undefined : JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    if (response.statusCode >= 400) throw apiError(method, path, response.statusCode, parsed);
    if (parsed === undefined) {
      throw new CliError(
        'KILN_BAD_RESPONSE',
        `${method} ${path} answered HTTP ${response.statusCode} without a JSON body`,
        { status: response.statusCode },
      );
    }
    return parsed as T;
  }
}

function apiError(method: string, path: string, status: number, body: unknown): CliError {
  const error = (
    body as { error?: { code?: unknown; message?: unknown; hint?: unknown } } | undefined
  )?.error;
  if (error !== undefined && typeof error.code === 'string' && typeof error.message === 'string') {
    return new CliError(error.code, error.message, {
      hint: typeof error.hint === 'string' ? error.hint : undefined,
      status,
    });
  }
  return new CliError('KILN_BAD_RESPONSE', `${method} ${path} failed with HTTP ${status}`, {
    status,
    hint: 'is --url pointing at a Kiln control plane?',
  });
}

const connectionWords: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'connection refused',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host not found',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ETIMEDOUT: 'connection timed out',
  UND_ERR_CONNECT_TIMEOUT: 'connection timed out',
  ECONNRESET: 'connection reset',
  EPIPE: 'connection closed',
  UND_ERR_SOCKET: 'connection closed',
  UND_ERR_HEADERS_TIMEOUT: 'no answer within 120 s',
  UND_ERR_BODY_TIMEOUT: 'the answer stalled',
};

function connectionError(baseUrl: string, error: unknown): unknown {
  return unreachableError(
    error,
    `Kiln at ${baseUrl}`,
    'start it with `kiln up`, or point --url / KILN_URL at it',
  );
}

/**
 * A connection-level failure (refused, reset, timed out…) → `cannot reach <target>: <words>`
 * (KILN_UNREACHABLE); anything else is returned unchanged.
 */
export function unreachableError(error: unknown, target: string, hint: string): unknown {
  if (error instanceof CliError) return error;
  const code = errorCode(error);
  const words = code === undefined ? undefined : connectionWords[code];
  if (words === undefined) return error;
  return new CliError('KILN_UNREACHABLE', `cannot reach ${target}: ${words}`, {
    hint,
    cause: error,
  });
}

function errorCode(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && code in connectionWords) return code;
  // Happy-eyeballs failures arrive as an AggregateError of per-address errors.
  if (error instanceof AggregateError) {
    for (const inner of error.errors) {
      const innerCode = errorCode(inner);
      if (innerCode !== undefined) return innerCode;
    }
  }
  const cause = (error as { cause?: unknown }).cause;
  return cause === undefined ? undefined : errorCode(cause);
}
