// The decode hot loops: one per datatype family. Each reads JSON values `values[from..to)`
// and writes them to `out` starting at `out[at]`, checking kind and range as it goes. They
// allocate nothing, return -1 when every element was taken, or else the index (in `values`)
// of the first one that was not; describeElementError() then says why, off the hot path.

import type { DatatypeInfo } from './datatypes.ts';
import { bf16BitsFromNumber, fp16BitsFromNumber } from './datatypes.ts';
import { jsonKind, preview } from './errors.ts';

export type IntegerArray =
  Int8Array | Int16Array | Int32Array | Uint8Array | Uint16Array | Uint32Array;
export type Int64Array = BigInt64Array | BigUint64Array;

const fp32OverflowAt = 2 ** 128 - 2 ** 103;

export function fillFloat32(
  values: readonly unknown[],
  from: number,
  to: number,
  out: Float32Array,
  at: number,
  allowNonFinite: boolean,
): number {
  const shift = at - from;
  for (let i = from; i < to; i++) {
    const v = values[i];
    if (typeof v === 'number') {
      // One comparison pair covers the common case; NaN fails it and drops to the checks below.
      if (v > -fp32OverflowAt && v < fp32OverflowAt) {
        out[i + shift] = v;
        continue;
      }
      if (allowNonFinite && (v !== v || v === Infinity || v === -Infinity)) {
        out[i + shift] = v;
        continue;
      }
      return i;
    }
    if (v === null && allowNonFinite) {
      out[i + shift] = NaN;
      continue;
    }
    if (typeof v === 'bigint') {
      const n = Number(v);
      if (n > -fp32OverflowAt && n < fp32OverflowAt) {
        out[i + shift] = n;
        continue;
      }
    }
    return i;
  }
  return -1;
}

export function fillFloat64(
  values: readonly unknown[],
  from: number,
  to: number,
  out: Float64Array,
  at: number,
  allowNonFinite: boolean,
): number {
  const shift = at - from;
  for (let i = from; i < to; i++) {
    const v = values[i];
    if (typeof v === 'number') {
      // v - v is 0 exactly when v is finite.
      if (v - v === 0 || allowNonFinite) {
        out[i + shift] = v;
        continue;
      }
      return i;
    }
    if (v === null && allowNonFinite) {
      out[i + shift] = NaN;
      continue;
    }
    if (typeof v === 'bigint') {
      const n = Number(v);
      if (n - n === 0) {
        out[i + shift] = n;
        continue;
      }
    }
    return i;
  }
  return -1;
}

/** FP16 and BF16: numbers to raw bit patterns in a Uint16Array. */
export function fillHalf(
  values: readonly unknown[],
  from: number,
  to: number,
  out: Uint16Array,
  at: number,
  info: DatatypeInfo,
  allowNonFinite: boolean,
): number {
  const toBits = info.datatype === 'BF16' ? bf16BitsFromNumber : fp16BitsFromNumber;
  const limit = info.overflowAt;
  const shift = at - from;
  for (let i = from; i < to; i++) {
    const v = values[i];
    let n: number;
    if (typeof v === 'number') n = v;
    else if (typeof v === 'bigint') n = Number(v);
    else if (v === null && allowNonFinite) n = NaN;
    else return i;
    if (
      (n > -limit && n < limit) ||
      (allowNonFinite && (n !== n || n === Infinity || n === -Infinity))
    )
      out[i + shift] = toBits(n);
    else return i;
  }
  return -1;
}

/** INT8..INT32 and UINT8..UINT32 (BOOL has its own loop). */
export function fillInteger(
  values: readonly unknown[],
  from: number,
  to: number,
  out: IntegerArray,
  at: number,
  min: number,
  max: number,
): number {
  const shift = at - from;
  for (let i = from; i < to; i++) {
    const v = values[i];
    if (typeof v === 'number' && v >= min && v <= max && Number.isInteger(v)) out[i + shift] = v;
    else return i;
  }
  return -1;
}

// Safe-integer numbers go in as two 32-bit words through a Uint32Array view of the same
// buffer, so no BigInt is made per element. Word order follows the platform's endianness.
//
//   element i:  words[2i + loLane] = low 32 bits,  words[2i + hiLane] = high 32 bits (two's
//               complement: a negative high word wraps modulo 2^32 when stored)
const littleEndian = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
const loLane = littleEndian ? 0 : 1;
const hiLane = 1 - loLane;
const twoTo32 = 4294967296;

