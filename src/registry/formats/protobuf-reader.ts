// A small protobuf wire-format reader that works on byte ranges of an ArtifactFile, so a
// validator can walk a 2 GB ONNX model and read only the fields it needs: it hops over the
// length-delimited fields it skips (initializer weights) without reading them.
//
// Reads go through one cached window (1 MiB by default):
//
//   file:   |.........[=========window=========]..............................|
//                     ^windowStart             ^windowStart + window.length
//
// A field's tag and length are decoded from the window; a skipped payload just moves the
// position. Every length is checked against the end of its enclosing message before use, so
// truncated or hostile input ends in a ProtobufError, never in a huge allocation or a hang.
//
// Malformed input throws ProtobufError (parsing code is clearer without threading results
// through every read); callers turn it into a FormatCheck value at their boundary.

import type { ArtifactFile } from './artifact-file.ts';

export class ProtobufError extends Error {
  override name = 'ProtobufError';
}

export type WireType = 0 | 1 | 2 | 5;

export interface ProtoField {
  readonly number: number;
  readonly wireType: WireType;
  /** Wire type 0: the varint read as a signed 64-bit integer (exact up to 2^53). */
  readonly value: number;
  /** The payload's byte range in the file (after the length, for wire type 2). */
  readonly start: number;
  readonly end: number;
}

const wireTypeNames: Record<WireType, string> = {
  0: 'varint',
  1: '64-bit',
  2: 'length-delimited',
  5: '32-bit',
};

const maxVarintBytes = 10;
const maxFieldNumber = 2 ** 29 - 1;

export class ProtobufReader {
  private window: Buffer = Buffer.alloc(0);
  private windowStart = 0;

  constructor(
    private readonly file: ArtifactFile,
    private readonly windowBytes = 1 << 20,
  ) {}

  /** Yields each field of the message stored in [start, end) of the file, in order. */
  async *fields(start: number, end: number): AsyncGenerator<ProtoField> {
    if (end > this.file.size) {
      throw new ProtobufError(`message runs past the end of the file (${end} > ${this.file.size})`);
    }
    let pos = start;
    while (pos < end) {
      await this.ensure(pos, Math.min(2 * maxVarintBytes, end - pos));
      const tag = this.varintAt(pos, end);
      const number = Math.floor(tag.value / 8);
      const wireType = tag.value % 8;
      if (number === 0 || number > maxFieldNumber || tag.value < 0) {
        throw new ProtobufError(`invalid field tag at byte ${pos}`);
      }
      pos = tag.next;
      switch (wireType) {
        case 0: {
          const varint = this.varintAt(pos, end);
          yield { number, wireType, value: varint.value, start: pos, end: varint.next };
          pos = varint.next;
          break;
        }
        case 1:
        case 5: {
          const size = wireType === 1 ? 8 : 4;
          if (size > end - pos) {
            throw new ProtobufError(
              `field ${number} at byte ${pos} runs past the end of its message`,
            );
          }
          yield { number, wireType, value: 0, start: pos, end: pos + size };
          pos += size;
          break;
        }
        case 2: {
          const length = this.varintAt(pos, end);
          const left = end - length.next;
          if (length.value < 0 || length.value > left) {
            throw new ProtobufError(
              `field ${number} at byte ${pos} claims ${length.value} bytes but only ${left} remain in its message (truncated or corrupt file)`,
            );
          }
          const payloadEnd = length.next + length.value;
          yield { number, wireType, value: 0, start: length.next, end: payloadEnd };
          pos = payloadEnd;
          break;
        }
        default:
          throw new ProtobufError(
            `field ${number} at byte ${pos} has unsupported wire type ${wireType}`,
          );
      }
    }
  }

  /** The raw payload of a length-delimited field, refused past `maxBytes`. */
  async bytes(field: ProtoField, maxBytes: number): Promise<Buffer> {
    const length = field.end - field.start;
    if (length > maxBytes) {
      throw new ProtobufError(
        `field ${field.number} is ${length} bytes, over the ${maxBytes}-byte limit`,
      );
    }
    await this.ensure(field.start, length);
    const offset = field.start - this.windowStart;
    return Buffer.from(this.window.subarray(offset, offset + length));
  }

  async string(field: ProtoField, maxBytes = 1 << 16): Promise<string> {
    return (await this.bytes(field, maxBytes)).toString('utf8');
  }

  /** Throws unless `field` has the wire type the schema gives it. */
  static expect(field: ProtoField, wireType: WireType, label: string): void {
    if (field.wireType !== wireType) {
      throw new ProtobufError(
        `field ${field.number} (${label}) is ${wireTypeNames[field.wireType]}, expected ${wireTypeNames[wireType]}`,
      );
    }
  }

  /** Makes [pos, pos + length) readable from the window. */
  private async ensure(pos: number, length: number): Promise<void> {
    const windowEnd = this.windowStart + this.window.length;
    if (pos >= this.windowStart && pos + length <= windowEnd) return;
    const want = Math.min(Math.max(length, this.windowBytes), this.file.size - pos);
    const bytes = want > 0 ? await this.file.read(pos, want) : Buffer.alloc(0);
    if (bytes.length < length) {
      throw new ProtobufError(`file ended at byte ${pos + bytes.length}, inside a message`);
    }
    this.window = bytes;
    this.windowStart = pos;
  }

  /** Decodes a varint at `pos` (already in the window) that must end before `end`. */
  private varintAt(pos: number, end: number): { value: number; next: number } {
    const base = pos - this.windowStart;
    const limit = Math.min(end - pos, maxVarintBytes, this.window.length - base);
    let value = 0;
    let scale = 1;
    for (let i = 0; i < limit; i += 1) {
      const byte = this.window[base + i] ?? 0;
      if (i < 7) {
        // Exact in a double up to 49 bits; longer varints take the bigint path below.
        value += (byte & 0x7f) * scale;
        scale *= 128;
        if (byte < 0x80) return { value, next: pos + i + 1 };
      } else if (byte < 0x80) {
        return { value: this.bigVarint(base, i + 1), next: pos + i + 1 };
      }
    }
    throw new ProtobufError(`truncated or overlong varint at byte ${pos}`);
  }

  private bigVarint(base: number, count: number): number {
    let value = 0n;
    for (let i = count - 1; i >= 0; i -= 1) {
      value = (value << 7n) | BigInt((this.window[base + i] ?? 0) & 0x7f);
    }
    return Number(BigInt.asIntN(64, value));
  }
}
