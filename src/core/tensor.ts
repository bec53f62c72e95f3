// Tensors as every layer of the data plane sees them (gateway, worker, runtimes), in the
// Open Inference Protocol v2 vocabulary. Data is always flat, row-major, in a typed array
// whose element type follows the datatype:
//
//   BOOL → Uint8Array (0/1)        UINT8/16/32 → Uint8/16/32Array   UINT64 → BigUint64Array
//   INT8/16/32 → Int8/16/32Array   INT64 → BigInt64Array
//   FP16, BF16 → Uint16Array (raw bit patterns)   FP32 → Float32Array   FP64 → Float64Array
//   BYTES → string[] (one element per entry; JSON carries BYTES as strings)

export const tensorDatatypes = [
  'BOOL',
  'UINT8',
  'UINT16',
  'UINT32',
  'UINT64',
  'INT8',
  'INT16',
  'INT32',
  'INT64',
  'FP16',
  'FP32',
  'FP64',
  'BF16',
  'BYTES',
] as const;
export type TensorDatatype = (typeof tensorDatatypes)[number];

export interface TensorSpec {
  readonly name: string;
  readonly datatype: TensorDatatype;
  /** Dimensions; -1 marks a variable dimension (e.g. batch). */
  readonly shape: readonly number[];
  /**
   * The model takes this tensor at any rank (an ONNX input with no shape at all): `shape` is
   * [] and is not checked. Absent otherwise.
   */
  readonly anyRank?: true;
}

export interface ModelSchema {
  readonly inputs: readonly TensorSpec[];
  readonly outputs: readonly TensorSpec[];
}

export type TensorData =
  | Uint8Array
  | Uint16Array
  | Uint32Array
  | BigUint64Array
  | Int8Array
  | Int16Array
  | Int32Array
  | BigInt64Array
  | Float32Array
  | Float64Array
  | readonly string[];

export type TensorParameters = Readonly<Record<string, string | number | boolean>>;

export interface Tensor {
  readonly name: string;
  readonly datatype: TensorDatatype;
  readonly shape: readonly number[];
  readonly data: TensorData;
  readonly parameters?: TensorParameters;
}

/** Number of elements a shape holds (1 for a scalar shape []). */
export function elementCount(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}
