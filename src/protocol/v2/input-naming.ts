// How a request may name a model's inputs beyond the schema's exact names, the way the
// clients teams already have send them (docs/v1-protocol.md, "Input names"):
//
//   - any name: a model with one input whose name nobody declared (the schema was read from
//     the model, not registered with it) takes the request's single input whatever it is
//     called, as KServe's and MLServer's tree and scikit-learn servers do;
//   - named features (MLServer's pandas style): a model whose one input is a [-1, F] matrix
//     of features with names takes F one-column inputs named by feature, assembled into rows
//     in the model's feature order;
//   - feature columns: a schema declared as one input per feature ([-1] or [-1, 1] each, as
//     MLServer's model-settings list them) already takes named features; missing ones may be
//     missing values, and v1 list rows are split into them (src/protocol/v1/).
//
// Both are rewrites of the parsed body into the plain v2 request the schema describes, so the
// usual decoder then checks everything else (datatypes, batch rule, element values). The
// gateway tries them only when the strict check has failed, so a plain request costs nothing.

import type { TensorDatatype } from '../../core/tensor.ts';
import { bigintToFloat32, isTensorDatatype } from './datatypes.ts';
import { numericDatatypes } from './input-datatypes.ts';
import type { V2Failure } from './errors.ts';
import { formatShape, jsonKind, v2Failure } from './errors.ts';
import type { CompiledInput, CompiledSchema } from './schema.ts';
import { decodeTensorData } from './tensor-data.ts';

/** What the control plane knows about an endpoint's input names (routing snapshot). */
export interface InputNaming {
  /** The schema was registered with the version: its input names are enforced. */
  readonly declared: boolean;
  /** The model's feature names in column order (tree models), or null when it has none. */
  readonly featureNames: readonly string[] | null;
}

export interface FeatureColumns {
  /** The model's one input, [-1, F]. */
  readonly input: CompiledInput;
  readonly names: readonly string[];
  /** Column of each feature name. */
  readonly columns: ReadonlyMap<string, number>;
  /** `age, income, …` (at most 20 names), for messages. */
  readonly namesText: string;
}

export interface CompiledNaming {
  /** The single input a request's single input maps to whatever its name; null: names enforced. */
  readonly anyName: CompiledInput | null;
  /** Named features, or null when the model has no usable feature names. */
  readonly features: FeatureColumns | null;
  /** The schema's inputs, when each is one feature column (two or more); else null. */
  readonly columns: readonly CompiledInput[] | null;
}

/** The request parameter that lets a missing feature be a missing value (NaN). */
export const allowMissingFeaturesParameter = 'allow_missing_features';

const maxNamesInMessages = 20;

/** null when the endpoint takes its inputs only by their schema names. */
export function compileInputNaming(
  schema: CompiledSchema,
  naming: InputNaming | null | undefined,
): CompiledNaming | null {
  if (schema.inputList.length !== 1) {
    const columns = schema.inputList.every(isFeatureColumn) ? schema.inputList : null;
    return columns === null ? null : { anyName: null, features: null, columns };
  }
  if (naming === null || naming === undefined) return null;
  const input = schema.inputList[0] as CompiledInput;
  const anyName = naming.declared ? null : input;
  const features = featureColumns(input, naming.featureNames);
  return anyName === null && features === null ? null : { anyName, features, columns: null };
}

/** One numeric value a row: [-1] or [-1, 1]. */
export function isFeatureColumn(input: CompiledInput): boolean {
  if (input.anyRank || !input.batched || !featureDatatypes.has(input.datatype)) return false;
  return input.shape.length === 1 || (input.shape.length === 2 && input.shape[1] === 1);
}

function featureColumns(
  input: CompiledInput,
  names: readonly string[] | null,
): FeatureColumns | null {
  if (names === null || names.length === 0 || input.anyRank || !input.batched) return null;
  const width = input.shape[1];
  if (input.shape.length !== 2 || (width !== -1 && width !== names.length)) return null;
  const columns = new Map<string, number>();
  for (const name of names) {
    if (name === '' || columns.has(name)) return null; // a name that cannot pick one column
    columns.set(name, columns.size);
  }
  return { input, names, columns, namesText: listNames(names) };
}

function listNames(names: readonly string[]): string {
  const shown = names.slice(0, maxNamesInMessages).join(', ');
  const more = names.length - maxNamesInMessages;
  return more > 0 ? `${shown} and ${more} more` : shown;
}

type JsonObject = Readonly<Record<string, unknown>>;

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The plain v2 body for a body whose inputs are named otherwise: the single input renamed, or
 * the named features assembled into the model's input. null when neither applies (the strict
 * check's verdict stands); a failure when the body is one of these forms but wrong.
 */
