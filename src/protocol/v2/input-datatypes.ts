// Which request datatypes a model input takes besides the one its schema declares.
//
// Most runtimes take exactly the declared datatype: ONNX binds the request's typed array as
// it is, so FP64 sent to an FP32 input is a mismatch. Tree models are different: XGBoost and
// LightGBM read any numeric array and convert it to their own precision (XGBoost: float32,
// LightGBM: double), so a tree endpoint takes every numeric datatype and its runtime makes
// the same conversion (src/runtimes/trees/feature-rows.ts). The declared datatype then only
// says what clients should send by default (the library's precision); BYTES is still refused.

import type { TensorDatatype } from '../../core/tensor.ts';
import type { ModelFormat } from '../../registry/formats/artifact-file.ts';

/** 'exact': the declared datatype only. 'numeric': any datatype in `numericDatatypes`. */
export type InputDatatypePolicy = 'exact' | 'numeric';

/** Every datatype that holds numbers: what a 'numeric' input accepts. */
export const numericDatatypes: readonly TensorDatatype[] = [
  'FP64',
  'FP32',
  'FP16',
  'BF16',
  'INT8',
  'INT16',
  'INT32',
  'INT64',
  'UINT8',
  'UINT16',
  'UINT32',
  'UINT64',
  'BOOL',
];

/** The input policy of a model format: numeric for the tree formats, exact for the rest. */
export function inputDatatypePolicy(format: ModelFormat): InputDatatypePolicy {
  switch (format) {
    case 'xgboost':
    case 'lightgbm':
      return 'numeric';
    case 'onnx':
    case 'hf-llm':
    case 'external':
      return 'exact';
  }
}
