// One request tensor → the predictor's rows: numRows × numFeatures, row-major, as float32
// (XGBoost reads features as float32) or float64 (LightGBM reads doubles). FP32 and FP64
// pass through without a copy when they already have the wanted type; every other numeric
// datatype is converted once per batch. Everything wrong with the tensor is the caller's
// fault and comes back as a message.

import type { Tensor, TensorDatatype } from '../../core/tensor.ts';
import { bigintToFloat32 } from '../../protocol/v2/datatypes.ts';
import { numericDatatypes } from '../../protocol/v2/input-datatypes.ts';
import type { FeatureRows } from './traverse-ensemble.ts';

export type RowsResult =
  | { readonly ok: true; readonly rows: FeatureRows; readonly numRows: number }
  | { readonly ok: false; readonly message: string };

/**
 * Datatypes a tree model accepts as features: every numeric one, as the libraries read any
 * numeric array (the request check takes the same list, src/protocol/v2/input-datatypes.ts).
 */
export const featureDatatypes: readonly TensorDatatype[] = numericDatatypes;

export function featureRows(tensor: Tensor, numFeatures: number, float32: boolean): RowsResult {
  const where = `input '${tensor.name}'`;
  if (!featureDatatypes.includes(tensor.datatype)) {
    return {
      ok: false,
      message: `${where}: datatype ${tensor.datatype} cannot be tree features; send numbers (${numericDatatypes.join(', ')})`,
    };
  }
  const shape = tensor.shape;
  if (shape.length !== 2 || shape.some((d) => !Number.isSafeInteger(d) || d < 0)) {
    return {
      ok: false,
      message: `${where}: shape [${shape.join(', ')}] is not [rows, features] (the model takes [-1, ${numFeatures}])`,
    };
  }
  const [numRows = 0, got = 0] = shape;
  if (got !== numFeatures) {
    return {
      ok: false,
      message: `${where}: expected ${numFeatures} features per row, got ${got} (shape [${shape.join(', ')}])`,
    };
  }
  const data = tensor.data;
  if (Array.isArray(data) || data.length !== numRows * numFeatures) {
    return {
      ok: false,
      message: `${where}: shape [${shape.join(', ')}] needs ${numRows * numFeatures} values, the data holds ${data.length}`,
    };
  }
  const rows = convert(
    tensor.datatype,
    data as Exclude<Tensor['data'], readonly string[]>,
    float32,
  );
  if (rows === null)
    return { ok: false, message: `${where}: data does not match datatype ${tensor.datatype}` };
  return { ok: true, rows, numRows };
}

function convert(
  datatype: TensorDatatype,
  data: Exclude<Tensor['data'], readonly string[]>,
  float32: boolean,
): FeatureRows | null {
  const make = (n: number): FeatureRows => (float32 ? new Float32Array(n) : new Float64Array(n));
  switch (datatype) {
    case 'FP32':
    case 'FP64':
      if (!(data instanceof Float32Array || data instanceof Float64Array)) return null;
      if (float32 && data instanceof Float32Array) return data;
      if (!float32 && data instanceof Float64Array) return data;
      return float32 ? Float32Array.from(data) : Float64Array.from(data);
    case 'FP16':
    case 'BF16': {
      if (!(data instanceof Uint16Array)) return null;
      const out = make(data.length);
      const decode = datatype === 'FP16' ? halfToNumber : bfloat16ToNumber;
      for (let i = 0; i < data.length; i += 1) out[i] = decode(data[i] ?? 0);
      return out;
    }
    case 'INT64':
    case 'UINT64': {
      if (!(data instanceof BigInt64Array || data instanceof BigUint64Array)) return null;
      const out = make(data.length);
      // Number(bigint) rounds once to double (LightGBM's conversion); float32 must round
      // once too, straight from the integer, as XGBoost's cast does (bigintToFloat32).
      const read = float32 ? bigintToFloat32 : Number;
      for (let i = 0; i < data.length; i += 1) out[i] = read(data[i] ?? 0n);
      return out;
    }
    case 'BOOL':
    case 'INT8':
    case 'INT16':
    case 'INT32':
    case 'UINT8':
    case 'UINT16':
    case 'UINT32':
      if (data instanceof BigInt64Array || data instanceof BigUint64Array) return null;
      if (data instanceof Float32Array || data instanceof Float64Array) return null;
      return float32 ? Float32Array.from(data) : Float64Array.from(data);
    case 'BYTES':
      return null;
  }
}

const bfloat16View = new DataView(new ArrayBuffer(4));

function bfloat16ToNumber(bits: number): number {
  bfloat16View.setUint32(0, bits << 16);
  return bfloat16View.getFloat32(0);
}

/** IEEE 754 binary16 → number. */
function halfToNumber(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exponent = (bits >> 10) & 0x1f;
  const fraction = bits & 0x3ff;
  if (exponent === 0) return sign * fraction * 2 ** -24;
  if (exponent === 31) return fraction === 0 ? sign * Number.POSITIVE_INFINITY : Number.NaN;
  return sign * (1 + fraction / 1024) * 2 ** (exponent - 15);
}