export function renameRequestInputs(
  body: unknown,
  naming: CompiledNaming,
): { readonly ok: true; readonly body: JsonObject } | V2Failure | null {
  if (!isObject(body) || !Array.isArray(body.inputs)) return null;
  const inputs = body.inputs as readonly unknown[];
  if (inputs.length === 0 || !inputs.every((i) => isObject(i) && typeof i.name === 'string')) {
    return null;
  }
  const named = inputs as readonly JsonObject[];
  if (naming.columns !== null) return fillMissingColumns(body, named, naming.columns);
  const first = named[0] as JsonObject;
  const features = naming.features;
  if (
    features !== null &&
    (named.length > 1 ||
      (first.name !== features.input.name && features.columns.has(first.name as string)))
  ) {
    return assembleFeatures(body, named, features);
  }
  const target = naming.anyName;
  if (target !== null && named.length === 1 && first.name !== target.name) {
    return { ok: true, body: { ...body, inputs: [{ ...first, name: target.name }] } };
  }
  return null;
}

/** Whether the request's parameters ask for missing features to be missing values. */
export function allowsMissingFeatures(parameters: unknown): boolean {
  if (!isObject(parameters)) return false;
  const value = parameters[allowMissingFeaturesParameter];
  return value === true || value === 'true' || value === 1;
}

/**
 * The missing features' failure, or null when there are none or the request allows them and
 * the model's input takes missing values (`missing` lists feature columns).
 */
export function missingFeaturesFailure(
  features: FeatureColumns,
  missing: readonly number[],
  allow: boolean,
  where = '',
): V2Failure | null {
  const names = missing.map((column) => features.names[column] as string);
  return missingFailure(
    names,
    allow,
    takesMissingValues(features.input) ? null : features.input,
    where,
  );
}

/** Like missingFeaturesFailure, for feature columns declared as inputs. */
export function missingColumnsFailure(
  missing: readonly CompiledInput[],
  allow: boolean,
  where = '',
): V2Failure | null {
  const refusing = missing.find((input) => !takesMissingValues(input)) ?? null;
  return missingFailure(
    missing.map((input) => input.name),
    allow,
    refusing,
    where,
  );
}

/** `refusing`: the input that takes no missing values, if one (then allowing is no help). */
function missingFailure(
  missing: readonly string[],
  allow: boolean,
  refusing: CompiledInput | null,
  where: string,
): V2Failure | null {
  if (missing.length === 0) return null;
  const names = listNames(missing);
  const first = missing[0] as string;
  const plural = missing.length === 1 ? '' : 's';
  const input = refusing;
  if (!allow) {
    return v2Failure(
      'KILN_INPUT_MISMATCH',
      `${where}missing feature${plural} ${names}; send every feature, or set the request parameter ${allowMissingFeaturesParameter}: true to send them as missing values`,
      first,
    );
  }
  if (input !== null) {
    return v2Failure(
      'KILN_INPUT_MISMATCH',
      `${where}missing feature${plural} ${names}: input '${input.name}' (${input.datatype}) takes no missing values`,
      first,
    );
  }
  return null;
}

function takesMissingValues(input: CompiledInput): boolean {
  const d = input.datatype;
  return input.allowNonFinite && (d === 'FP16' || d === 'FP32' || d === 'FP64' || d === 'BF16');
}

// Half floats are left out: their decoded form is raw bits, and nobody sends a column so.
const featureDatatypes: ReadonlySet<TensorDatatype> = new Set(
  numericDatatypes.filter((d) => d !== 'FP16' && d !== 'BF16' && d !== 'BOOL'),
);

/**
 * Declared feature columns with some left out: with allow_missing_features, the missing ones
 * as columns of missing values; without, the 400 that says how. null when none is missing or
 * another input is unknown (the strict check's verdict stands).
 */
function fillMissingColumns(
  body: JsonObject,
  inputs: readonly JsonObject[],
  columns: readonly CompiledInput[],
): { readonly ok: true; readonly body: JsonObject } | V2Failure | null {
  const present = new Set(inputs.map((input) => input.name as string));
  if (columns.length <= present.size) return null;
  const known = new Set(columns.map((input) => input.name));
  for (const name of present) if (!known.has(name)) return null;
  const missing = columns.filter((input) => !present.has(input.name));
  const problem = missingColumnsFailure(missing, allowsMissingFeatures(body.parameters));
  if (problem !== null) return problem;
  const { shape, data } = inputs[0] as JsonObject;
  const rows = Array.isArray(shape) ? (shape as readonly unknown[])[0] : undefined;
  if (typeof rows !== 'number' || !Number.isSafeInteger(rows) || rows < 0) return null;
  // The row count comes from the client: a column of N rows holds N values ([N] flat, [N, 1]
  // flat or nested), so a shape its data does not fill builds nothing (the decoder's 400).
  if (!Array.isArray(data) || data.length !== rows) return null;
  const filled = missing.map((input) => ({
    name: input.name,
    datatype: input.datatype,
    shape: input.shape.length === 1 ? [rows] : [rows, 1],
    data: new Array<null>(rows).fill(null),
  }));
  return { ok: true, body: { ...body, inputs: [...inputs, ...filled] } };
}

