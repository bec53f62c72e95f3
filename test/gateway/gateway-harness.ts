// Test helpers for the gateway: fake workers (tiny node:http servers that answer v2 infer
// with canned JSON and record what they received), snapshot builders, an in-process
// gateway with injected snapshots, and a small HTTP client.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  createServer,
  request as httpRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
} from 'node:http';
import type { Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { after } from 'node:test';
import type { ModelSchema } from '../../src/core/tensor.ts';
import {
  channelPath,
  channelProtocol,
  encodeFrame,
  FrameReader,
  frameKind,
  type InferFrameMeta,
} from '../../src/protocol/channel/frames.ts';
import type { LlmPickSettings, LlmRoutingPolicy } from '../../src/gateway/llm-replica-picker.ts';
import {
  startGateway,
  type GatewayOptions,
  type RunningGateway,
} from '../../src/gateway/start-gateway.ts';
import type {
  ApiKeyGrant,
  EndpointRoute,
  ReplicaRoute,
  RoutingSnapshot,
} from '../../src/gateway/routing-snapshot.ts';

export interface ReceivedRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
}

/**
 * - `ok`: 200 with `cannedOutput` (and a `traceparent` header when `answerTraceparent`).
 * - `hold`: records the request and answers only when `release()` is called.
 * - `destroy`: destroys the socket as soon as the request arrives (a crashed worker).
 * - `hang`: never answers.
 */
export type WorkerBehavior = 'ok' | 'hold' | 'destroy' | 'hang';

export interface FakeWorker {
  readonly url: string;
  /** Whether it offers the worker channel (then `replicaRoute` lists it). */
  readonly channel: boolean;
  readonly received: ReceivedRequest[];
  /** Frame ids the gateway cancelled on the channel. */
  readonly cancelled: number[];
  behavior: WorkerBehavior;
  answerTraceparent: string | null;
  /** Answers every held request. */
  release(): void;
  /** Resolves when `count` requests have arrived. */
  waitForRequests(count: number): Promise<void>;
  close(): Promise<void>;
}

export const cannedOutput = {
  model_name: 'fraud',
  outputs: [{ name: 'y', datatype: 'FP32', shape: [1, 1], data: [0.25] }],
};

