// The KServe v1 / TensorFlow Serving predict request, `{"instances": [...]}`, rewritten into
// the plain v2 request the model's schema describes, so that the v2 decoder checks it (and the
// worker runs it) exactly like one sent to /v2. Instances are rows:
//
//   lists     [[5.1, 3.5, 1.4], [6.2, 2.9, 4.3]]      the single input's rows, any nesting;
//                                                     or, for a schema declared as one input
//                                                     per feature, split into those columns
//   objects   [{"age": 41, "income": 5.2e4}, …]       keyed by feature name (a tree model's
//                                                     features, in any order), or by input
//                                                     name for a model with several inputs
//
// Kiln also takes an optional `"parameters": {…}` beside `instances` (v1 has none): they go to
// the model as the v2 request's parameters (`output_margin`, `allow_missing_features`).

import type { V2Failure } from '../v2/errors.ts';
import { jsonKind, v2Failure } from '../v2/errors.ts';
import {
  allowsMissingFeatures,
  missingColumnsFailure,
  missingFeaturesFailure,
  type CompiledNaming,
  type FeatureColumns,
} from '../v2/input-naming.ts';
import type { CompiledInput, CompiledSchema } from '../v2/schema.ts';

type JsonObject = Readonly<Record<string, unknown>>;

export type V1RequestResult = { readonly ok: true; readonly body: JsonObject } | V2Failure;

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function invalid(message: string, input?: string): V2Failure {
  return v2Failure('KILN_INVALID_INFER_REQUEST', message, input);
}

/** The v2 body for a parsed v1 predict body, or the 400 naming what is wrong with it. */
export function v1PredictToV2(
  body: unknown,
  schema: CompiledSchema,
  naming: CompiledNaming | null,
): V1RequestResult {
  if (!isObject(body)) {
    return invalid(`the request body must be a JSON object, got ${jsonKind(body)}`);
  }
  const instances = body.instances;
  if (body.inputs !== undefined) {
    return invalid(
      instances === undefined
        ? `v1 predict takes {"instances": [...]}; 'inputs' is not taken here (TensorFlow Serving's columnar form is not supported; send v2 tensors to POST /v2/models/{name}/infer)`
        : `the body mixes v1 'instances' with v2 'inputs'; send one or the other`,
    );
  }
  if (!Array.isArray(instances)) {
    return invalid(`'instances' must be an array of rows, got ${jsonKind(instances)}`);
  }
  if (instances.length === 0) return invalid("'instances' is empty; send at least one row");
  let objects = 0;
  for (const row of instances) if (isObject(row)) objects += 1;
  if (objects !== 0 && objects !== instances.length) {
    const odd = instances.findIndex((row) => isObject(row) !== isObject(instances[0]));
    return invalid(
      `'instances' mixes objects (rows keyed by name) and lists: instances[0] is ${jsonKind(instances[0])}, instances[${odd}] is ${jsonKind(instances[odd])}`,
    );
  }
  const parameters = body.parameters;
  let inputs: readonly JsonObject[] | V2Failure;
  const allowMissing = allowsMissingFeatures(parameters);
  if (objects === 0) {
    const columns = naming?.columns ?? null;
    inputs = columns === null ? listRows(instances, schema) : columnRows(instances, columns);
  } else if (naming?.features != null) {
    inputs = featureRows(instances as readonly JsonObject[], naming.features, allowMissing);
  } else {
    const columns = naming?.columns != null;
    inputs = inputRows(instances as readonly JsonObject[], schema, columns, allowMissing);
  }
  if (!Array.isArray(inputs)) return inputs as V2Failure;
  return {
    ok: true,
    body: parameters === undefined ? { inputs } : { inputs, parameters },
  };
}

/** Rows as lists: the batch of the model's one input. */
function listRows(
  instances: readonly unknown[],
  schema: CompiledSchema,
): readonly JsonObject[] | V2Failure {
  if (schema.inputList.length !== 1) {
    return v2Failure(
      'KILN_INPUT_MISMATCH',
      `the model takes ${schema.inputList.length} inputs (${schema.inputNames}); send each instance as an object keyed by input name`,
    );
  }
  const input = schema.inputList[0] as CompiledInput;
  const stacked = stack(instances, (i) => `instances[${i}]`, 'instances');
  if ('ok' in stacked) return stacked;
  return [tensor(input, instances.length, stacked.dims, instances)];
}

/** Rows as lists for a schema of feature columns: value c of each row goes to column c. */
function columnRows(
  instances: readonly unknown[],
  columns: readonly CompiledInput[],
): readonly JsonObject[] | V2Failure {
  const width = columns.length;
  for (let i = 0; i < instances.length; i++) {
    const row = instances[i];
    if (!Array.isArray(row) || row.length !== width) {
      const has = Array.isArray(row) ? values(row.length) : 'one value';
      return invalid(
        `instances[${i}] has ${has}; the model takes ${width} features a row (${columns.map((c) => c.name).join(', ')})`,
      );
    }
  }
  return columns.map((input, c) => {
    const column = instances.map((row) => (row as readonly unknown[])[c]);
    return columnTensor(input, column);
  });
}