/** MLServer's pandas style: one input a feature, each [N] or [N, 1], into [N, F] rows. */
function assembleFeatures(
  body: JsonObject,
  inputs: readonly JsonObject[],
  features: FeatureColumns,
): { readonly ok: true; readonly body: JsonObject } | V2Failure {
  const model = features.input;
  const width = features.names.length;
  const columns: (readonly FeatureValue[] | null)[] = new Array<readonly FeatureValue[] | null>(
    width,
  ).fill(null);
  let rows = -1;
  let firstName = '';
  for (const raw of inputs) {
    const name = raw.name as string;
    if (name === model.name) {
      return v2Failure(
        'KILN_INVALID_INFER_REQUEST',
        `the request mixes input '${model.name}' (every feature in one tensor) with named features; send one or the other`,
        name,
      );
    }
    const column = features.columns.get(name);
    if (column === undefined) {
      return v2Failure(
        'KILN_INPUT_MISMATCH',
        `unknown feature '${name}'; the model's features are: ${features.namesText}`,
        name,
      );
    }
    if (columns[column] !== null) {
      return v2Failure('KILN_INVALID_INFER_REQUEST', `feature '${name}' appears twice`, name);
    }
    const values = featureValues(raw, name, model);
    if (!values.ok) return values;
    if (rows === -1) {
      rows = values.values.length;
      firstName = name;
    } else if (values.values.length !== rows) {
      return v2Failure(
        'KILN_INPUT_MISMATCH',
        `features disagree on the number of rows: '${firstName}' has ${rows}, '${name}' has ${values.values.length}`,
        name,
      );
    }
    columns[column] = values.values;
  }
  const missing: number[] = [];
  for (let c = 0; c < width; c++) if (columns[c] === null) missing.push(c);
  const problem = missingFeaturesFailure(features, missing, allowsMissingFeatures(body.parameters));
  if (problem !== null) return problem;
  const data = new Array<FeatureValue | null>(rows * width);
  for (let c = 0; c < width; c++) {
    const column = columns[c] ?? null;
    for (let r = 0; r < rows; r++) data[r * width + c] = column === null ? null : column[r]!;
  }
  const input = { name: model.name, datatype: model.datatype, shape: [rows, width], data };
  return { ok: true, body: { ...body, inputs: [input] } };
}

/** A feature's value as the model's input takes it (bigint: a 64-bit integer input). */
type FeatureValue = number | bigint;

/** One feature's values, checked against its own datatype and shape. */
function featureValues(
  raw: JsonObject,
  name: string,
  model: CompiledInput,
): { readonly ok: true; readonly values: readonly FeatureValue[] } | V2Failure {
  const datatype: unknown = raw.datatype;
  if (!isTensorDatatype(datatype) || !featureDatatypes.has(datatype)) {
    return v2Failure(
      'KILN_INPUT_MISMATCH',
      `feature '${name}': datatype ${typeof datatype === 'string' ? datatype : jsonKind(datatype)} cannot carry a feature; send numbers (FP32, FP64 or integers)`,
      name,
    );
  }
  const shape: unknown = raw.shape;
  const dims = Array.isArray(shape) ? (shape as readonly unknown[]) : [];
  const rows = dims[0];
  const oneColumn =
    typeof rows === 'number' &&
    Number.isSafeInteger(rows) &&
    rows >= 0 &&
    (dims.length === 1 || (dims.length === 2 && dims[1] === 1));
  if (!oneColumn) {
    return v2Failure(
      'KILN_INPUT_MISMATCH',
      `feature '${name}': shape ${Array.isArray(shape) ? formatShape(dims) : jsonKind(shape)}; a feature is one value a row, shape [N] or [N, 1]`,
      name,
    );
  }
  if (raw.data === undefined) {
    return v2Failure('KILN_INVALID_INFER_REQUEST', `input '${name}': 'data' is missing`, name);
  }
  const decoded = decodeTensorData(
    {
      name,
      datatype,
      shape: dims as readonly number[],
      count: rows,
      allowNonFinite: model.allowNonFinite,
    },
    raw.data,
  );
  if (!decoded.ok) return decoded; // an INT64 past 2^53 read as a double: the caller re-reads
  const typed = decoded.data as ArrayLike<FeatureValue>;
  const values = new Array<FeatureValue>(rows);
  // 64-bit integers (exact bigints) go into the model's input in one rounding, as the
  // library casts the column and as a plain INT64 tensor is read (feature-rows.ts): float32
  // straight from the integer, not through a double, which would round twice.
  const read: (value: bigint) => FeatureValue =
    model.datatype === 'INT64' || model.datatype === 'UINT64'
      ? (value) => value
      : model.datatype === 'FP32'
        ? bigintToFloat32
        : Number;
  for (let r = 0; r < rows; r++) {
    const value = typed[r]!;
    values[r] = typeof value === 'bigint' ? read(value) : value;
  }
  return { ok: true, values };
}
