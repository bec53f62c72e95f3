// ONNX TensorProto.DataType codes -> Open Inference Protocol datatype names. Types the protocol
// has no name for (complex, float8, 4-bit) keep ONNX's own name, so a runtime can refuse them
// by name; unknown codes (0 = UNDEFINED, or newer than this table) map to null.

const elemTypes: Readonly<Record<number, string>> = {
  1: 'FP32',
  2: 'UINT8',
  3: 'INT8',
  4: 'UINT16',
  5: 'INT16',
  6: 'INT32',
  7: 'INT64',
  8: 'BYTES',
  9: 'BOOL',
  10: 'FP16',
  11: 'FP64',
  12: 'UINT32',
  13: 'UINT64',
  14: 'COMPLEX64',
  15: 'COMPLEX128',
  16: 'BF16',
  17: 'FLOAT8E4M3FN',
  18: 'FLOAT8E4M3FNUZ',
  19: 'FLOAT8E5M2',
  20: 'FLOAT8E5M2FNUZ',
  21: 'UINT4',
  22: 'INT4',
  23: 'FLOAT4E2M1',
};

export function onnxDatatype(elemType: number): string | null {
  return elemTypes[elemType] ?? null;
}
