// Conversions between our tensors (src/core/tensor.ts) and onnxruntime-node's. Both sides keep
// flat row-major data in the same typed arrays, so a conversion wraps the caller's array and
// never copies element data:
//
//   ours        BOOL        UINT8..UINT64   INT8..INT64   FP16         FP32/FP64     BYTES
//   ort type    'bool'      'uint8'..       'int8'..      'float16'    'float32'/..  'string'
//   JS data     Uint8Array  Uint8Array..    Int8Array..   Uint16Array  Float32Array  string[]
//                                           (INT64: BigInt64Array)     (raw bits)
//
// BF16 exists in the protocol but not in onnxruntime-node's JavaScript API, so a model with a
// BF16 input or output is refused at load (see onnxSupportedDatatype).

import { Tensor as OrtTensor } from 'onnxruntime-node';
import type { Tensor, TensorData, TensorDatatype } from '../../core/tensor.ts';
import { elementCount } from '../../core/tensor.ts';

export type OrtType = OrtTensor.Type;

/** Datatypes onnxruntime-node can feed and fetch, with ORT's name for each. */
const ortTypes = {
  BOOL: 'bool',
  UINT8: 'uint8',
  UINT16: 'uint16',
  UINT32: 'uint32',
  UINT64: 'uint64',
  INT8: 'int8',
  INT16: 'int16',
  INT32: 'int32',
  INT64: 'int64',
  FP16: 'float16',
  FP32: 'float32',
  FP64: 'float64',
  BYTES: 'string',
} as const satisfies Partial<Record<TensorDatatype, OrtType>>;

export type OnnxDatatype = keyof typeof ortTypes;

const datatypesByOrtType = new Map<string, OnnxDatatype>(
  Object.entries(ortTypes).map(([datatype, ortType]) => [ortType, datatype as OnnxDatatype]),
);

type TypedArrayClass =
  | Uint8ArrayConstructor
  | Uint16ArrayConstructor
  | Uint32ArrayConstructor
  | BigUint64ArrayConstructor
  | Int8ArrayConstructor
  | Int16ArrayConstructor
  | Int32ArrayConstructor
  | BigInt64ArrayConstructor
  | Float32ArrayConstructor
  | Float64ArrayConstructor;

/** The typed array each numeric datatype travels in (BYTES travels as string[]). */
const arrayClasses: Record<Exclude<OnnxDatatype, 'BYTES'>, TypedArrayClass> = {
  BOOL: Uint8Array,
  UINT8: Uint8Array,
  UINT16: Uint16Array,
  UINT32: Uint32Array,
  UINT64: BigUint64Array,
  INT8: Int8Array,
  INT16: Int16Array,
  INT32: Int32Array,
  INT64: BigInt64Array,
  FP16: Uint16Array,
  FP32: Float32Array,
  FP64: Float64Array,
};

/** The datatype as one onnxruntime-node supports, or null (BF16, COMPLEX64, FLOAT8..., null). */
export function onnxSupportedDatatype(datatype: string | null): OnnxDatatype | null {
  return datatype !== null && Object.hasOwn(ortTypes, datatype) ? (datatype as OnnxDatatype) : null;
}

function isStringArray(data: TensorData): data is readonly string[] {
  return !ArrayBuffer.isView(data);
}

/**
 * Why `tensor.data` does not fit its datatype and shape, or null when it does. The gateway
 * decodes requests into the right arrays; this guards the runtime against any other caller.
 */
export function tensorDataProblem(tensor: Tensor, datatype: OnnxDatatype): string | null {
  const count = elementCount(tensor.shape);
  const { data } = tensor;
  if (datatype === 'BYTES') {
    if (!isStringArray(data) || data.some((value) => typeof value !== 'string')) {
      return 'BYTES data must be an array of strings';
    }
  } else if (!(data instanceof arrayClasses[datatype])) {
    return `${datatype} data must be a ${arrayClasses[datatype].name}`;
  }
  if (data.length !== count) {
    return `shape [${tensor.shape.join(', ')}] holds ${count} elements but the data has ${data.length}`;
  }
  return null;
}

/** Wraps our tensor as ORT's (no copy). Call tensorDataProblem first. */
export function toOrtTensor(tensor: Tensor, datatype: OnnxDatatype): OrtTensor {
  const { data, shape } = tensor;
  if (datatype === 'BYTES') {
    if (!isStringArray(data)) throw new TypeError(`${tensor.name}: BYTES data is not string[]`);
    return new OrtTensor('string', data, shape);
  }
  if (isStringArray(data)) throw new TypeError(`${tensor.name}: ${datatype} data is string[]`);
  // The array class was checked against the datatype, which is what ORT's overloads encode.
  return new OrtTensor(ortTypes[datatype], data as Float32Array, shape);
}

/** Our tensor for one of ORT's outputs, or a reason when ORT gave a type we cannot carry. */
export function fromOrtTensor(name: string, value: OrtTensor): Tensor | string {
  const datatype = datatypesByOrtType.get(value.type);
  if (datatype === undefined)
    return `output '${name}' has type ${value.type}, which Kiln cannot return`;
  const shape = [...value.dims];
  const raw: unknown = value.data;
  if (datatype === 'BYTES') {
    if (!Array.isArray(raw)) return `output '${name}': onnxruntime returned no string array`;
    return { name, datatype, shape, data: raw as string[] };
  }
  if (!ArrayBuffer.isView(raw)) return `output '${name}': onnxruntime returned no typed array`;
  const arrayClass = arrayClasses[datatype];
  if (raw instanceof arrayClass) return { name, datatype, shape, data: raw as TensorData };
  // FP16 may come back as a Float16Array where the platform has one: keep the raw bits.
  if (datatype === 'FP16' && raw.byteLength === elementCount(shape) * 2) {
    const bits = new Uint16Array(raw.buffer as ArrayBuffer, raw.byteOffset, raw.byteLength / 2);
    return { name, datatype, shape, data: bits };
  }
  return `output '${name}': onnxruntime returned ${raw.constructor.name} for ${datatype}`;
}

/** A tensor of zeros ('' for BYTES), as warmup feeds. */
export function zerosTensor(name: string, datatype: OnnxDatatype, shape: number[]): Tensor {
  const count = elementCount(shape);
  const data: TensorData =
    datatype === 'BYTES'
      ? new Array<string>(count).fill('')
      : (new arrayClasses[datatype](count) as TensorData);
  return { name, datatype, shape, data };
}
