// The v2 datatypes as the codec handles them: the typed array each decodes into (see
// src/core/tensor.ts), the JSON elements each accepts, integer ranges, and the FP16/BF16
// conversions between JS numbers and raw bit patterns (round to nearest, ties to even).
//
//   datatype        JSON elements           typed array      range / notes
//   BOOL            true, false             Uint8Array       0/1 are refused (Triton does too)
//   UINT8..UINT32   integers                Uint8..32Array   0..2^n−1
//   INT8..INT32     integers                Int8..32Array    −2^(n−1)..2^(n−1)−1
//   UINT64, INT64   integers                Big(U)Int64Array exact beyond 2^53 only via bigint
//   FP16, BF16      numbers, null, NaN, ±Inf Uint16Array     raw bits; overflow is an error
//   FP32, FP64      numbers, null, NaN, ±Inf Float32/64Array null = missing = NaN
//   BYTES           strings                 string[]

import type { TensorData, TensorDatatype } from '../../core/tensor.ts';
import { tensorDatatypes } from '../../core/tensor.ts';

/** How elements of a datatype are read and checked; one decode loop per family. */
export type DatatypeFamily =
  'bool' | 'integer' | 'int64' | 'float32' | 'float64' | 'half' | 'bytes';

export interface DatatypeInfo {
  readonly datatype: TensorDatatype;
  readonly family: DatatypeFamily;
  /** Bytes per element in the typed array; 0 for BYTES (variable length). */
  readonly bytesPerElement: number;
  /** The accepted JSON elements, as error messages say it: `FP32 numbers`. */
  readonly expected: string;
  /** Whether JSON `null` (a missing value, decoded as NaN) is accepted. */
  readonly acceptsNull: boolean;
  /** Inclusive integer range (integer and int64 families; ±Infinity otherwise). */
  readonly min: number;
  readonly max: number;
  /** The same range as bigints (int64 family: the full 64-bit range). */
  readonly minBig: bigint;
  readonly maxBig: bigint;
  /** Float families: magnitudes at or above this round to ±Infinity (an error). */
  readonly overflowAt: number;
  /** A zeroed container for `count` elements. */
  readonly allocate: (count: number) => TensorData;
  /** Whether `data` is the container this datatype uses (checked when encoding). */
  readonly holds: (data: TensorData) => boolean;
}

// Float overflow thresholds: max finite + half an ulp; the tie rounds to even = up to Infinity.
const fp32OverflowAt = 2 ** 128 - 2 ** 103;
const fp16OverflowAt = 65520;
const bf16OverflowAt = 2 ** 128 - 2 ** 119;

function integer(
  datatype: TensorDatatype,
  bytesPerElement: number,
  min: number,
  max: number,
  allocate: (count: number) => TensorData,
  holds: (data: TensorData) => boolean,
): DatatypeInfo {
  return {
    datatype,
    family: 'integer',
    bytesPerElement,
    expected: `${datatype} integers`,
    acceptsNull: false,
    min,
    max,
    minBig: BigInt(min),
    maxBig: BigInt(max),
    overflowAt: Infinity,
    allocate,
    holds,
  };
}

function float(
  datatype: TensorDatatype,
  family: 'float32' | 'float64' | 'half',
  bytesPerElement: number,
  overflowAt: number,
  allocate: (count: number) => TensorData,
  holds: (data: TensorData) => boolean,
): DatatypeInfo {
  return {
    datatype,
    family,
    bytesPerElement,
    expected: `${datatype} numbers`,
    acceptsNull: true,
    min: -Infinity,
    max: Infinity,
    minBig: 0n,
    maxBig: 0n,
    overflowAt,
    allocate,
    holds,
  };
}

const isUint8 = (d: TensorData): boolean => d instanceof Uint8Array;
const isUint16 = (d: TensorData): boolean => d instanceof Uint16Array;

export const datatypeInfo: Readonly<Record<TensorDatatype, DatatypeInfo>> = {
  BOOL: {
    ...integer('BOOL', 1, 0, 1, (n) => new Uint8Array(n), isUint8),
    family: 'bool',
    expected: 'BOOL true/false',
  },
  UINT8: integer('UINT8', 1, 0, 255, (n) => new Uint8Array(n), isUint8),
  UINT16: integer('UINT16', 2, 0, 65535, (n) => new Uint16Array(n), isUint16),
  UINT32: integer(
    'UINT32',
    4,
    0,
    4294967295,
    (n) => new Uint32Array(n),
    (d) => d instanceof Uint32Array,
  ),
  UINT64: {
    ...integer(
      'UINT64',
      8,
      0,
      Number.MAX_SAFE_INTEGER,
      (n) => new BigUint64Array(n),
      (d) => d instanceof BigUint64Array,
    ),
    family: 'int64',
    minBig: 0n,
    maxBig: 2n ** 64n - 1n,
  },
  INT8: integer(
    'INT8',
    1,
    -128,
    127,
    (n) => new Int8Array(n),
    (d) => d instanceof Int8Array,
  ),
  INT16: integer(
    'INT16',
    2,
    -32768,
    32767,
    (n) => new Int16Array(n),
    (d) => d instanceof Int16Array,
  ),
  INT32: integer(
    'INT32',
    4,
    -2147483648,
    2147483647,
    (n) => new Int32Array(n),
    (d) => d instanceof Int32Array,
  ),
  INT64: {
    ...integer(
      'INT64',
      8,
      -Number.MAX_SAFE_INTEGER,
      Number.MAX_SAFE_INTEGER,
      (n) => new BigInt64Array(n),
      (d) => d instanceof BigInt64Array,
    ),
    family: 'int64',
    minBig: -(2n ** 63n),
    maxBig: 2n ** 63n - 1n,
  },
  FP16: float('FP16', 'half', 2, fp16OverflowAt, (n) => new Uint16Array(n), isUint16),
  FP32: float(
    'FP32',
    'float32',
    4,
    fp32OverflowAt,
    (n) => new Float32Array(n),
    (d) => d instanceof Float32Array,
  ),
  FP64: float(
    'FP64',
    'float64',
    8,
    Infinity,
    (n) => new Float64Array(n),
    (d) => d instanceof Float64Array,
  ),
  BF16: float('BF16', 'half', 2, bf16OverflowAt, (n) => new Uint16Array(n), isUint16),
  BYTES: {
    datatype: 'BYTES',
    family: 'bytes',
    bytesPerElement: 0,
    expected: 'BYTES strings',
    acceptsNull: false,
    min: NaN,
    max: NaN,
    minBig: 0n,
    maxBig: 0n,
    overflowAt: Infinity,
    allocate: (n) => new Array<string>(n).fill(''),
    holds: (d) => Array.isArray(d),
  },
};

