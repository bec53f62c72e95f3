// Safetensors header parser. The format:
//
//   [ N: u64 little-endian ][ N bytes: UTF-8 JSON object ][ data section ............ ]
//   0                      8                             8+N                      size
//
// The JSON maps tensor names to { dtype, shape, data_offsets: [begin, end] } with offsets
// relative to the data section, plus an optional "__metadata__" string-to-string map. Only the
// 8 + N header bytes are read, never the weights. The LLM engine reuses this parser to find
// tensors by offset.

import type { ArtifactFile } from './artifact-file.ts';

export type SafetensorsDtype =
  | 'BOOL'
  | 'U8'
  | 'I8'
  | 'F8_E5M2'
  | 'F8_E4M3'
  | 'F8_E8M0'
  | 'I16'
  | 'U16'
  | 'F16'
  | 'BF16'
  | 'I32'
  | 'U32'
  | 'F32'
  | 'F64'
  | 'I64'
  | 'U64'
  | 'C64'
  | 'F4'
  | 'F6_E2M3'
  | 'F6_E3M2';

/** Bits per element. F4 and F6 pack several elements in a byte. */
export const safetensorsDtypeBits: Readonly<Record<SafetensorsDtype, number>> = {
  BOOL: 8,
  U8: 8,
  I8: 8,
  F8_E5M2: 8,
  F8_E4M3: 8,
  F8_E8M0: 8,
  I16: 16,
  U16: 16,
  F16: 16,
  BF16: 16,
  I32: 32,
  U32: 32,
  F32: 32,
  F64: 64,
  I64: 64,
  U64: 64,
  C64: 64,
  F4: 4,
  F6_E2M3: 6,
  F6_E3M2: 6,
};

export interface SafetensorsTensor {
  readonly name: string;
  readonly dtype: SafetensorsDtype;
  readonly shape: readonly number[];
  readonly numElements: number;
  /** [begin, end) relative to the data section; add SafetensorsHeader.dataStart for file offsets. */
  readonly dataOffsets: readonly [number, number];
}

export interface SafetensorsHeader {
  /** N, the JSON header's length in bytes. */
  readonly headerBytes: number;
  /** File offset of the data section: 8 + N. */
  readonly dataStart: number;
  /** Size of the data section: file size - 8 - N. */
  readonly dataBytes: number;
  readonly metadata: Readonly<Record<string, string>> | null;
  /** In the header's order. */
  readonly tensors: readonly SafetensorsTensor[];
}

export type SafetensorsHeaderResult =
  | { readonly ok: true; readonly header: SafetensorsHeader }
  | { readonly ok: false; readonly reason: string };

/** The safetensors reference implementation refuses headers over 100 MB; so do we. */
export const maxSafetensorsHeaderBytes = 100_000_000;

const utf8 = new TextDecoder('utf-8', { fatal: true });

export async function readSafetensorsHeader(file: ArtifactFile): Promise<SafetensorsHeaderResult> {
  const fail = (why: string): SafetensorsHeaderResult => ({
    ok: false,
    reason: `${file.path}: ${why}`,
  });
  if (file.size < 8) return fail(`${file.size} bytes is too short for a safetensors file`);
  const prefix = await file.read(0, 8);
  if (prefix.length < 8) return fail('file ended inside the 8-byte header length');
  const declared = prefix.readBigUInt64LE(0);
  if (declared > BigInt(maxSafetensorsHeaderBytes)) {
    return fail(
      `header length ${declared} is over the ${maxSafetensorsHeaderBytes}-byte limit; not a safetensors file?`,
    );
  }
  const headerBytes = Number(declared);
  if (headerBytes > file.size - 8) {
    return fail(`header length ${headerBytes} is larger than the ${file.size - 8} bytes after it`);
  }
  const raw = await file.read(8, headerBytes);
  if (raw.length < headerBytes) return fail('file ended inside the JSON header');
  let json: unknown;
  try {
    const text = utf8.decode(raw);
    if (!text.startsWith('{')) return fail('the header is not a JSON object');
    json = JSON.parse(text) as unknown;
  } catch (error) {
    return fail(
      `the header is not valid UTF-8 JSON (${error instanceof Error ? error.message : String(error)})`,
    );
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    return fail('the header is not a JSON object');
  }
  const dataStart = 8 + headerBytes;
  const dataBytes = file.size - dataStart;
  let metadata: Record<string, string> | null = null;
  const tensors: SafetensorsTensor[] = [];
  for (const [name, entry] of Object.entries(json)) {
    if (name === '__metadata__') {
      const checked = parseMetadata(entry);
      if (checked === null) return fail('__metadata__ must map strings to strings');
      metadata = checked;
      continue;
    }
    const tensor = parseTensor(name, entry, dataBytes);
    if (typeof tensor === 'string') return fail(tensor);
    tensors.push(tensor);
  }
  const overlap = findOverlap(tensors);
  if (overlap !== null) return fail(overlap);
  return { ok: true, header: { headerBytes, dataStart, dataBytes, metadata, tensors } };
}