/** A feature column's values as its tensor ([N], or [N, 1] with each value in a list). */
function columnTensor(input: CompiledInput, column: readonly unknown[]): JsonObject {
  return input.shape.length === 1
    ? tensor(input, column.length, [], column)
    : tensor(
        input,
        column.length,
        [1],
        column.map((value) => [value]),
      );
}

/** Rows keyed by feature name, into one [N, F] matrix in the model's feature order. */
function featureRows(
  instances: readonly JsonObject[],
  features: FeatureColumns,
  allowMissing: boolean,
): readonly JsonObject[] | V2Failure {
  const width = features.names.length;
  const rows = instances.length;
  const data = new Array<unknown>(rows * width);
  for (let i = 0; i < rows; i++) {
    const row = instances[i] as JsonObject;
    let found = 0;
    for (const key in row) {
      const column = features.columns.get(key);
      if (column === undefined) {
        return v2Failure(
          'KILN_INPUT_MISMATCH',
          `instances[${i}]: unknown feature '${key}'; the model's features are: ${features.namesText}`,
          key,
        );
      }
      const value = row[key];
      if (typeof value !== 'number' && typeof value !== 'bigint' && value !== null) {
        return v2Failure(
          'KILN_INVALID_TENSOR',
          `instances[${i}]: feature '${key}' is ${jsonKind(value)}, expected a number`,
          key,
        );
      }
      data[i * width + column] = value;
      found += 1;
    }
    if (found < width) {
      const missing: number[] = [];
      for (let c = 0; c < width; c++) {
        if (data[i * width + c] === undefined) {
          missing.push(c);
          data[i * width + c] = null;
        }
      }
      const problem = missingFeaturesFailure(features, missing, allowMissing, `instances[${i}]: `);
      if (problem !== null) return problem;
    }
  }
  return [tensor(features.input, rows, [width], data)];
}

/**
 * Rows keyed by input name (TensorFlow Serving's row format): each input's rows stacked. For
 * a schema of feature columns each value is one feature, and a missing one may be a missing
 * value (`allowMissing`).
 */
function inputRows(
  instances: readonly JsonObject[],
  schema: CompiledSchema,
  columns: boolean,
  allowMissing: boolean,
): readonly JsonObject[] | V2Failure {
  for (let i = 0; i < instances.length; i++) {
    for (const key in instances[i]) {
      if (!schema.inputs.has(key)) {
        const what = columns ? 'feature' : 'input';
        return v2Failure(
          'KILN_INPUT_MISMATCH',
          `instances[${i}]: unknown ${what} '${key}'; the model takes: ${schema.inputNames}`,
          key,
        );
      }
    }
  }
  const inputs: JsonObject[] = [];
  for (const input of schema.inputList) {
    const values = new Array<unknown>(instances.length);
    for (let i = 0; i < instances.length; i++) {
      // Own keys only: a feature may be named `toString` or `constructor`.
      const row = instances[i] as JsonObject;
      const value = Object.hasOwn(row, input.name) ? row[input.name] : undefined;
      if (value === undefined) {
        const problem = columns
          ? missingColumnsFailure([input], allowMissing, `instances[${i}]: `)
          : v2Failure(
              'KILN_INPUT_MISMATCH',
              `instances[${i}]: input '${input.name}' is missing`,
              input.name,
            );
        if (problem !== null) return problem;
      }
      values[i] = value ?? null;
    }
    if (columns) {
      inputs.push(columnTensor(input, values));
      continue;
    }
    const stacked = stack(values, (i) => `instances[${i}].${input.name}`, `input '${input.name}'`);
    if ('ok' in stacked) return stacked;
    inputs.push(tensor(input, values.length, stacked.dims, values));
  }
  return inputs;
}

/**
 * The dimensions of one row (from the first), checking every row has the first's length at
 * the top level; deeper raggedness is left to the v2 decoder's nesting check.
 */
function stack(
  rows: readonly unknown[],
  where: (i: number) => string,
  what: string,
): { readonly dims: readonly number[] } | V2Failure {
  const dims: number[] = [];
  for (let value: unknown = rows[0]; Array.isArray(value); value = value[0]) {
    dims.push(value.length);
    if (value.length === 0) break;
  }
  const width = dims[0];
  for (let i = 1; i < rows.length; i++) {
    const row = rows[i];
    const length = Array.isArray(row) ? row.length : -1;
    if (width === undefined ? length !== -1 : length !== width) {
      const has = length === -1 ? 'one value' : values(length);
      const first = width === undefined ? 'one value' : values(width);
      return invalid(
        `${what} is ragged: ${where(i)} has ${has}, ${where(0)} has ${first}; every row needs the same shape`,
      );
    }
  }
  return { dims };
}

function values(count: number): string {
  return count === 1 ? 'a list of 1 value' : `${count} values`;
}

function tensor(
  input: CompiledInput,
  rows: number,
  dims: readonly number[],
  data: readonly unknown[],
): JsonObject {
  return { name: input.name, datatype: input.datatype, shape: [rows, ...dims], data };
}
