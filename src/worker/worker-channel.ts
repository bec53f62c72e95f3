// The worker's end of the gateway channel (src/protocol/channel/frames.ts): the gateway asks
// for it with an HTTP Upgrade on the worker's own port, then sends infer frames on that one
// connection. Each frame runs exactly like an HTTP infer request (the same `runInfer`), and
// its reply goes back as a frame. Replies finished in the same event-loop turn leave in one
// write (the socket is corked until the turn's end).
//
// A cancel frame for a request still queued in the batcher removes it (the gateway's client
// went away). A protocol error (a frame the reader refuses) closes the connection; the
// gateway then treats its requests as lost and retries them elsewhere.

import type { Socket } from 'node:net';
import type { IncomingHttpHeaders } from 'node:http';
import {
  channelPath,
  channelProtocol,
  encodeFrame,
  FrameReader,
  frameKind,
  type Frame,
  type InferFrameMeta,
  type ReplyFrameMeta,
} from '../protocol/channel/frames.ts';
import { kilnError } from '../core/errors.ts';
import { decodeTensorRequest } from '../protocol/channel/tensor-frames.ts';
import type { DecodedInferRequest } from '../protocol/v2/decode-request.ts';
import type { CancelWatch, WorkerReply } from './worker-server.ts';
import { driftHeader } from '../protocol/drift/sketch-report.ts';
import { SLICE_HEADER } from '../protocol/traffic/traffic-report.ts';

export type RunInfer = (
  input: Buffer | DecodedInferRequest,
  headers: IncomingHttpHeaders,
  watch: CancelWatch | null,
  how?: { readonly accepted?: boolean; readonly counted?: boolean },
) => Promise<WorkerReply>;

/** A frame on an open channel is accepted work (see run). */
const accepted = { accepted: true } as const;

/** Room for a frame's meta (and a request's envelope) beyond its tensor bytes. */
const metaAllowance = 64 * 1024;
/**
 * A tensors frame can be larger than the JSON it was decoded from: the shortest JSON element
 * with its comma ("0,") is 2 characters and the widest datatype 8 bytes. So frames up to 4×
 * the body limit are legitimate; what is larger is a protocol error.
 */
const tensorExpansion = 4;
/** How long a closing channel may take to deliver what it has written. */
const closeGraceMs = 5_000;

export class WorkerChannel {
  private readonly reader: FrameReader;
  /** Abort callbacks of requests waiting in the batcher, by frame id. */
  private readonly waiting = new Map<number, () => void>();
  private corked = false;
  private closed = false;