export async function fakeWorker(
  behavior: WorkerBehavior = 'ok',
  body: unknown = cannedOutput,
  status = 200,
  options: { channel?: boolean } = {},
): Promise<FakeWorker> {
  const received: ReceivedRequest[] = [];
  const cancelled: number[] = [];
  const held: Array<() => void> = [];
  const waiters: Array<{ count: number; resolve: () => void }> = [];
  const text = JSON.stringify(body);
  const worker: FakeWorker = {
    url: '',
    channel: options.channel === true,
    received,
    cancelled,
    behavior,
    answerTraceparent: null,
    release() {
      for (const answer of held.splice(0)) answer();
    },
    waitForRequests(count) {
      if (received.length >= count) return Promise.resolve();
      return new Promise((resolve) => waiters.push({ count, resolve }));
    },
    close: () => Promise.resolve(), // the server's, once it listens
  };
  const record = (request: ReceivedRequest): void => {
    received.push(request);
    for (const waiter of waiters.filter((w) => received.length >= w.count)) {
      waiters.splice(waiters.indexOf(waiter), 1);
      waiter.resolve();
    }
  };
  const server = createServer((req, res) => {
    if (worker.behavior === 'destroy') {
      req.socket.destroy();
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      record({
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks),
      });
      const answer = (): void => {
        const headers: Record<string, string> = { 'content-type': 'application/json' };
        if (worker.answerTraceparent !== null) headers.traceparent = worker.answerTraceparent;
        res.writeHead(status, headers);
        res.end(text);
      };
      if (worker.behavior === 'ok') answer();
      else if (worker.behavior === 'hold') held.push(answer);
      // 'hang': never answer
    });
  });
  if (worker.channel) {
    // The worker channel, as a Kiln worker speaks it (src/worker/worker-channel.ts).
    server.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) => {
      if (req.url !== channelPath || req.headers.upgrade !== channelProtocol) {
        socket.end('HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n');
        return;
      }
      socket.write(
        `HTTP/1.1 101 Switching Protocols\r\nconnection: upgrade\r\nupgrade: ${channelProtocol}\r\n\r\n`,
      );
      const reader = new FrameReader(1 << 24, (frame) => {
        if (frame.kind === frameKind.cancel) {
          cancelled.push(frame.id);
          return;
        }
        if (worker.behavior === 'destroy') {
          socket.destroy();
          return;
        }
        const meta = (frame.meta === '' ? {} : JSON.parse(frame.meta)) as InferFrameMeta;
        const headers: IncomingHttpHeaders = {};
        if (meta.t !== undefined) headers['kiln-timeout-ms'] = meta.t;
        if (meta.p !== undefined) headers['kiln-priority'] = meta.p;
        record({ method: 'POST', url: channelPath, headers, body: Buffer.from(frame.body) });
        const answer = (): void => {
          socket.write(encodeFrame(frameKind.reply, frame.id, JSON.stringify({ s: status }), text));
        };
        if (worker.behavior === 'ok') answer();
        else if (worker.behavior === 'hold') held.push(answer);
      });
      socket.on('data', (chunk: Buffer) => reader.push(chunk));
      socket.on('error', () => undefined);
      if (head.length > 0) reader.push(head);
    });
  }
  const served = await serveOnLoopback(server);
  Object.assign(worker, { url: served.url, close: served.close });
  return worker;
}

export const testSchema: ModelSchema = {
  inputs: [{ name: 'x', datatype: 'FP32', shape: [-1, 3] }],
  outputs: [{ name: 'y', datatype: 'FP32', shape: [-1, 1] }],
};

/** A valid request for `testSchema`. */
export const validRequest = {
  inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 3], data: [1, 2, 3] }],
};

export function replicaRoute(
  worker: { url: string; channel?: boolean },
  id: string,
  version = 3,
): ReplicaRoute {
  return worker.channel === true
    ? { id, url: worker.url, version, channel: channelPath }
    : { id, url: worker.url, version };
}

export function endpointRoute(
  overrides: Partial<EndpointRoute> & { replicas: readonly ReplicaRoute[] },
): EndpointRoute {
  return {
    name: 'fraud',
    team: 'risk',
    model: 'fraud-model',
    version: 3,
    format: 'onnx',
    schema: testSchema,
    maxBodyBytes: 64 * 1024,
    // Large enough that no test meets it unless it sets its own.
    maxConcurrency: 10_000,
    maxConcurrencySource: 'derived',
    ...overrides,
  };
}

export function snapshot(
  version: number,
  endpoints: readonly EndpointRoute[],
  extra: {
    auth?: RoutingSnapshot['auth'];
    apiKeys?: readonly ApiKeyGrant[];
    teamLimits?: RoutingSnapshot['teamLimits'];
  } = {},
): RoutingSnapshot {
  return {
    version,
    generatedAt: new Date(0).toISOString(),
    auth: extra.auth ?? 'dev',
    endpoints,
    apiKeys: extra.apiKeys ?? [],
    teamLimits: extra.teamLimits ?? [],
  };
}

/**
 * Serves `server` on a loopback port 0 until the file ends: its url, and a close that cuts
 * the open connections (the same promise however often it is called).
 */
export async function serveOnLoopback(
  server: Server,
): Promise<{ readonly url: string; readonly close: () => Promise<void> }> {
  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  let closed: Promise<void> | null = null;
  const close = (): Promise<void> => {
    closed ??= new Promise<void>((resolve) => {
      for (const socket of sockets) socket.destroy();
      server.close(() => resolve());
    });
    return closed;
  };
  after(close);
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close };
}

