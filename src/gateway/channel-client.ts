// The gateway's end of a worker channel (src/protocol/channel/frames.ts): one connection per
// Kiln worker replica, opened with an HTTP Upgrade on the worker's port when first needed,
// carrying every infer request to that replica as a frame. Frames written in one pass of
// the event loop leave in one write: every request read in that pass's poll phase, flushed
// by setImmediate once the phase ends (issue 16: flushed after each I/O callback, with
// nextTick, the channel took one write — and the worker one wake-up — per request at
// saturation; batched, the gateway spends ~15% and the worker ~13% less CPU per request,
// docs/benchmarks.md "Tail at saturation"). A worker on this host also offers its routes on
// a Unix socket (ReplicaRoute.socketPath): the channel goes there, at less than half the CPU
// a loopback TCP connection costs per write on either side, and falls back to TCP for good
// if that socket cannot be reached.
//
//   send ─► (connecting: held) ─► infer frame ─► worker ─► reply frame ─► requester.onChannelReply
//   cancel ─► forget the request, tell the worker (a queued request is then never run)
//   connection lost / refused ─► every request waiting on it: onChannelError (code
//     CHANNEL_CLOSED: the exchange ejects the replica and retries once elsewhere); the next
//     send reconnects
//   no reply within upstreamTimeoutMs ─► onChannelError (code CHANNEL_TIMEOUT: 504, no retry)