  constructor(
    private readonly socket: Socket,
    private readonly runInfer: RunInfer,
    maxBodyBytes: number,
    head: Buffer,
  ) {
    this.reader = new FrameReader(tensorExpansion * maxBodyBytes + metaAllowance, (frame) =>
      this.onFrame(frame),
    );
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.receive(chunk));
    socket.on('close', () => {
      this.closed = true;
      // Nobody is left to read the answers: queued requests are dropped as cancelled.
      for (const abort of this.waiting.values()) abort();
      this.waiting.clear();
    });
    socket.on('error', () => undefined); // 'close' follows
    socket.on('end', () => socket.destroy()); // the gateway hung up: no half-open channel
    if (head.length > 0) this.receive(head);
  }

  private receive(chunk: Buffer): void {
    let problem: string | null;
    try {
      problem = this.reader.push(chunk);
    } catch (error) {
      // A frame this side cannot make sense of (the peer is not the gateway it expects).
      problem = `a frame that could not be handled (${(error as Error).message})`;
    }
    if (problem !== null) {
      process.stderr.write(`worker channel: ${problem}; closing it\n`);
      this.socket.destroy();
    }
  }

  /** Ends the channel once what was written has been sent (a drained worker's last step). */
  close(): void {
    if (this.socket.destroyed) return;
    this.socket.end();
    const timer = setTimeout(() => this.socket.destroy(), closeGraceMs);
    timer.unref();
    this.socket.once('close', () => clearTimeout(timer));
  }

  private onFrame(frame: Frame): void {
    switch (frame.kind) {
      case frameKind.infer:
        this.infer(frame);
        return;
      case frameKind.tensors:
        this.inferTensors(frame);
        return;
      case frameKind.cancel:
        this.waiting.get(frame.id)?.();
        return;
      default:
        process.stderr.write(`worker channel: unknown frame kind ${frame.kind}; ignored\n`);
    }
  }

  private infer(frame: Frame): void {
    const id = frame.id;
    let meta: InferFrameMeta = {};
    if (frame.meta !== '') {
      try {
        const parsed = JSON.parse(frame.meta) as unknown;
        if (typeof parsed === 'object' && parsed !== null) meta = parsed;
      } catch {
        meta = {};
      }
    }
    const headers: IncomingHttpHeaders = {};
    if (typeof meta.t === 'string') headers['kiln-timeout-ms'] = meta.t;
    if (typeof meta.p === 'string') headers['kiln-priority'] = meta.p;
    if (typeof meta.d === 'string') markForDrift(headers, meta.d);
    if (typeof meta.tp === 'string') headers.traceparent = meta.tp;
    if (typeof meta.ts === 'string') headers.tracestate = meta.ts;
    // The frame's body is a view into the read buffer; the request may outlive this turn.
    this.run(id, Buffer.from(frame.body), headers);
  }

  private run(id: number, input: Buffer | DecodedInferRequest, headers: IncomingHttpHeaders): void {
    const watch: CancelWatch = (abort) => {
      this.waiting.set(id, abort);
      return () => this.waiting.delete(id);
    };
    // A frame on an open channel was sent before the gateway dropped this replica: it is
    // accepted work, run even while the worker drains (new channels are refused then).
    this.runInfer(input, headers, watch, accepted).then(
      (reply) => this.reply(id, reply),
      (error: unknown) => {
        process.stderr.write(`worker channel: ${String(error)}\n`);
        this.reply(id, {
          status: 500,
          body: '{"error":"internal error","code":"KILN_INTERNAL"}',
          retryAfter: null,
        });
      },
    );
  }

  private inferTensors(frame: Frame): void {
    const decoded = decodeTensorRequest(frame.meta, frame.body);
    if (!decoded.ok) {
      const error = kilnError('KILN_INVALID_INFER_REQUEST', { reason: decoded.message });
      this.reply(frame.id, {
        status: error.status,
        body: JSON.stringify({ error: error.message, code: error.code }),
        retryAfter: null,
      });
      return;
    }
    const headers: IncomingHttpHeaders = {};
    if (decoded.timeoutHeader !== undefined) headers['kiln-timeout-ms'] = decoded.timeoutHeader;
    if (decoded.priorityHeader !== undefined) headers['kiln-priority'] = decoded.priorityHeader;
    if (decoded.driftSlice !== undefined) markForDrift(headers, decoded.driftSlice);
    if (decoded.traceparent !== undefined) headers.traceparent = decoded.traceparent;
    if (decoded.tracestate !== undefined) headers.tracestate = decoded.tracestate;
    this.run(frame.id, decoded.request, headers);
  }

  private reply(id: number, reply: WorkerReply): void {
    if (this.closed || reply.status === 499) return;
    const meta: ReplyFrameMeta =
      reply.retryAfter === null ? { s: reply.status } : { s: reply.status, ra: reply.retryAfter };
    if (!this.corked) {
      this.corked = true;
      this.socket.cork();
      process.nextTick(uncork, this);
    }
    this.socket.write(encodeFrame(frameKind.reply, id, JSON.stringify(meta), reply.body));
  }

  /** Sends what this turn wrote, in one go. */
  flush(): void {
    this.corked = false;
    this.socket.uncork();
  }
}

/** A frame's drift mark as the headers an HTTP request would carry (sketch-report.ts). */
function markForDrift(headers: IncomingHttpHeaders, slice: string): void {
  headers[driftHeader] = '1';
  if (slice !== '') headers[SLICE_HEADER] = slice;
}

function uncork(channel: WorkerChannel): void {
  channel.flush();
}

const channelsOf = new WeakMap<object, Set<WorkerChannel>>();

/**
 * Answers an Upgrade request on the worker's HTTP server: a channel when the gateway asks for
 * ours at the right path while the worker takes requests, else a plain HTTP refusal.
 */
export function acceptChannel(
  owner: object,
  request: { url?: string | undefined; headers: IncomingHttpHeaders },
  socket: Socket,
  head: Buffer,
  accepting: boolean,
  runInfer: RunInfer,
  maxBodyBytes: number,
): void {
  const path = (request.url ?? '').split('?')[0];
  const wanted = request.headers.upgrade?.toLowerCase();
  const refuse = (status: string): void => {
    socket.end(`HTTP/1.1 ${status}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`);
  };
  if (path !== channelPath || wanted !== channelProtocol) return refuse('400 Bad Request');
  if (!accepting) return refuse('503 Service Unavailable');
  socket.write(
    `HTTP/1.1 101 Switching Protocols\r\nconnection: upgrade\r\nupgrade: ${channelProtocol}\r\n\r\n`,
  );
  let channels = channelsOf.get(owner);
  if (channels === undefined) {
    channels = new Set();
    channelsOf.set(owner, channels);
  }
  const channel = new WorkerChannel(socket, runInfer, maxBodyBytes, head);
  channels.add(channel);
  socket.once('close', () => channels.delete(channel));
}

/**
 * Closes every channel `owner` accepted (a drained worker's last step): each ends once its
 * replies are sent, so none finished before the drain is lost on the way.
 */
export function closeChannels(owner: object): void {
  for (const channel of channelsOf.get(owner) ?? []) channel.close();
}