/** A gateway on a loopback port 0 with snapshots injected by the test; closed after the file. */
export async function testGateway(
  initial: RoutingSnapshot | null,
  options: {
    upstreamTimeoutMs?: number;
    clientTimeoutMs?: number;
    ejectMs?: number;
    stateDir?: string;
    /** false: infer requests go to workers as plain v2 HTTP (KILN_WORKER_CHANNEL=0). */
    workerChannels?: boolean;
    llmRouting?: LlmRoutingPolicy;
    llmLoadPollMs?: number;
    llmPick?: Partial<LlmPickSettings>;
    /** Any other gateway option (traffic reports, shadows, the random draw). */
    more?: Partial<GatewayOptions>;
  } = {},
): Promise<RunningGateway> {
  const ownDir = options.stateDir === undefined ? await mkdtemp(join(tmpdir(), 'kiln-gw-')) : null;
  const gateway = await startGateway({
    controlUrl: 'http://127.0.0.1:9',
    host: '127.0.0.1',
    port: 0,
    stateDir: options.stateDir ?? ownDir!,
    snapshotSource: 'manual',
    ...(options.upstreamTimeoutMs === undefined
      ? {}
      : { upstreamTimeoutMs: options.upstreamTimeoutMs }),
    ...(options.ejectMs === undefined ? {} : { ejectMs: options.ejectMs }),
    ...(options.clientTimeoutMs === undefined ? {} : { clientTimeoutMs: options.clientTimeoutMs }),
    ...(options.workerChannels === undefined ? {} : { workerChannels: options.workerChannels }),
    ...(options.llmRouting === undefined ? {} : { llmRouting: options.llmRouting }),
    ...(options.llmLoadPollMs === undefined ? {} : { llmLoadPollMs: options.llmLoadPollMs }),
    ...(options.llmPick === undefined ? {} : { llmPick: options.llmPick }),
    ...options.more,
  });
  // One hook, so the gateway has closed (and finished persisting) before its folder goes.
  after(async () => {
    await gateway.close();
    if (ownDir !== null) await rm(ownDir, { recursive: true, force: true });
  });
  if (initial !== null) gateway.setSnapshot(initial);
  return gateway;
}

export interface Reply {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
  /** The body parsed as JSON (undefined when it is not JSON). */
  readonly json: unknown;
}

export async function call(
  base: string,
  method: string,
  path: string,
  body?: string | Uint8Array,
  headers: Record<string, string> = {},
): Promise<Reply> {
  const init: RequestInit = { method, headers: { ...headers } };
  if (body !== undefined) {
    init.body = body;
    if (!('content-type' in headers)) {
      (init.headers as Record<string, string>)['content-type'] = 'application/json';
    }
  }
  const response = await fetch(base + path, init);
  const text = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, headers: response.headers, text, json };
}

export function infer(
  base: string,
  body: unknown = validRequest,
  headers: Record<string, string> = {},
  endpoint = 'fraud',
): Promise<Reply> {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  return call(base, 'POST', `/v2/models/${endpoint}/infer`, text, headers);
}

/** POSTs `chunks` with chunked transfer encoding (no Content-Length). */
export function streamedPost(
  base: string,
  path: string,
  chunks: readonly Buffer[],
): Promise<{ status: number; json: unknown }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      base + path,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
      },
      (res) => {
        const parts: Buffer[] = [];
        res.on('data', (chunk: Buffer) => parts.push(chunk));
        res.on('end', () => {
          const text = Buffer.concat(parts).toString('utf8');
          resolve({ status: res.statusCode ?? 0, json: JSON.parse(text) as unknown });
        });
        res.on('error', reject);
      },
    );
    // The gateway may close the connection once it has answered 413.
    req.on('error', reject);
    for (const chunk of chunks) req.write(chunk);
    req.end();
  });
}
