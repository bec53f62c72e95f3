// A tree model served under a declared schema of one input per feature, as MLServer's
// model-settings list them: `[{"name": "age", "shape": [-1]}, {"name": "income", …}, …]`.
// The declared names are then the model's feature names, in column order. Requests (and
// metadata) follow the declared schema; the runtime is loaded with one [-1, F] FP64 input
// instead, and each request's columns are joined into its rows here, after the v2 checks.
//
// FP64 loses nothing on the way: every column datatype fits a double (64-bit integers past
// 2^53 round once, as the library's cast of the column does); XGBoost then rounds to float32
// as it does for any input, LightGBM reads the doubles as they are. For XGBoost a 64-bit
// integer is rounded to float32 here, straight from the integer: through a double it would
// round twice (bigintToFloat32).

import type { ModelSchema, Tensor, TensorDatatype, TensorSpec } from '../core/tensor.ts';
import type { DecodedInferRequest } from '../protocol/v2/decode-request.ts';
import {
  bigintToFloat32,
  numberFromBf16Bits,
  numberFromFp16Bits,
} from '../protocol/v2/datatypes.ts';
import { numericDatatypes } from '../protocol/v2/input-datatypes.ts';
import type { ModelFormat } from '../registry/formats/artifact-file.ts';

export interface FeatureColumnLayout {
  /** What the runtime is loaded with: one [-1, F] FP64 input, the declared outputs. */
  readonly runtimeSchema: ModelSchema;
  /** The request's F column tensors (checked against the declared schema) as [N, F] rows. */
  join(request: DecodedInferRequest): DecodedInferRequest;
}

const numeric: ReadonlySet<TensorDatatype> = new Set(numericDatatypes.filter((d) => d !== 'BOOL'));

/** One value a row: [-1], or [-1, 1]. */
function isColumn(spec: TensorSpec): boolean {
  if (spec.anyRank === true || !numeric.has(spec.datatype) || spec.shape[0] !== -1) return false;
  return spec.shape.length === 1 || (spec.shape.length === 2 && spec.shape[1] === 1);
}

/**
 * The layout for a tree model whose declared inputs are all feature columns (two or more, or
 * one of shape [-1]; a single [-1, 1] input is already the model's own one-feature matrix),
 * else null: the runtime then checks the schema as it stands.
 */
export function featureColumnLayout(
  format: ModelFormat,
  schema: ModelSchema | null,
): FeatureColumnLayout | null {
  if ((format !== 'xgboost' && format !== 'lightgbm') || schema === null) return null;
  const inputs = schema.inputs;
  const only = inputs[0];
  if (only === undefined || (inputs.length === 1 && only.shape.length !== 1)) return null;
  if (!inputs.every(isColumn)) return null;
  const width = inputs.length;
  const columnOf = new Map(inputs.map((spec, column) => [spec.name, column]));
  const readBigint = format === 'xgboost' ? bigintToFloat32 : Number;
  const runtimeSchema: ModelSchema = {
    inputs: [{ name: 'input', datatype: 'FP64', shape: [-1, width] }],
    outputs: schema.outputs,
  };
  return {
    runtimeSchema,
    join(request) {
      const rows = request.inputs[0]?.shape[0] ?? 0;
      const data = new Float64Array(rows * width);
      for (const tensor of request.inputs) {
        const column = columnOf.get(tensor.name);
        if (column === undefined) continue; // the v2 check lets no other input through
        const read = reader(tensor, readBigint);
        for (let r = 0; r < rows; r++) data[r * width + column] = read(r);
      }
      const joined: Tensor = { name: 'input', datatype: 'FP64', shape: [rows, width], data };
      return { ...request, inputs: [joined] };
    },
  };
}

function reader(tensor: Tensor, readBigint: (value: bigint) => number): (index: number) => number {
  const data = tensor.data as ArrayLike<number | bigint>;
  if (tensor.datatype === 'FP16') return (i) => numberFromFp16Bits(data[i] as number);
  if (tensor.datatype === 'BF16') return (i) => numberFromBf16Bits(data[i] as number);
  if (data instanceof BigInt64Array || data instanceof BigUint64Array) {
    return (i) => readBigint(data[i]!);
  }
  return (i) => data[i] as number;
}
