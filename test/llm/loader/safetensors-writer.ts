// Writes safetensors files for the loader tests, byte by byte as the reference writer does:
//
//   [ u64 LE header length N ][ JSON header, space-padded to a multiple of 8 ][ tensor bytes ]
//
// `safetensorsBytes` lays tensors out back to back in the given order (a valid file);
// `safetensorsWithHeader` takes any header object and data bytes, for headers that lie.

export interface WriterTensor {
  readonly dtype: string;
  readonly shape: readonly number[];
  /** Raw little-endian element bytes. */
  readonly bytes: Uint8Array;
}

export function safetensorsBytes(
  tensors: Readonly<Record<string, WriterTensor>>,
  metadata: Readonly<Record<string, string>> = { format: 'pt' },
): Buffer {
  const header: Record<string, unknown> = { __metadata__: metadata };
  const parts: Uint8Array[] = [];
  let offset = 0;
  for (const [name, tensor] of Object.entries(tensors)) {
    header[name] = {
      dtype: tensor.dtype,
      shape: tensor.shape,
      data_offsets: [offset, offset + tensor.bytes.length],
    };
    parts.push(tensor.bytes);
    offset += tensor.bytes.length;
  }
  return safetensorsWithHeader(header, Buffer.concat(parts));
}

export function safetensorsWithHeader(
  header: Readonly<Record<string, unknown>>,
  data: Uint8Array,
): Buffer {
  let json = JSON.stringify(header);
  while ((8 + Buffer.byteLength(json)) % 8 !== 0) json += ' ';
  const prefix = Buffer.alloc(8);
  prefix.writeBigUInt64LE(BigInt(Buffer.byteLength(json)));
  return Buffer.concat([prefix, Buffer.from(json, 'utf8'), data]);
}

/** Float32 little-endian bytes. */
export function f32Bytes(values: ArrayLike<number>): Uint8Array {
  const out = Buffer.alloc(values.length * 4);
  for (let i = 0; i < values.length; i += 1) out.writeFloatLE(values[i] ?? 0, i * 4);
  return out;
}

/** 16-bit patterns (F16 or BF16) as little-endian bytes. */
export function u16Bytes(bits: ArrayLike<number>): Uint8Array {
  const out = Buffer.alloc(bits.length * 2);
  for (let i = 0; i < bits.length; i += 1) out.writeUInt16LE(bits[i] ?? 0, i * 2);
  return out;
}

/** BF16 pattern of a value that bfloat16 holds exactly (the top half of its float32 bits). */
export function bfloat16Bits(value: number): number {
  const view = new DataView(new ArrayBuffer(4));
  view.setFloat32(0, value);
  if (view.getUint16(2) !== 0 || view.getFloat32(0) !== value) {
    throw new RangeError(`${value} is not exactly representable in bfloat16`);
  }
  return view.getUint16(0);
}

/** F16 pattern of a normal (or zero) value that binary16 holds exactly. */
export function float16Bits(value: number): number {
  if (value === 0) return Object.is(value, -0) ? 0x8000 : 0;
  const sign = value < 0 ? 0x8000 : 0;
  const magnitude = Math.abs(value);
  const exponent = Math.floor(Math.log2(magnitude));
  const mantissa = (magnitude / 2 ** exponent - 1) * 1024;
  if (exponent < -14 || exponent > 15 || !Number.isInteger(mantissa)) {
    throw new RangeError(`${value} is not exactly representable as a normal float16`);
  }
  return sign | ((exponent + 15) << 10) | mantissa;
}
