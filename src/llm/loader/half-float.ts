// Exact widening of 16-bit floats (IEEE binary16 "F16" and bfloat16 "BF16") to float32.
//
//   F16:  [ sign:1 ][ exponent:5  (bias 15)  ][ mantissa:10 ]
//   BF16: [ sign:1 ][ exponent:8  (bias 127) ][ mantissa:7  ]   = the top half of a float32
//   F32:  [ sign:1 ][ exponent:8  (bias 127) ][ mantissa:23 ]
//
// Every F16 and BF16 value is exactly representable in float32, so the conversion is done on
// bit patterns, never through arithmetic: subnormals, infinities, negative zero and NaN
// payloads come out exactly as PyTorch's `.float()` produces them. Outputs are written through
// a Uint32Array view so a NaN's payload is never canonicalised by a number round trip.

/** float32 bit pattern for each of the 65,536 F16 bit patterns; 256 KiB, built on first use. */
let float16Table: Uint32Array | null = null;

function buildFloat16Table(): Uint32Array {
  const table = new Uint32Array(65536);
  for (let bits = 0; bits < 65536; bits += 1) table[bits] = float16BitsToFloat32Bits(bits);
  return table;
}

/** One F16 bit pattern → the float32 bit pattern of the same value. */
function float16BitsToFloat32Bits(bits: number): number {
  const sign = (bits & 0x8000) << 16;
  const exponent = (bits >> 10) & 0x1f;
  let mantissa = bits & 0x3ff;
  if (exponent === 0x1f) {
    // Infinity (mantissa 0) or NaN: keep the payload in the top mantissa bits, as hardware does.
    return (sign | 0x7f800000 | (mantissa << 13)) >>> 0;
  }
  if (exponent !== 0) return (sign | ((exponent - 15 + 127) << 23) | (mantissa << 13)) >>> 0;
  if (mantissa === 0) return sign >>> 0; // ±0
  // Subnormal F16 (mantissa × 2^-24): normal in float32. Shift until the implicit bit appears.
  let shift = 0;
  while ((mantissa & 0x400) === 0) {
    mantissa <<= 1;
    shift += 1;
  }
  return (sign | ((1 - 15 - shift + 127) << 23) | ((mantissa & 0x3ff) << 13)) >>> 0;
}

/**
 * Widens `source.length` F16 values into `target` starting at `targetOffset`.
 * `target` must have room for them; both are little-endian host views.
 */
export function float16ToFloat32(
  source: Uint16Array,
  target: Float32Array,
  targetOffset: number,
): void {
  float16Table ??= buildFloat16Table();
  const table = float16Table;
  const out = new Uint32Array(target.buffer, target.byteOffset + targetOffset * 4, source.length);
  for (let i = 0; i < source.length; i += 1) out[i] = table[source[i] ?? 0] ?? 0;
}

/** Widens `source.length` BF16 values into `target` from `targetOffset`: bits << 16, exactly. */
export function bfloat16ToFloat32(
  source: Uint16Array,
  target: Float32Array,
  targetOffset: number,
): void {
  const out = new Uint32Array(target.buffer, target.byteOffset + targetOffset * 4, source.length);
  for (let i = 0; i < source.length; i += 1) out[i] = (source[i] ?? 0) << 16;
}
