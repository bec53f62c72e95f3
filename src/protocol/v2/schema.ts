// A model's v2 schema, compiled once per model version into what the request check needs:
// inputs by name, each with its shape pattern and float policy, and the batch rule.
//
// Batch rule: the inputs whose declared first dimension is -1 are batched together (the
// runtime SPI runs one batch along the first dimension), so a request must give them all the
// same first dimension, and that dimension may not exceed `maxBatch`. Inputs whose first
// dimension is fixed (a lookup table, say) are left out of the rule.

import type { ModelSchema, TensorDatatype } from '../../core/tensor.ts';
import { isTensorDatatype } from './datatypes.ts';
import type { V2Failure } from './errors.ts';
import { formatShape, v2Failure } from './errors.ts';
import { numericDatatypes, type InputDatatypePolicy } from './input-datatypes.ts';

export interface CompiledInput {
  readonly name: string;
  /** Position in the schema's input list. */
  readonly index: number;
  readonly datatype: TensorDatatype;
  /** Declared dimensions; -1 matches any size. */
  readonly shape: readonly number[];
  /** `[-1, 4]`, precomputed for messages. */
  readonly shapeText: string;
  /** Any rank and shape is taken (TensorSpec.anyRank): only the datatype is checked. */
  readonly anyRank: boolean;
  /** First dimension is -1: this input takes part in the batch rule. */
  readonly batched: boolean;
  /** Whether NaN, ±Infinity and null (missing) are accepted (float datatypes only). */
  readonly allowNonFinite: boolean;
  /** 'numeric': any numeric datatype is taken, the runtime converts (input-datatypes.ts). */
  readonly datatypes: InputDatatypePolicy;
}

export interface CompiledSchema {
  readonly inputs: ReadonlyMap<string, CompiledInput>;
  readonly inputList: readonly CompiledInput[];
  /** `x, z`: the input names, for messages. */
  readonly inputNames: string;
  readonly outputs: ReadonlySet<string>;
  readonly outputNames: string;
  /** Largest accepted batch (first dimension of the batched inputs); null: no limit. */
  readonly maxBatch: number | null;
}

export interface CompileSchemaOptions {
  /** Accept NaN/±Infinity/null in float inputs (default true); per input with a function. */
  readonly allowNonFinite?: boolean | ((input: string) => boolean);
  readonly maxBatch?: number;
  /** Which request datatypes the inputs take (default 'exact'): inputDatatypePolicy(format). */
  readonly inputDatatypes?: InputDatatypePolicy;
}

/**
 * Compiles `schema`. Throws on a malformed schema (duplicate or empty names, unknown
 * datatypes, dimensions other than -1 or a non-negative integer): schemas are checked when a
 * version is registered, so one reaching here malformed is a bug, not user input.
 */
export function compileSchema(
  schema: ModelSchema,
  options: CompileSchemaOptions = {},
): CompiledSchema {
  const allow = options.allowNonFinite ?? true;
  const maxBatch = options.maxBatch ?? null;
  const datatypes = options.inputDatatypes ?? 'exact';
  if (maxBatch !== null && !(Number.isSafeInteger(maxBatch) && maxBatch >= 1)) {
    throw new Error(`maxBatch must be a positive integer, got ${maxBatch}`);
  }
  const inputs = new Map<string, CompiledInput>();
  const inputList: CompiledInput[] = [];
  for (const spec of schema.inputs) {
    checkSpec('input', spec.name, spec.datatype, spec.shape, inputs);
    const compiled: CompiledInput = {
      name: spec.name,
      index: inputList.length,
      datatype: spec.datatype,
      shape: [...spec.shape],
      shapeText: spec.anyRank === true ? '[?]' : formatShape(spec.shape),
      anyRank: spec.anyRank === true,
      batched: spec.anyRank !== true && spec.shape.length >= 1 && spec.shape[0] === -1,
      allowNonFinite: typeof allow === 'function' ? allow(spec.name) : allow,
      datatypes,
    };
    inputs.set(spec.name, compiled);
    inputList.push(compiled);
  }
  const outputs = new Map<string, true>();
  for (const spec of schema.outputs) {
    checkSpec('output', spec.name, spec.datatype, spec.shape, outputs);
    outputs.set(spec.name, true);
  }
  return {
    inputs,
    inputList,
    inputNames: inputList.map((i) => i.name).join(', '),
    outputs: new Set(outputs.keys()),
    outputNames: [...outputs.keys()].join(', '),
    maxBatch,
  };
}

