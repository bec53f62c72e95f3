// Universal Binary JSON (draft 12) decoder, as written by XGBoost's `save_model('*.ubj')`.
// The tree runtime reuses it, so strongly typed numeric arrays decode straight into typed
// arrays (one copy and a byte swap, not a loop of reads):
//
//   [ $ d # L <count:int64>  <count × float32 big-endian>   -> Float32Array
//   [ $ l # L <count:int64>  <count × int32 big-endian>     -> Int32Array
//
// Markers: Z null, N no-op, T/F booleans, i int8, U uint8, I int16, l int32, L int64,
// d float32, D float64, H high-precision number (a decimal string), C char, S string,
// [ ] arrays, { } objects (keys are a length and UTF-8 bytes, no S marker). A container may
// start with `$<type>#<count>` (no per-element markers, no closing marker) or `#<count>`.
// Numbers are big-endian. Every count and length is checked against the bytes left, so a
// truncated or hostile file yields { ok: false }, never a huge allocation or a crash.

import { endianness } from 'node:os';

export type UbjsonTypedArray =
  Int8Array | Uint8Array | Int16Array | Int32Array | BigInt64Array | Float32Array | Float64Array;

/** int64 values outside ±2^53 decode as bigint; everything else as in JSON. */
export type UbjsonValue =
  null | boolean | number | bigint | string | UbjsonTypedArray | UbjsonValue[] | UbjsonObject;

export interface UbjsonObject {
  [key: string]: UbjsonValue;
}

export type UbjsonResult =
  | { readonly ok: true; readonly value: UbjsonValue }
  | { readonly ok: false; readonly reason: string; readonly offset: number };

export interface UbjsonOptions {
  /** Deepest container nesting accepted (default 256). */
  readonly maxDepth?: number;
}

class UbjsonError extends Error {
  constructor(
    message: string,
    readonly offset: number,
  ) {
    super(message);
  }
}

const littleEndianHost = endianness() === 'LE';

// Fixed-size numeric markers: byte width and typed-array constructor for `$`-typed arrays.
const numericTypes: Readonly<
  Record<string, { bytes: number; array: (n: number) => UbjsonTypedArray }>
> = {
  i: { bytes: 1, array: (n) => new Int8Array(n) },
  U: { bytes: 1, array: (n) => new Uint8Array(n) },
  I: { bytes: 2, array: (n) => new Int16Array(n) },
  l: { bytes: 4, array: (n) => new Int32Array(n) },
  L: { bytes: 8, array: (n) => new BigInt64Array(n) },
  d: { bytes: 4, array: (n) => new Float32Array(n) },
  D: { bytes: 8, array: (n) => new Float64Array(n) },
};

// `$`-typed containers of payload-free values (Z, T, F) carry no bytes per element; cap them.
const maxPayloadFreeCount = 1 << 24;

export function decodeUbjson(bytes: Uint8Array, options: UbjsonOptions = {}): UbjsonResult {
  const decoder = new Decoder(bytes, options.maxDepth ?? 256);
  try {
    const value = decoder.value(0);
    decoder.skipNoOps();
    if (decoder.pos !== bytes.length) {
      throw new UbjsonError('unexpected data after the top-level value', decoder.pos);
    }
    return { ok: true, value };
  } catch (error) {
    if (!(error instanceof UbjsonError)) throw error;
    return { ok: false, reason: `${error.message} at byte ${error.offset}`, offset: error.offset };
  }
}

class Decoder {
  pos = 0;
  private readonly buf: Buffer;

