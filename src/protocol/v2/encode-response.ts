// The v2 infer response, written by hand: the envelope with JSON.stringify for the strings,
// the data arrays with TypedArray#join (one native pass) instead of a generic serializer.
//
// JSON has no NaN or Infinity, so float data is written as:
//   NaN → null        +Infinity → 1e999        -Infinity → -1e999
// all valid JSON; JSON.parse, Python's json and numpy read 1e999 back as inf, and Kiln's
// own decoder reads null back as NaN, so a response can be sent back as a request as is.
// -0 is written as 0 (TypedArray#join does so). FP16/BF16 bit patterns are written as the
// numbers they hold, exactly; INT64/UINT64 as exact decimal digits, even past 2^53.

import type { Tensor, TensorData, TensorDatatype, TensorParameters } from '../../core/tensor.ts';
import { elementCount } from '../../core/tensor.ts';
import type { InferResult } from '../../runtimes/runtime.ts';
import {
  datatypeInfo,
  isTensorDatatype,
  numberFromBf16Bits,
  numberFromFp16Bits,
} from './datatypes.ts';

export interface InferResponseMeta {
  readonly modelName: string;
  readonly modelVersion?: string;
  readonly id?: string;
  readonly parameters?: TensorParameters;
}

/**
 * `{"model_name","model_version"?,"id"?,"parameters"?,"outputs":[…]}`. Throws if an output's
 * data does not fit its datatype and shape: that is a runtime bug, not a user error.
 */
export function encodeInferResponse(result: InferResult, meta: InferResponseMeta): string {
  let json = `{"model_name":${JSON.stringify(meta.modelName)}`;
  if (meta.modelVersion !== undefined)
    json += `,"model_version":${JSON.stringify(meta.modelVersion)}`;
  if (meta.id !== undefined) json += `,"id":${JSON.stringify(meta.id)}`;
  if (meta.parameters !== undefined) json += `,"parameters":${JSON.stringify(meta.parameters)}`;
  return `${json},"outputs":${encodeTensorList(result.outputs)}}`;
}

/** `[{"name","datatype","shape","parameters"?,"data"}, …]`: v2 outputs (or request inputs). */
export function encodeTensorList(tensors: readonly Tensor[]): string {
  const parts = new Array<string>(tensors.length);
  for (let i = 0; i < tensors.length; i++) parts[i] = encodeTensor(tensors[i] as Tensor);
  return `[${parts.join(',')}]`;
}

export function encodeTensor(tensor: Tensor): string {
  const { name, datatype, shape, data } = tensor;
  if (!isTensorDatatype(datatype)) {
    throw new Error(`cannot encode tensor '${name}': unknown datatype ${String(datatype)}`);
  }
  for (const d of shape) {
    if (!Number.isSafeInteger(d) || d < 0) {
      throw new Error(
        `cannot encode tensor '${name}': shape [${shape.join(', ')}] is not concrete`,
      );
    }
  }
  if (!datatypeInfo[datatype].holds(data)) {
    throw new Error(`cannot encode tensor '${name}': its data is not the array ${datatype} uses`);
  }
  const count = elementCount(shape);
  if (data.length !== count) {
    throw new Error(
      `cannot encode tensor '${name}': ${data.length} elements for shape [${shape.join(', ')}] (${count})`,
    );
  }
  const parameters =
    tensor.parameters === undefined ? '' : `,"parameters":${JSON.stringify(tensor.parameters)}`;
  return `{"name":${JSON.stringify(name)},"datatype":"${datatype}","shape":[${shape.join(',')}]${parameters},"data":${encodeTensorData(datatype, data)}}`;
}

/** The flat JSON array for `data` (already known to be the container `datatype` uses). */
export function encodeTensorData(datatype: TensorDatatype, data: TensorData): string {
  switch (datatype) {
    case 'FP32':
    case 'FP64':
      return floatsJson(data as Float32Array | Float64Array);
    case 'FP16':
      return floatsJson(widen(data as Uint16Array, numberFromFp16Bits));
    case 'BF16':
      return floatsJson(widen(data as Uint16Array, numberFromBf16Bits));
    case 'BOOL':
      return boolsJson(data as Uint8Array);
    case 'BYTES':
      return JSON.stringify(data);
    case 'UINT8':
    case 'UINT16':
    case 'UINT32':
    case 'UINT64':
    case 'INT8':
    case 'INT16':
    case 'INT32':
    case 'INT64':
      // BigInt64Array#join writes exact decimal digits.
      return `[${(data as Exclude<TensorData, readonly string[]>).join(',')}]`;
  }
}

function widen(bits: Uint16Array, toNumber: (bits: number) => number): Float64Array {
  const values = new Float64Array(bits.length);
  for (let i = 0; i < bits.length; i++) values[i] = toNumber(bits[i] ?? 0);
  return values;
}

function floatsJson(values: Float32Array | Float64Array): string {
  const joined = values.join(',');
  // Finite numbers print with digits, '.', '-', '+' and 'e' only; 'N' and 'I' mean NaN or
  // Infinity is in there, which is rare enough for a second, per-element pass.
  if (joined.indexOf('N') === -1 && joined.indexOf('I') === -1) return `[${joined}]`;
  const parts = new Array<string>(values.length);
  for (let i = 0; i < values.length; i++) {
    const v = values[i] ?? NaN;
    parts[i] = v !== v ? 'null' : v === Infinity ? '1e999' : v === -Infinity ? '-1e999' : String(v);
  }
  return `[${parts.join(',')}]`;
}

function boolsJson(values: Uint8Array): string {
  const parts = new Array<string>(values.length);
  for (let i = 0; i < values.length; i++) parts[i] = values[i] === 0 ? 'false' : 'true';
  return `[${parts.join(',')}]`;
}