function checkSpec(
  kind: string,
  name: unknown,
  datatype: unknown,
  shape: readonly unknown[],
  seen: ReadonlyMap<string, unknown>,
): void {
  if (typeof name !== 'string' || name === '') throw new Error(`schema ${kind} without a name`);
  if (seen.has(name)) throw new Error(`schema ${kind} '${name}' is declared twice`);
  if (!isTensorDatatype(datatype)) {
    throw new Error(`schema ${kind} '${name}' has unknown datatype ${String(datatype)}`);
  }
  if (!Array.isArray(shape) || !shape.every((d) => d === -1 || isDimension(d))) {
    throw new Error(
      `schema ${kind} '${name}' has shape ${formatShape(shape)}; dimensions are -1 or integers ≥ 0`,
    );
  }
}

function isDimension(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

// --- checks used by the request decoder -------------------------------------------------------

/** The compiled input for `name`, or the unknown-input failure. */
export function findInput(schema: CompiledSchema, name: string): CompiledInput | V2Failure {
  const input = schema.inputs.get(name);
  if (input !== undefined) return input;
  return v2Failure(
    'KILN_INPUT_MISMATCH',
    `unknown input '${name}'; the model takes: ${schema.inputNames}`,
    name,
  );
}

/** Datatype and shape of a request input against its declaration. */
export function matchInput(
  input: CompiledInput,
  datatype: TensorDatatype,
  shape: readonly number[],
): V2Failure | null {
  const wrongDatatype = datatypeMismatch(input, datatype);
  if (wrongDatatype !== null) return wrongDatatype;
  if (input.anyRank) return null;
  const declared = input.shape;
  let matches = shape.length === declared.length;
  for (let d = 0; matches && d < declared.length; d++) {
    const want = declared[d];
    matches = want === -1 || want === shape[d];
  }
  if (matches) return null;
  return v2Failure(
    'KILN_INPUT_MISMATCH',
    `input '${input.name}': expected shape ${input.shapeText}, got ${formatShape(shape)}`,
    input.name,
  );
}

/**
 * A request datatype against the input's policy: exactly the declared one, or for a
 * 'numeric' input (tree models) any datatype that holds numbers.
 */
export function datatypeMismatch(input: CompiledInput, datatype: TensorDatatype): V2Failure | null {
  if (datatype === input.datatype) return null;
  if (input.datatypes === 'exact') {
    return v2Failure(
      'KILN_INPUT_MISMATCH',
      `input '${input.name}': expected datatype ${input.datatype}, got ${datatype}`,
      input.name,
    );
  }
  if (numericDatatypes.includes(datatype)) return null;
  return v2Failure(
    'KILN_INPUT_MISMATCH',
    `input '${input.name}': datatype ${datatype} does not hold numbers; the model takes ${input.datatype} (or any of ${numericDatatypes.join(', ')}, converted as the model's library would)`,
    input.name,
  );
}

/** `seen[i]` says whether the schema's i-th input was in the request. */
export function checkMissingInputs(
  schema: CompiledSchema,
  seen: readonly boolean[],
): V2Failure | null {
  const missing: string[] = [];
  for (const input of schema.inputList) if (seen[input.index] !== true) missing.push(input.name);
  if (missing.length === 0) return null;
  const names = missing.map((n) => `'${n}'`).join(', ');
  return v2Failure(
    'KILN_INPUT_MISMATCH',
    `missing input${missing.length === 1 ? '' : 's'} ${names}`,
    missing[0],
  );
}

/**
 * The batch rule over the request's inputs (each with its compiled declaration). Returns the
 * batch size (null when no input is batched) or the failure.
 */
export function checkBatch(
  schema: CompiledSchema,
  inputs: readonly { readonly spec: CompiledInput; readonly shape: readonly number[] }[],
): number | null | V2Failure {
  let batch: number | null = null;
  let first = '';
  for (const { spec, shape } of inputs) {
    if (!spec.batched) continue;
    const size = shape[0] ?? 0;
    if (batch === null) {
      batch = size;
      first = spec.name;
    } else if (size !== batch) {
      return v2Failure(
        'KILN_INPUT_MISMATCH',
        `inputs disagree on the batch size (first dimension): '${first}' has ${batch}, '${spec.name}' has ${size}`,
        spec.name,
      );
    }
  }
  if (batch !== null && schema.maxBatch !== null && batch > schema.maxBatch) {
    return v2Failure(
      'KILN_BATCH_TOO_LARGE',
      `batch size ${batch} exceeds the model's maximum of ${schema.maxBatch}; split the request`,
    );
  }
  return batch;
}

export function checkRequestedOutput(schema: CompiledSchema, name: string): V2Failure | null {
  if (schema.outputs.has(name)) return null;
  return v2Failure(
    'KILN_INPUT_MISMATCH',
    `unknown output '${name}'; the model gives: ${schema.outputNames}`,
  );
}