/** INT64 and UINT64. `words` is a Uint32Array view of `out`'s bytes. */
export function fillInt64(
  values: readonly unknown[],
  from: number,
  to: number,
  out: Int64Array,
  words: Uint32Array,
  at: number,
  info: DatatypeInfo,
): number {
  const shift = at - from;
  const min = info.min;
  for (let i = from; i < to; i++) {
    const v = values[i];
    if (typeof v === 'number') {
      if (!Number.isSafeInteger(v) || v < min) return i;
      let lo = v % twoTo32;
      let hi = (v - lo) / twoTo32;
      if (lo < 0) {
        lo += twoTo32;
        hi -= 1;
      }
      const j = (i + shift) * 2;
      words[j + loLane] = lo;
      words[j + hiLane] = hi;
    } else if (typeof v === 'bigint' && v >= info.minBig && v <= info.maxBig) {
      out[i + shift] = v;
    } else return i;
  }
  return -1;
}

export function fillBool(
  values: readonly unknown[],
  from: number,
  to: number,
  out: Uint8Array,
  at: number,
): number {
  const shift = at - from;
  for (let i = from; i < to; i++) {
    const v = values[i];
    if (v === true) out[i + shift] = 1;
    else if (v === false) out[i + shift] = 0;
    else return i;
  }
  return -1;
}

/** BYTES. `out` null checks the kinds without keeping the strings. */
export function fillBytes(
  values: readonly unknown[],
  from: number,
  to: number,
  out: string[] | null,
  at: number,
): number {
  const shift = at - from;
  for (let i = from; i < to; i++) {
    const v = values[i];
    if (typeof v !== 'string') return i;
    if (out !== null) out[i + shift] = v;
  }
  return -1;
}

/** Why an element a fill loop refused was refused: `is a string, expected FP32 numbers`. */
export interface ElementProblem {
  readonly text: string;
  /** An integer beyond ±(2^53−1) for INT64/UINT64: JSON.parse may have rounded it. */
  readonly inexactInteger: boolean;
}

export function describeElementError(
  value: unknown,
  info: DatatypeInfo,
  allowNonFinite: boolean,
): ElementProblem {
  const expected = info.expected;
  if (value === null) {
    return {
      text: info.acceptsNull
        ? 'is null (a missing value); this model does not accept missing or non-finite values here'
        : 'is null; missing values (null) are accepted only for FP16, FP32, FP64 and BF16 inputs',
      inexactInteger: false,
    };
  }
  if (typeof value === 'string') {
    const hint =
      info.acceptsNull && /^[+-]?(nan|inf|infinity)$/i.test(value)
        ? ' (send NaN, Infinity or -Infinity as bare tokens, or null for a missing value)'
        : '';
    return { text: `is a string, expected ${expected}${hint}`, inexactInteger: false };
  }
  if (typeof value !== 'number' && typeof value !== 'bigint') {
    return { text: `is ${jsonKind(value)}, expected ${expected}`, inexactInteger: false };
  }
  return {
    text: describeNumber(value, info, allowNonFinite),
    inexactInteger: isInexact(value, info),
  };
}

function isInexact(value: number | bigint, info: DatatypeInfo): boolean {
  // A number past 2^53 that would fit INT64/UINT64: JSON.parse may have rounded its digits.
  return (
    info.family === 'int64' &&
    typeof value === 'number' &&
    Number.isInteger(value) &&
    !Number.isSafeInteger(value) &&
    value >= Number(info.minBig) &&
    value <= Number(info.maxBig)
  );
}

function describeNumber(
  value: number | bigint,
  info: DatatypeInfo,
  allowNonFinite: boolean,
): string {
  const shown = preview(value);
  switch (info.family) {
    case 'bool':
      return `is a number, expected ${info.expected} (0 and 1 are not accepted)`;
    case 'bytes':
      return `is a number, expected ${info.expected}`;
    case 'float32':
    case 'float64':
    case 'half': {
      const n = Number(value);
      const finite = n - n === 0;
      if (!finite && !allowNonFinite) {
        return `is ${shown}; this model does not accept missing or non-finite values here`;
      }
      return `(${shown}) is out of range for ${info.datatype}`;
    }
    case 'integer':
    case 'int64':
      if (typeof value === 'number' && !Number.isInteger(value)) {
        return `(${shown}) is not an integer, expected ${info.expected}`;
      }
      if (isInexact(value, info)) {
        return `(${shown}) is beyond ±(2^53−1), where a JSON number may have lost digits; decode ${info.datatype} data from the request text (parseInferRequest) to read it exactly`;
      }
      return `(${shown}) is out of range for ${info.datatype} (${info.minBig}..${info.maxBig})`;
  }
}
