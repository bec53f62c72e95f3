// Joining requests into one batch and splitting the batch's outputs back, along dim 0.
// Requests join only requests of the same shape key, so nothing is ever padded:
//
//   request a: features FP32 [2,16]  ┐  concat   features FP32 [5,16]   runtime   scores [5,4]
//   request b: features FP32 [3,16]  ┘  ───────► (one Float32Array)    ───────►  rows 0-1 → a
//                                                                               rows 2-4 → b
// The key holds everything that must match for that to be the same computation: input
// names, datatypes, non-batch dims and parameters, the requested outputs, the request's
// parameters. Output slices are views into the batch's arrays (no copy).

import { elementCount, type Tensor, type TensorData } from '../../core/tensor.ts';
import type { InferRequest } from '../../runtimes/runtime.ts';

export interface BatchShape {
  readonly key: string;
  /** Rows the request brings: the first dimension every input shares. */
  readonly rows: number;
}

/**
 * The request's shape key and row count, or null when it cannot share a batch (no inputs, a
 * scalar input, or inputs whose first dimensions differ).
 */
export function batchShape(request: InferRequest): BatchShape | null {
  const first = request.inputs[0];
  if (first === undefined || first.shape.length === 0) return null;
  const rows = first.shape[0] ?? 0;
  const inputs: unknown[] = [];
  for (const input of request.inputs) {
    if (input.shape.length === 0 || input.shape[0] !== rows) return null;
    inputs.push([
      input.name,
      input.datatype,
      input.shape.slice(1),
      sortedEntries(input.parameters),
    ]);
  }
  inputs.sort((a, b) => ((a as [string])[0] < (b as [string])[0] ? -1 : 1));
  const key = JSON.stringify([inputs, request.outputs ?? null, sortedEntries(request.parameters)]);
  return { key, rows };
}

function sortedEntries(record: Readonly<Record<string, unknown>> | undefined): unknown {
  if (record === undefined) return null;
  return Object.entries(record).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

/** One request holding every request's rows, in order (all share one shape key). */
export function concatRequests(requests: readonly InferRequest[]): InferRequest {
  const first = requests[0];
  if (first === undefined) throw new RangeError('concatRequests needs at least one request');
  const inputs = first.inputs.map((input): Tensor => {
    const parts = requests.map((r) => r.inputs.find((t) => t.name === input.name) ?? input);
    let rows = 0;
    for (const part of parts) rows += part.shape[0] ?? 0;
    const tensor: Tensor = {
      name: input.name,
      datatype: input.datatype,
      shape: [rows, ...input.shape.slice(1)],
      data: concatData(parts.map((p) => p.data)),
    };
    return input.parameters === undefined ? tensor : { ...tensor, parameters: input.parameters };
  });
  const joined: { -readonly [K in keyof InferRequest]: InferRequest[K] } = { inputs };
  if (first.outputs !== undefined) joined.outputs = first.outputs;
  if (first.parameters !== undefined) joined.parameters = first.parameters;
  return joined;
}

type NumericData = Exclude<TensorData, readonly string[]>;

function concatData(parts: readonly TensorData[]): TensorData {
  const first = parts[0];
  if (first === undefined) return [];
  if (isStrings(first)) {
    const out: string[] = [];
    for (const part of parts) for (const value of part as readonly string[]) out.push(value);
    return out;
  }
  let length = 0;
  for (const part of parts) length += part.length;
  const Ctor = first.constructor as new (length: number) => NumericData;
  const out = new Ctor(length);
  const target = out as unknown as { set(source: NumericData, offset: number): void };
  let offset = 0;
  for (const part of parts) {
    target.set(part as NumericData, offset);
    offset += part.length;
  }
  return out;
}

function isStrings(data: TensorData): data is readonly string[] {
  return Array.isArray(data);
}

export type SplitResult =
  | { readonly ok: true; readonly outputs: readonly (readonly Tensor[])[] }
  | { readonly ok: false; readonly message: string };

/**
 * The batch's outputs cut back into each request's rows. Every output's first dimension must
 * equal the batch's rows; anything else would hand one request another's results, so it is a
 * failure instead.
 */
export function splitOutputs(
  outputs: readonly Tensor[],
  rowsPerRequest: readonly number[],
): SplitResult {
  let total = 0;
  for (const rows of rowsPerRequest) total += rows;
  const perRequest: Tensor[][] = rowsPerRequest.map(() => []);
  for (const output of outputs) {
    const rowSize = elementCount(output.shape.slice(1));
    if (
      output.shape.length === 0 ||
      output.shape[0] !== total ||
      output.data.length !== total * rowSize
    ) {
      return {
        ok: false,
        message:
          `output ${output.name} has shape [${output.shape.join(',')}], not ${total} rows ` +
          'for a batch of that many: the batch could not be split back into its requests',
      };
    }
    let row = 0;
    rowsPerRequest.forEach((rows, i) => {
      const data = sliceData(output.data, row * rowSize, (row + rows) * rowSize);
      const shape = [rows, ...output.shape.slice(1)];
      const tensor: Tensor =
        output.parameters === undefined
          ? { name: output.name, datatype: output.datatype, shape, data }
          : {
              name: output.name,
              datatype: output.datatype,
              shape,
              data,
              parameters: output.parameters,
            };
      perRequest[i]?.push(tensor);
      row += rows;
    });
  }
  return { ok: true, outputs: perRequest };
}

function sliceData(data: TensorData, start: number, end: number): TensorData {
  if (isStrings(data)) return data.slice(start, end);
  return (data as Float64Array).subarray(start, end) as NumericData;
}