  constructor(
    bytes: Uint8Array,
    private readonly maxDepth: number,
  ) {
    this.buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  skipNoOps(): void {
    while (this.pos < this.buf.length && this.buf[this.pos] === 0x4e /* N */) this.pos += 1;
  }

  value(depth: number): UbjsonValue {
    this.skipNoOps();
    return this.typed(this.marker(), depth);
  }

  private marker(): string {
    if (this.pos >= this.buf.length)
      throw new UbjsonError('data ended where a value was expected', this.pos);
    const byte = this.buf[this.pos] ?? 0;
    this.pos += 1;
    return String.fromCharCode(byte);
  }

  private need(count: number): number {
    const at = this.pos;
    if (count > this.buf.length - at) {
      throw new UbjsonError(`data ended: ${count} bytes needed, ${this.buf.length - at} left`, at);
    }
    this.pos += count;
    return at;
  }

  /** Decodes a value whose marker has been read. */
  private typed(marker: string, depth: number): UbjsonValue {
    const buf = this.buf;
    switch (marker) {
      case 'Z':
        return null;
      case 'T':
        return true;
      case 'F':
        return false;
      case 'i':
        return buf.readInt8(this.need(1));
      case 'U':
        return buf.readUInt8(this.need(1));
      case 'I':
        return buf.readInt16BE(this.need(2));
      case 'l':
        return buf.readInt32BE(this.need(4));
      case 'L': {
        const big = buf.readBigInt64BE(this.need(8));
        const small = Number(big);
        return Number.isSafeInteger(small) ? small : big;
      }
      case 'd':
        return buf.readFloatBE(this.need(4));
      case 'D':
        return buf.readDoubleBE(this.need(8));
      case 'C':
        return String.fromCharCode(buf.readUInt8(this.need(1)));
      case 'S':
        return this.string();
      case 'H': {
        const at = this.pos;
        const text = this.string();
        const number = Number(text);
        if (text.trim() === '' || Number.isNaN(number)) {
          throw new UbjsonError(`high-precision number '${text.slice(0, 40)}' is not a number`, at);
        }
        return number;
      }
      case '[':
        return this.array(depth + 1);
      case '{':
        return this.object(depth + 1);
      default:
        throw new UbjsonError(
          `unknown marker 0x${marker.charCodeAt(0).toString(16).padStart(2, '0')}`,
          this.pos - 1,
        );
    }
  }

  private length(): number {
    const at = this.pos;
    const marker = this.marker();
    if (!'iUIlL'.includes(marker)) {
      throw new UbjsonError(`expected an integer length, found marker '${marker}'`, at);
    }
    const value = this.typed(marker, 0);
    if (typeof value === 'number' && value >= 0) return value;
    const shown = typeof value === 'number' || typeof value === 'bigint' ? value.toString() : '?';
    throw new UbjsonError(`invalid length ${shown}`, at);
  }

  private string(): string {
    const length = this.length();
    const at = this.need(length);
    return this.buf.toString('utf8', at, at + length);
  }

  /** Reads an optional `$type` and `#count` after `[` or `{`. */
  private header(): { type: string | null; count: number | null } {
    let type: string | null = null;
    if (this.buf[this.pos] === 0x24 /* $ */) {
      this.pos += 1;
      type = this.marker();
      if ('[{N'.includes(type)) {
        throw new UbjsonError(`unsupported container element type '${type}'`, this.pos - 1);
      }
      if (this.buf[this.pos] !== 0x23 /* # */) {
        throw new UbjsonError("a '$' type must be followed by a '#' count", this.pos);
      }
    }
    let count: number | null = null;
    if (this.buf[this.pos] === 0x23 /* # */) {
      this.pos += 1;
      const at = this.pos;
      count = this.length();
      const payloadFree = type !== null && 'ZTF'.includes(type);
      const limit = payloadFree ? maxPayloadFreeCount : this.buf.length - this.pos;
      if (count > limit) throw new UbjsonError(`count ${count} exceeds the data left`, at);
    }
    return { type, count };
  }

  private array(depth: number): UbjsonValue {
    if (depth > this.maxDepth)
      throw new UbjsonError(`nesting deeper than ${this.maxDepth}`, this.pos);
    const { type, count } = this.header();
    const numeric = type === null ? undefined : numericTypes[type];
    if (numeric !== undefined && count !== null) return this.typedArray(numeric, count);
    const out: UbjsonValue[] = [];
    if (count !== null) {
      for (let i = 0; i < count; i += 1)
        out.push(type === null ? this.value(depth) : this.typed(type, depth));
      return out;
    }
    for (;;) {
      this.skipNoOps();
      if (this.buf[this.pos] === 0x5d /* ] */) {
        this.pos += 1;
        return out;
      }
      out.push(this.value(depth));
    }
  }

  private typedArray(
    numeric: { bytes: number; array: (n: number) => UbjsonTypedArray },
    count: number,
  ): UbjsonTypedArray {
    const at = this.need(count * numeric.bytes);
    const out = numeric.array(count);
    const view = Buffer.from(out.buffer, out.byteOffset, out.byteLength);
    this.buf.copy(view, 0, at, at + count * numeric.bytes);
    if (littleEndianHost) {
      if (numeric.bytes === 2) view.swap16();
      else if (numeric.bytes === 4) view.swap32();
      else if (numeric.bytes === 8) view.swap64();
    }
    return out;
  }

  private object(depth: number): UbjsonObject {
    if (depth > this.maxDepth)
      throw new UbjsonError(`nesting deeper than ${this.maxDepth}`, this.pos);
    const { type, count } = this.header();
    const out: UbjsonObject = {};
    const entry = (): void => {
      const key = this.string();
      const value = type === null ? this.value(depth) : this.typed(type, depth);
      if (key === '__proto__') {
        // A plain assignment would replace the prototype instead of adding a key.
        Object.defineProperty(out, key, {
          value,
          enumerable: true,
          writable: true,
          configurable: true,
        });
      } else {
        out[key] = value;
      }
    };
    if (count !== null) {
      for (let i = 0; i < count; i += 1) entry();
      return out;
    }
    for (;;) {
      this.skipNoOps();
      if (this.buf[this.pos] === 0x7d /* } */) {
        this.pos += 1;
        return out;
      }
      if (this.pos >= this.buf.length)
        throw new UbjsonError("data ended inside an object (no '}')", this.pos);
      entry();
    }
  }
}