function parseMetadata(value: unknown): Record<string, string> | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return null;
  const out: Record<string, string> = {};
  for (const [key, item] of Object.entries(value)) {
    if (typeof item !== 'string') return null;
    out[key] = item;
  }
  return out;
}

function parseTensor(name: string, entry: unknown, dataBytes: number): SafetensorsTensor | string {
  if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) {
    return `tensor '${name}' is not an object`;
  }
  const { dtype, shape, data_offsets: offsets } = entry as Record<string, unknown>;
  if (typeof dtype !== 'string' || !Object.hasOwn(safetensorsDtypeBits, dtype)) {
    return `tensor '${name}' has unknown dtype ${JSON.stringify(dtype)}`;
  }
  const bits = safetensorsDtypeBits[dtype as SafetensorsDtype];
  if (!Array.isArray(shape) || !shape.every((d) => Number.isSafeInteger(d) && (d as number) >= 0)) {
    return `tensor '${name}' has a shape that is not a list of non-negative integers`;
  }
  const dims = shape as number[];
  const numElements = dims.reduce((product, d) => product * d, 1);
  if (!Number.isSafeInteger(numElements)) return `tensor '${name}' has too many elements`;
  if (
    !Array.isArray(offsets) ||
    offsets.length !== 2 ||
    !offsets.every((o) => Number.isSafeInteger(o) && (o as number) >= 0)
  ) {
    return `tensor '${name}' has data_offsets that are not two non-negative integers`;
  }
  const [begin, end] = offsets as [number, number];
  if (end < begin)
    return `tensor '${name}' has data_offsets [${begin}, ${end}] that end before they begin`;
  if ((numElements * bits) % 8 !== 0) {
    return `tensor '${name}' (${dtype}, shape [${dims.join(', ')}]) does not fill whole bytes`;
  }
  const expected = (numElements * bits) / 8;
  if (end - begin !== expected) {
    return `tensor '${name}' is ${end - begin} bytes but ${dtype} × [${dims.join(', ')}] needs ${expected}`;
  }
  if (end > dataBytes) {
    return `tensor '${name}' ends at byte ${end} of a ${dataBytes}-byte data section (truncated file?)`;
  }
  return {
    name,
    dtype: dtype as SafetensorsDtype,
    shape: dims,
    numElements,
    dataOffsets: [begin, end],
  };
}

/** Gaps between tensors are allowed; overlapping bytes are not. */
function findOverlap(tensors: readonly SafetensorsTensor[]): string | null {
  const sorted = tensors
    .filter((t) => t.dataOffsets[1] > t.dataOffsets[0])
    .sort((a, b) => a.dataOffsets[0] - b.dataOffsets[0]);
  for (let i = 1; i < sorted.length; i += 1) {
    const previous = sorted[i - 1];
    const current = sorted[i];
    if (
      previous !== undefined &&
      current !== undefined &&
      current.dataOffsets[0] < previous.dataOffsets[1]
    ) {
      const range = (t: SafetensorsTensor): string => `[${t.dataOffsets[0]}, ${t.dataOffsets[1]})`;
      return `tensors '${previous.name}' ${range(previous)} and '${current.name}' ${range(current)} overlap`;
    }
  }
  return null;
}