import { request as httpRequest, type IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import {
  channelProtocol,
  encodeFrame,
  FrameReader,
  frameKind,
  type Frame,
  type FrameKind,
  type ReplyFrameMeta,
} from '../protocol/channel/frames.ts';

/** What a request sent on a channel answers to; `InferExchange` implements it. */
export interface ChannelRequester {
  onChannelReply(status: number, retryAfter: string | null, body: Buffer): void;
  /**
   * `error.code` is CHANNEL_CLOSED or a socket error's code (the worker cannot have answered),
   * or CHANNEL_TIMEOUT.
   */
  onChannelError(error: Error): void;
}

/** A traced request's context for the worker: the parent of the worker's span. */
export interface ChannelTrace {
  readonly traceparent: string;
  readonly tracestate: string | undefined;
}

interface Pending {
  readonly requester: ChannelRequester;
  readonly deadlineMs: number;
}

/** Largest reply frame accepted: a worker's answer is bounded by what a model outputs. */
const maxReplyFrameBytes = 1024 * 1024 * 1024;

export class ChannelClient {
  private socket: Socket | null = null;
  private connecting = false;
  /** Frames written while connecting, sent once the channel is open. */
  private held: { readonly id: number; readonly frame: Buffer }[] = [];
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private corked = false;
  private closing = false;
  private sweeper: NodeJS.Timeout | null = null;

  constructor(
    /** Worker base URL, e.g. http://127.0.0.1:40123. */
    private readonly url: string,
    /** Upgrade path on the worker (from the routing snapshot). */
    private readonly path: string,
    private readonly timeoutMs: number,
    private readonly now: () => number,
    /** The worker's Unix socket, on this host; null = TCP to `url`. */
    private socketPath: string | null = null,
  ) {}

  /** Where the channel connects: the worker's Unix socket, or its TCP URL. */
  get transport(): 'unix' | 'tcp' {
    return this.socketPath === null ? 'tcp' : 'unix';
  }

  /** Requests sent and not yet answered. */
  get inFlight(): number {
    return this.pending.size;
  }

  /** Sends one infer body (v2 JSON); returns the id to cancel it with. */
  send(
    requester: ChannelRequester,
    body: Buffer,
    timeoutHeader: string | undefined,
    priorityHeader: string | undefined,
    trace: ChannelTrace | null = null,
    /** Marks the request for the worker's drift sketches, under this slice ('': none). */
    driftSlice?: string,
  ): number {
    let meta = '';
    if (
      timeoutHeader !== undefined ||
      priorityHeader !== undefined ||
      trace !== null ||
      driftSlice !== undefined
    ) {
      meta = JSON.stringify({
        t: timeoutHeader,
        p: priorityHeader,
        tp: trace?.traceparent,
        ts: trace?.tracestate,
        d: driftSlice,
      });
    }
    return this.sendFrame(requester, frameKind.infer, meta, body);
  }

  /** Sends one infer request already decoded (tensor-frames.ts); returns its id. */
  sendTensors(
    requester: ChannelRequester,
    frame: { meta: string; body: Buffer },
    trace: ChannelTrace | null = null,
  ): number {
    // A traced request's context goes first in the meta object (its JSON starts with `{`).
    const meta = trace === null ? frame.meta : `${traceMeta(trace)}${frame.meta.slice(1)}`;
    return this.sendFrame(requester, frameKind.tensors, meta, frame.body);
  }

  private sendFrame(
    requester: ChannelRequester,
    kind: FrameKind,
    meta: string,
    body: Buffer,
  ): number {
    const id = this.nextId;
    this.nextId = id >= 0xffffffff ? 1 : id + 1;
    this.pending.set(id, { requester, deadlineMs: this.now() + this.timeoutMs });
    this.write(id, encodeFrame(kind, id, meta, body));
    this.armSweeper();
    return id;
  }

  /** The requester is gone: drop its request, and tell the worker so a queued one never runs. */
  cancel(id: number): void {
    if (!this.pending.delete(id)) return;
    this.withdraw(id);
  }

  /**
   * Makes sure request `id` never runs: while connecting, its frame is still held here and
   * is dropped; once sent, the worker gets a cancel frame.
   */
  private withdraw(id: number): void {
    const before = this.held.length;
    this.held = this.held.filter((entry) => entry.id !== id);
    if (this.held.length === before && this.socket !== null)
      this.write(id, encodeFrame(frameKind.cancel, id, '', null));
  }

  /** Closes once every request sent has its answer (the replica left the snapshot). */
  close(): void {
    this.closing = true;
    if (this.pending.size === 0) this.destroy();
  }

  /** Closes now; requests still waiting fail as lost. */
  destroy(): void {
    this.closing = true;
    this.socket?.destroy();
    this.socket = null;
    this.failAll(channelError('CHANNEL_CLOSED', 'the gateway closed the channel'));
    if (this.sweeper !== null) clearInterval(this.sweeper);
    this.sweeper = null;
  }

  private write(id: number, frame: Buffer): void {
    const socket = this.socket;
    if (socket === null) {
      this.held.push({ id, frame });
      this.connect();
      return;
    }
    if (!this.corked) {
      this.corked = true;
      socket.cork();
      // After the poll phase, not after this I/O callback: the requests that arrived in the
      // same pass go to the worker together (at low load that is this one, microseconds on).
      setImmediate(uncork, this);
    }
    socket.write(frame);
  }

  /** Sends what this pass of the event loop wrote, in one go. */
  flush(): void {
    this.corked = false;
    this.socket?.uncork();
  }

  private connect(): void {
    if (this.connecting) return;
    this.connecting = true;
    const target = new URL(this.path, this.url);
    const viaSocket = this.socketPath;
    const options = {
      headers: { connection: 'Upgrade', upgrade: channelProtocol },
      agent: false,
      timeout: 5_000,
    } as const;
    const upgrade =
      viaSocket === null
        ? httpRequest(target, options)
        : httpRequest({ ...options, socketPath: viaSocket, path: target.pathname });
    const lost = (reason: string, code?: unknown): void => {
      this.connecting = false;
      if (viaSocket !== null && this.socketPath === viaSocket && unreachable.has(String(code))) {
        // The socket is gone or refused (a worker that could not make it, a folder cleaned
        // up): the worker still serves TCP, and the held frames go there.
        this.socketPath = null;
        this.connect();
        return;
      }
      this.held = [];
      // Keep a socket error's own code (ECONNREFUSED: nothing listens) for the metrics.
      const error = channelError('CHANNEL_CLOSED', reason);
      if (typeof code === 'string') Object.assign(error, { code });
      this.failAll(error);
    };
    upgrade.on('upgrade', (_response: IncomingMessage, socket: Socket, head: Buffer) => {
      this.connecting = false;
      this.opened(socket, head);
    });
    upgrade.on('response', (response: IncomingMessage) => {
      response.resume();
      lost(`the worker refused the channel (HTTP ${response.statusCode ?? '?'})`);
    });
    upgrade.on('timeout', () => upgrade.destroy(new Error('connecting to the worker timed out')));
    upgrade.on('error', (error: Error) => lost(error.message, (error as { code?: unknown }).code));
    upgrade.end();
  }

  private opened(socket: Socket, head: Buffer): void {
    if (this.closing && this.pending.size === 0) {
      socket.destroy();
      return;
    }
    socket.setNoDelay(true);
    socket.setTimeout(0); // the connect timeout no longer applies; requests have their own
    this.socket = socket;
    const reader = new FrameReader(maxReplyFrameBytes, (frame) => this.onFrame(frame));
    socket.on('data', (chunk: Buffer) => {
      const problem = reader.push(chunk);
      if (problem !== null) socket.destroy(new Error(problem));
    });
    socket.on('error', () => undefined); // 'close' follows
    socket.on('end', () => socket.destroy()); // the worker hung up: no half-open channel
    socket.on('close', () => {
      if (this.socket === socket) this.socket = null;
      this.failAll(channelError('CHANNEL_CLOSED', 'the worker closed the channel'));
    });
    const held = this.held;
    this.held = [];
    for (const { id, frame } of held) this.write(id, frame);
    if (head.length > 0) socket.emit('data', head);
  }

  private onFrame(frame: Frame): void {
    if (frame.kind !== frameKind.reply) return;
    const pending = this.pending.get(frame.id);
    if (pending === undefined) return; // cancelled or timed out meanwhile
    this.pending.delete(frame.id);
    const meta = parseReplyMeta(frame.meta);
    // The body is a view into the read buffer: copy it, the reply may be written later.
    pending.requester.onChannelReply(meta.s, meta.ra ?? null, Buffer.from(frame.body));
    if (this.closing && this.pending.size === 0) this.destroy();
  }

  private failAll(error: Error): void {
    if (this.pending.size === 0) return;
    const requesters = [...this.pending.values()];
    this.pending.clear();
    for (const { requester } of requesters) requester.onChannelError(error);
  }

  private armSweeper(): void {
    if (this.sweeper !== null) return;
    const every = Math.max(10, Math.min(1_000, Math.floor(this.timeoutMs / 4)));
    this.sweeper = setInterval(() => this.sweep(), every);
    this.sweeper.unref();
  }

  /** Fails requests past their deadline; stops itself when nothing is waiting. */
  private sweep(): void {
    const now = this.now();
    for (const [id, pending] of this.pending) {
      if (pending.deadlineMs > now) continue;
      this.pending.delete(id);
      this.withdraw(id);
      pending.requester.onChannelError(
        channelError('CHANNEL_TIMEOUT', `no answer within ${this.timeoutMs} ms`),
      );
    }
    if (this.pending.size === 0 && this.sweeper !== null) {
      clearInterval(this.sweeper);
      this.sweeper = null;
    }
    if (this.closing && this.pending.size === 0) this.destroy();
  }
}

/**
 * A reply frame's status and Retry-After; a reply whose meta is not what a Kiln worker sends
 * (not JSON, no HTTP status) is answered as 502, as a proxy answers a broken upstream.
 */
function parseReplyMeta(text: string): ReplyFrameMeta {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return { s: 502 };
  }
  if (typeof parsed !== 'object' || parsed === null) return { s: 502 };
  const { s: status, ra } = parsed as { s?: unknown; ra?: unknown };
  if (typeof status !== 'number' || !Number.isInteger(status) || status < 200 || status > 599)
    return { s: 502 };
  return typeof ra === 'string' ? { s: status, ra } : { s: status };
}

/** Socket errors that mean nothing can be reached at a Unix socket path. */
const unreachable = new Set(['ENOENT', 'ECONNREFUSED', 'EACCES', 'ENOTSOCK', 'EPERM']);

function channelError(code: 'CHANNEL_CLOSED' | 'CHANNEL_TIMEOUT', message: string): Error {
  return Object.assign(new Error(message), { code });
}

/** `{"tp":…,"ts":…,` — the opening of a meta object carrying a trace context. */
function traceMeta(trace: ChannelTrace): string {
  const state = trace.tracestate === undefined ? '' : `"ts":${JSON.stringify(trace.tracestate)},`;
  return `{"tp":${JSON.stringify(trace.traceparent)},${state}`;
}

function uncork(client: ChannelClient): void {
  client.flush();
}
