// The worker channel's framing: how the gateway and a Kiln worker exchange infer requests on
// one long-lived connection instead of one HTTP/1.1 exchange each (see channel.md in docs/).
// A frame is
//
//   u32 BE  length of everything after this field
//   u8      kind      (1 infer, 2 reply, 3 cancel, 4 infer as tensors: tensor-frames.ts)
//   u32 BE  id        (chosen by the gateway; a reply carries its request's id)
//   u32 BE  metaLength
//   meta    UTF-8 JSON, metaLength bytes (empty for cancel)
//   body    the rest: an infer request's v2 JSON body (or its tensors' bytes), or a reply's
//           v2 JSON body
//
// Many requests share the connection, and whatever is ready in one event-loop turn goes out
// in one write, so under load the per-request cost of HTTP parsing and of a syscall each
// way disappears from the hop between the two processes.

export const frameKind = { infer: 1, reply: 2, cancel: 3, tensors: 4 } as const;
export type FrameKind = (typeof frameKind)[keyof typeof frameKind];

const headerBytes = 13;
const lengthBytes = 4;

/** Builds one frame in a single buffer. */
export function encodeFrame(
  kind: FrameKind,
  id: number,
  meta: string,
  body: Buffer | string | null,
): Buffer {
  const metaLength = meta.length === 0 ? 0 : Buffer.byteLength(meta);
  const bodyLength =
    body === null ? 0 : typeof body === 'string' ? Buffer.byteLength(body) : body.length;
  const frame = Buffer.allocUnsafe(headerBytes + metaLength + bodyLength);
  frame.writeUInt32BE(frame.length - lengthBytes, 0);
  frame.writeUInt8(kind, 4);
  frame.writeUInt32BE(id, 5);
  frame.writeUInt32BE(metaLength, 9);
  if (metaLength > 0) frame.write(meta, headerBytes, 'utf8');
  if (body !== null) {
    if (typeof body === 'string') frame.write(body, headerBytes + metaLength, 'utf8');
    else body.copy(frame, headerBytes + metaLength);
  }
  return frame;
}

export interface Frame {
  readonly kind: number;
  readonly id: number;
  readonly meta: string;
  /** A view into the received bytes: valid until the callback returns unless copied. */
  readonly body: Buffer;
}

/**
 * Cuts a byte stream into frames. `push` every chunk read from the socket; `onFrame` runs
 * once per complete frame, in order. A frame that announces more than `maxFrameBytes`, or
 * a malformed header, is a protocol error: `push` returns its message and the caller
 * closes the connection (the peer is not speaking this protocol).
 */
export class FrameReader {
  /** Chunks of an unfinished frame, and their total length. */
  private held: Buffer[] = [];
  private heldBytes = 0;
  /** Bytes the unfinished frame needs in all (0 while its length is not known yet). */
  private needed = 0;

  constructor(
    private readonly maxFrameBytes: number,
    private readonly onFrame: (frame: Frame) => void,
  ) {}

  push(chunk: Buffer): string | null {
    let data = chunk;
    if (this.heldBytes > 0) {
      this.held.push(chunk);
      this.heldBytes += chunk.length;
      // A large frame arrives in many chunks: join them once, when it is complete.
      if (this.heldBytes < this.needed) return null;
      data = Buffer.concat(this.held, this.heldBytes);
      this.held = [];
      this.heldBytes = 0;
      this.needed = 0;
    }
    let offset = 0;
    while (data.length - offset >= lengthBytes) {
      const rest = data.readUInt32BE(offset);
      if (rest < headerBytes - lengthBytes)
        return `a frame of ${rest} bytes is shorter than its header`;
      if (rest + lengthBytes > this.maxFrameBytes)
        return `a frame of ${rest + lengthBytes} bytes is over the limit of ${this.maxFrameBytes}`;
      const end = offset + lengthBytes + rest;
      if (end > data.length) {
        this.needed = lengthBytes + rest;
        break;
      }
      const kind = data.readUInt8(offset + 4);
      const id = data.readUInt32BE(offset + 5);
      const metaLength = data.readUInt32BE(offset + 9);
      const metaStart = offset + headerBytes;
      if (metaLength > end - metaStart)
        return `a frame's meta (${metaLength} bytes) runs past the frame's end`;
      const meta = metaLength === 0 ? '' : data.toString('utf8', metaStart, metaStart + metaLength);
      this.onFrame({ kind, id, meta, body: data.subarray(metaStart + metaLength, end) });
      offset = end;
    }
    if (offset < data.length) {
      const rest = data.subarray(offset);
      this.held = [rest];
      this.heldBytes = rest.length;
    }
    return null;
  }

  /** Bytes of an unfinished frame held back. */
  get buffered(): number {
    return this.heldBytes;
  }
}

/** The upgrade path and protocol token a Kiln worker's HTTP server accepts. */
export const channelPath = '/kiln/v1/channel';
export const channelProtocol = 'kiln-channel/1';

/** What an infer frame's meta carries: the request headers that steer scheduling. */
export interface InferFrameMeta {
  /** `kiln-timeout-ms`, as the client sent it. */
  readonly t?: string;
  /** `kiln-priority`, as the client sent it. */
  readonly p?: string;
  /** Drift sketches (issue 15): sketch the request under this slice value ('': none). */
  readonly d?: string;
  /** A traced request's `traceparent` (the gateway's attempt span) and `tracestate`. */
  readonly tp?: string;
  readonly ts?: string;
}

/** A reply frame's meta: the HTTP status, and Retry-After when the worker set one. */
export interface ReplyFrameMeta {
  readonly s: number;
  readonly ra?: string;
}