const datatypeSet: ReadonlySet<string> = new Set(tensorDatatypes);

export function isTensorDatatype(value: unknown): value is TensorDatatype {
  return typeof value === 'string' && datatypeSet.has(value);
}

// --- FP16 / BF16 ------------------------------------------------------------------------
//
//   FP16: s eeeee mmmmmmmmmm      bias 15,  subnormals down to 2^-24, max 65504
//   BF16: s eeeeeeee mmmmmmm      bias 127, subnormals down to 2^-133, max ≈ 3.39e38
//
// From a JS number (a double) straight to the 16-bit pattern, so there is one rounding, not
// two (double → float32 → half can round a tie the wrong way).

function roundHalfToEven(x: number): number {
  const floor = Math.floor(x);
  const rest = x - floor;
  return rest > 0.5 || (rest === 0.5 && floor % 2 !== 0) ? floor + 1 : floor;
}

function toSmallFloatBits(
  value: number,
  mantissaBits: number,
  bias: number,
  nanBits: number,
): number {
  if (value !== value) return nanBits;
  const sign = value < 0 || (value === 0 && 1 / value < 0) ? 0x8000 : 0;
  const infinityBits = sign | (((bias << 1) | 1) << mantissaBits);
  const magnitude = Math.abs(value);
  if (magnitude === 0) return sign;
  if (magnitude === Infinity) return infinityBits;
  let exponent = Math.floor(Math.log2(magnitude));
  // log2 can be off by one next to powers of two; fix it exactly.
  if (2 ** exponent > magnitude) exponent -= 1;
  else if (2 ** (exponent + 1) <= magnitude) exponent += 1;
  if (exponent > bias) return infinityBits;
  const implicit = 2 ** mantissaBits;
  const minExponent = 1 - bias;
  if (exponent < minExponent) {
    // Subnormal: a count of the smallest step; rounding up to `implicit` lands exactly on the
    // smallest normal's bit pattern.
    return sign | roundHalfToEven(magnitude * 2 ** (mantissaBits - minExponent));
  }
  let mantissa = roundHalfToEven(magnitude * 2 ** (mantissaBits - exponent));
  if (mantissa === implicit * 2) {
    mantissa = implicit;
    exponent += 1;
    if (exponent > bias) return infinityBits;
  }
  return sign | ((exponent + bias) << mantissaBits) | (mantissa - implicit);
}

/** FP16 bit pattern of `value`, rounded to nearest even; NaN → 0x7e00. */
export function fp16BitsFromNumber(value: number): number {
  return toSmallFloatBits(value, 10, 15, 0x7e00);
}

/** BF16 bit pattern of `value`, rounded to nearest even; NaN → 0x7fc0. */
export function bf16BitsFromNumber(value: number): number {
  return toSmallFloatBits(value, 7, 127, 0x7fc0);
}

/** The exact value of an FP16 bit pattern. */
export function numberFromFp16Bits(bits: number): number {
  const exponent = (bits >> 10) & 0x1f;
  const mantissa = bits & 0x3ff;
  const magnitude =
    exponent === 0
      ? mantissa * 2 ** -24
      : exponent === 31
        ? mantissa === 0
          ? Infinity
          : NaN
        : (mantissa + 1024) * 2 ** (exponent - 25);
  return (bits & 0x8000) === 0 ? magnitude : -magnitude;
}

// BF16 is the top half of a float32, so widening is a shift through a shared word.
const wordAsFloat = new Float32Array(1);
const word = new Uint32Array(wordAsFloat.buffer);

/** The exact value of a BF16 bit pattern. */
export function numberFromBf16Bits(bits: number): number {
  word[0] = (bits & 0xffff) << 16;
  return wordAsFloat[0] ?? NaN;
}

const exactInDouble = 2n ** 53n;

/**
 * A 64-bit integer rounded to the nearest float32 (ties to even) in ONE rounding, as C's
 * int64 → float cast gives. Going through Number() first would round twice: 2^60 + 2^36 + 1
 * becomes 2^60 + 2^36 in double, a float32 tie that rounds down to 2^60, where the integer
 * itself rounds up to 2^60 + 2^37. Past 2^53 the integer is cut to its top 26 bits with the
 * dropped bits folded into the last one (round to odd): exact in double, and rounding that to
 * float32's 24 bits gives the correctly rounded result.
 */
export function bigintToFloat32(value: bigint): number {
  const magnitude = value < 0n ? -value : value;
  if (magnitude < exactInDouble) return Math.fround(Number(value));
  const shift = BigInt(magnitude.toString(2).length - 26);
  let top = magnitude >> shift;
  if (top << shift !== magnitude) top |= 1n;
  const rounded = Math.fround(Number(top << shift));
  return value < 0n ? -rounded : rounded;
}
