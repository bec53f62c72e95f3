// Writes a GGUF file of float32 tensors (layout in gguf-format.ts). The header is built in
// memory (metadata and tensor table are small); the tensors are written one at a time from
// callbacks, so a converter never holds a second copy of a whole model.

import { open } from 'node:fs/promises';

import {
  ggmlTypeF32,
  ggufDefaultAlignment,
  ggufMagic,
  ggufValueTypes,
  ggufVersion,
  type GgufValue,
} from './gguf-format.ts';

export interface GgufTensorSource {
  /** llama.cpp's tensor name: `token_embd.weight`, `blk.0.attn_q.weight`, ... */
  readonly name: string;
  /** Row-major shape, outermost first (PyTorch's order); written reversed, as ggml wants. */
  readonly shape: readonly number[];
  /** The elements in row-major order; called once, when the tensor is written. */
  readonly data: () => Float32Array;
}

export interface GgufContents {
  /** Metadata in writing order (llama.cpp reads by key; order only matters to people). */
  readonly metadata: ReadonlyMap<string, GgufValue>;
  readonly tensors: readonly GgufTensorSource[];
}

/** Appends little-endian values to a growing buffer. */
class ByteSink {
  private buffer = Buffer.alloc(1 << 16);
  length = 0;

  private reserve(bytes: number): void {
    if (this.length + bytes <= this.buffer.length) return;
    const grown = Buffer.alloc(Math.max(this.buffer.length * 2, this.length + bytes));
    this.buffer.copy(grown, 0, 0, this.length);
    this.buffer = grown;
  }

  u32(value: number): void {
    this.reserve(4);
    this.buffer.writeUInt32LE(value, this.length);
    this.length += 4;
  }

  u64(value: number | bigint): void {
    this.reserve(8);
    this.buffer.writeBigUInt64LE(BigInt(value), this.length);
    this.length += 8;
  }

  string(text: string): void {
    const bytes = Buffer.from(text, 'utf8');
    this.u64(bytes.length);
    this.raw(bytes);
  }

  raw(bytes: Uint8Array): void {
    this.reserve(bytes.length);
    this.buffer.set(bytes, this.length);
    this.length += bytes.length;
  }

  scalar(
    type: Exclude<GgufValue['type'], 'array'>,
    value: number | bigint | boolean | string,
  ): void {
    this.reserve(8);
    const at = this.length;
    const b = this.buffer;
    switch (type) {
      case 'uint8':
        b.writeUInt8(value as number, at);
        this.length += 1;
        return;
      case 'int8':
        b.writeInt8(value as number, at);
        this.length += 1;
        return;
      case 'uint16':
        b.writeUInt16LE(value as number, at);
        this.length += 2;
        return;
      case 'int16':
        b.writeInt16LE(value as number, at);
        this.length += 2;
        return;
      case 'uint32':
        b.writeUInt32LE(value as number, at);
        this.length += 4;
        return;
      case 'int32':
        b.writeInt32LE(value as number, at);
        this.length += 4;
        return;
      case 'float32':
        b.writeFloatLE(value as number, at);
        this.length += 4;
        return;
      case 'float64':
        b.writeDoubleLE(value as number, at);
        this.length += 8;
        return;
      case 'uint64':
        b.writeBigUInt64LE(value as bigint, at);
        this.length += 8;
        return;
      case 'int64':
        b.writeBigInt64LE(value as bigint, at);
        this.length += 8;
        return;
      case 'bool':
        b.writeUInt8(value === true ? 1 : 0, at);
        this.length += 1;
        return;
      case 'string':
        this.string(value as string);
        return;
    }
  }

  bytes(): Buffer {
    return this.buffer.subarray(0, this.length);
  }
}

function alignUp(offset: number, alignment: number): number {
  return Math.ceil(offset / alignment) * alignment;
}

/** The header: magic, counts, metadata, tensor table, padding to the data section. */
export function ggufHeaderBytes(contents: GgufContents): Buffer {
  const alignment = alignmentOf(contents);
  const sink = new ByteSink();
  sink.u32(ggufMagic);
  sink.u32(ggufVersion);
  sink.u64(contents.tensors.length);
  sink.u64(contents.metadata.size);
  for (const [key, value] of contents.metadata) {
    sink.string(key);
    sink.u32(ggufValueTypes[value.type]);
    if (value.type === 'array') {
      sink.u32(ggufValueTypes[value.itemType]);
      sink.u64(value.value.length);
      for (const item of value.value) sink.scalar(value.itemType, item);
    } else {
      sink.scalar(value.type, value.value);
    }
  }
  let offset = 0;
  for (const tensor of contents.tensors) {
    sink.string(tensor.name);
    sink.u32(tensor.shape.length);
    for (const dim of [...tensor.shape].reverse()) sink.u64(dim);
    sink.u32(ggmlTypeF32);
    sink.u64(offset);
    offset = alignUp(offset + elementCount(tensor.shape) * 4, alignment);
  }
  sink.raw(new Uint8Array(alignUp(sink.length, alignment) - sink.length));
  return sink.bytes();
}

function alignmentOf(contents: GgufContents): number {
  const given = contents.metadata.get('general.alignment');
  return given?.type === 'uint32' ? given.value : ggufDefaultAlignment;
}

function elementCount(shape: readonly number[]): number {
  return shape.reduce((product, dim) => product * dim, 1);
}

/** Writes `contents` to `path` (replacing it); returns the bytes written. */
export async function writeGguf(path: string, contents: GgufContents): Promise<number> {
  const alignment = alignmentOf(contents);
  const header = ggufHeaderBytes(contents);
  const file = await open(path, 'w');
  try {
    let position = 0;
    await file.write(header, 0, header.length, position);
    position += header.length;
    for (const tensor of contents.tensors) {
      const data = tensor.data();
      if (data.length !== elementCount(tensor.shape)) {
        throw new Error(
          `tensor ${tensor.name}: ${data.length} elements for shape [${tensor.shape.join(', ')}]`,
        );
      }
      // Float32Array bytes are host order; the loader already refuses big-endian hosts.
      const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
      await file.write(bytes, 0, bytes.length, position);
      position += bytes.length;
      const padded = alignUp(position - header.length, alignment) + header.length;
      if (padded > position) {
        await file.write(new Uint8Array(padded - position), 0, padded - position, position);
        position = padded;
      }
    }
    return position;
  } finally {
    await file.close();
  }
}
