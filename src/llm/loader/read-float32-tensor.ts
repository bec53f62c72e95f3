// Reads one tensor's byte range from an open safetensors file into a new Float32Array.
//
// Memory: F32 bytes are read straight into the result (no intermediate copy). F16 and BF16
// are read through a caller-owned scratch buffer, one chunk at a time, and widened into the
// result, so loading a model holds each tensor once plus one fixed-size scratch, never a
// whole file.

import type { FileHandle } from 'node:fs/promises';
import type { SafetensorsTensor } from '../../registry/formats/safetensors.ts';
import { bfloat16ToFloat32, float16ToFloat32 } from './half-float.ts';

/** The dtypes the loader converts; everything else is refused by name. */
export type LoadableDtype = 'F32' | 'F16' | 'BF16';

export function isLoadableDtype(dtype: string): dtype is LoadableDtype {
  return dtype === 'F32' || dtype === 'F16' || dtype === 'BF16';
}

/** Elements per scratch chunk for 16-bit dtypes: 1 Mi elements = 2 MiB of scratch. */
export const scratchElements = 1 << 20;

/** Largest single read(2) we issue; Node refuses reads over 2 GiB. */
const maxReadBytes = 1 << 30;

/** Typed arrays view host memory; safetensors is little-endian. */
export const littleEndianHost = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

export type Float32TensorResult =
  | { readonly ok: true; readonly data: Float32Array }
  | { readonly ok: false; readonly message: string };

export interface TensorSource {
  readonly handle: FileHandle;
  /** For messages. */
  readonly path: string;
  /** File offset of the data section (8 + header length). */
  readonly dataStart: number;
}

export async function readFloat32Tensor(
  source: TensorSource,
  tensor: SafetensorsTensor,
  scratch: Uint16Array,
): Promise<Float32TensorResult> {
  const fail = (why: string): Float32TensorResult => ({
    ok: false,
    message: `${source.path}: tensor '${tensor.name}' ${why}`,
  });
  const { dtype } = tensor;
  if (!isLoadableDtype(dtype)) return fail(`has dtype ${dtype}; only F32, F16 and BF16 load`);
  let data: Float32Array;
  try {
    data = new Float32Array(tensor.numElements);
  } catch (error) {
    return fail(`(${tensor.numElements} elements) cannot be allocated: ${describeError(error)}`);
  }
  const position = source.dataStart + tensor.dataOffsets[0];
  if (dtype === 'F32') {
    const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    const got = await readFully(source.handle, bytes, position);
    if (got !== bytes.length) return fail(truncated(got, bytes.length));
    return { ok: true, data };
  }
  const widen = dtype === 'F16' ? float16ToFloat32 : bfloat16ToFloat32;
  for (let done = 0; done < tensor.numElements; done += scratch.length) {
    const count = Math.min(scratch.length, tensor.numElements - done);
    const chunk = scratch.subarray(0, count);
    const bytes = new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    const got = await readFully(source.handle, bytes, position + done * 2);
    if (got !== bytes.length) return fail(truncated(done * 2 + got, tensor.numElements * 2));
    widen(chunk, data, done);
  }
  return { ok: true, data };
}

function truncated(got: number, wanted: number): string {
  return `ends early: read ${got} of its ${wanted} bytes (file truncated or changed while loading?)`;
}

/** Reads until `target` is full or the file ends; returns the number of bytes read. */
async function readFully(
  handle: FileHandle,
  target: Uint8Array,
  position: number,
): Promise<number> {
  let filled = 0;
  while (filled < target.length) {
    const length = Math.min(maxReadBytes, target.length - filled);
    const { bytesRead } = await handle.read(target, filled, length, position + filled);
    if (bytesRead === 0) break;
    filled += bytesRead;
  }
  return filled;
}

function describeError(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
