// Reads a GGUF file's header back (layout in gguf-format.ts): metadata and the tensor table,
// and each float32 tensor's elements on request. Used to check what writeGguf wrote; it reads
// the whole file into memory, so it is meant for small models and tests.

import { readFile } from 'node:fs/promises';

import {
  ggmlTypeF32,
  ggufDefaultAlignment,
  ggufMagic,
  ggufValueTypes,
  type GgufScalarType,
} from './gguf-format.ts';

export type GgufReadValue = number | bigint | boolean | string | GgufReadValue[];

export interface GgufTensorInfo {
  readonly name: string;
  /** ggml's order, innermost first. */
  readonly dims: readonly number[];
  /** ggml_type (0 = F32). */
  readonly ggmlType: number;
  /** Bytes from the start of the data section. */
  readonly offset: number;
}

export interface GgufFile {
  readonly version: number;
  readonly metadata: ReadonlyMap<string, { readonly type: number; readonly value: GgufReadValue }>;
  readonly tensors: readonly GgufTensorInfo[];
  /** Byte offset of the data section in the file. */
  readonly dataStart: number;
  /** A float32 tensor's elements in row-major order (a copy). */
  readonly f32: (name: string) => Float32Array;
}

export type GgufReadResult =
  { readonly ok: true; readonly file: GgufFile } | { readonly ok: false; readonly message: string };

const typeNames = Object.fromEntries(
  Object.entries(ggufValueTypes).map(([name, code]) => [code, name]),
) as Record<number, keyof typeof ggufValueTypes>;

class ByteSource {
  at = 0;
  constructor(private readonly bytes: Buffer) {}

  need(count: number): void {
    if (this.at + count > this.bytes.length)
      throw new RangeError(`truncated at byte ${this.at} (needs ${count} more)`);
  }

  u32(): number {
    this.need(4);
    const value = this.bytes.readUInt32LE(this.at);
    this.at += 4;
    return value;
  }

  u64(): number {
    this.need(8);
    const value = this.bytes.readBigUInt64LE(this.at);
    this.at += 8;
    if (value > BigInt(Number.MAX_SAFE_INTEGER)) throw new RangeError(`u64 ${value} too large`);
    return Number(value);
  }

  string(): string {
    const length = this.u64();
    this.need(length);
    const text = this.bytes.toString('utf8', this.at, this.at + length);
    this.at += length;
    return text;
  }

  value(type: number): GgufReadValue {
    const name = typeNames[type];
    if (name === undefined) throw new RangeError(`unknown value type ${type} at byte ${this.at}`);
    if (name === 'array') {
      const itemType = this.u32();
      const count = this.u64();
      const items: GgufReadValue[] = [];
      for (let i = 0; i < count; i += 1) items.push(this.value(itemType));
      return items;
    }
    return this.scalar(name);
  }

  private scalar(name: GgufScalarType): GgufReadValue {
    const sizes: Record<GgufScalarType, number> = {
      uint8: 1,
      int8: 1,
      bool: 1,
      uint16: 2,
      int16: 2,
      uint32: 4,
      int32: 4,
      float32: 4,
      uint64: 8,
      int64: 8,
      float64: 8,
      string: 0,
    };
    if (name === 'string') return this.string();
    this.need(sizes[name]);
    const b = this.bytes;
    const at = this.at;
    this.at += sizes[name];
    switch (name) {
      case 'uint8':
        return b.readUInt8(at);
      case 'int8':
        return b.readInt8(at);
      case 'bool':
        return b.readUInt8(at) !== 0;
      case 'uint16':
        return b.readUInt16LE(at);
      case 'int16':
        return b.readInt16LE(at);
      case 'uint32':
        return b.readUInt32LE(at);
      case 'int32':
        return b.readInt32LE(at);
      case 'float32':
        return b.readFloatLE(at);
      case 'uint64':
        return b.readBigUInt64LE(at);
      case 'int64':
        return b.readBigInt64LE(at);
      case 'float64':
        return b.readDoubleLE(at);
    }
  }
}

/** Parses GGUF bytes; every refusal says what and where. */
export function parseGguf(bytes: Buffer): GgufReadResult {
  const source = new ByteSource(bytes);
  try {
    const magic = source.u32();
    if (magic !== ggufMagic) return { ok: false, message: 'not a GGUF file (bad magic)' };
    const version = source.u32();
    if (version !== 3) return { ok: false, message: `GGUF version ${version}; only 3 is read` };
    const tensorCount = source.u64();
    const metadataCount = source.u64();
    const metadata = new Map<string, { type: number; value: GgufReadValue }>();
    for (let i = 0; i < metadataCount; i += 1) {
      const key = source.string();
      const type = source.u32();
      metadata.set(key, { type, value: source.value(type) });
    }
    const tensors: GgufTensorInfo[] = [];
    for (let i = 0; i < tensorCount; i += 1) {
      const name = source.string();
      const nDims = source.u32();
      const dims: number[] = [];
      for (let d = 0; d < nDims; d += 1) dims.push(source.u64());
      tensors.push({ name, dims, ggmlType: source.u32(), offset: source.u64() });
    }
    const alignmentEntry = metadata.get('general.alignment')?.value;
    const alignment = typeof alignmentEntry === 'number' ? alignmentEntry : ggufDefaultAlignment;
    const dataStart = Math.ceil(source.at / alignment) * alignment;
    const f32 = (name: string): Float32Array => {
      const info = tensors.find((t) => t.name === name);
      if (info === undefined) throw new RangeError(`no tensor ${name}`);
      if (info.ggmlType !== ggmlTypeF32) throw new RangeError(`${name} is not F32`);
      const count = info.dims.reduce((p, d) => p * d, 1);
      const start = dataStart + info.offset;
      if (start + count * 4 > bytes.length) throw new RangeError(`${name} runs past the file`);
      const out = new Float32Array(count);
      for (let i = 0; i < count; i += 1) out[i] = bytes.readFloatLE(start + i * 4);
      return out;
    };
    return { ok: true, file: { version, metadata, tensors, dataStart, f32 } };
  } catch (error) {
    return { ok: false, message: `GGUF: ${(error as Error).message}` };
  }
}

export async function readGguf(path: string): Promise<GgufReadResult> {
  return parseGguf(await readFile(path));
}
