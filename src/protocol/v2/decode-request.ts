// The v2 infer request, from parsed JSON to the runtime's InferRequest, with every check the
// data plane makes. The gateway runs the validate-only form (checkInferRequest), the worker
// the decoding one; both give the same verdict and the same message.
//
// Order of checks, so the first message names the root cause:
//   body shape → id, parameters → each input's header (name, duplicates, binary data, known
//   to the model, datatype, shape, parameters, declared datatype/shape) → missing inputs →
//   batch rule → requested outputs → each input's data (count, nesting, elements).
//
// Raw bodies should go through parseInferRequest / checkInferRequestText: JSON.parse rounds
// integers beyond 2^53, so those re-read the text with exact integers when an INT64/UINT64
// input needs it.

import type { Tensor, TensorDatatype, TensorParameters } from '../../core/tensor.ts';
import { tensorDatatypes } from '../../core/tensor.ts';
import type { InferRequest } from '../../runtimes/runtime.ts';
import { isTensorDatatype } from './datatypes.ts';
import type { V2Failure } from './errors.ts';
import { jsonKind, preview, v2Failure } from './errors.ts';
import { parseJsonLenient, type JsonParseResult } from './lenient-json.ts';
import type { CompiledInput, CompiledSchema } from './schema.ts';
import {
  checkBatch,
  checkMissingInputs,
  checkRequestedOutput,
  findInput,
  matchInput,
} from './schema.ts';
import type { TensorDataFailure, TensorDataTarget } from './tensor-data.ts';
import { checkTensorData, decodeTensorData } from './tensor-data.ts';

export interface DecodedInferRequest extends InferRequest {
  /** The request's `id`, echoed in the response. */
  readonly id?: string;
}

export type DecodeInferResult =
  { readonly ok: true; readonly request: DecodedInferRequest } | V2Failure;

export type CheckInferResult = { readonly ok: true } | V2Failure;

/** Decodes a parsed v2 infer request body into typed arrays, checked against `schema`. */
export function decodeInferRequest(
  body: unknown,
  schema: CompiledSchema | null,
): DecodeInferResult {
  const envelope = readEnvelope(body, schema);
  if (!envelope.ok) return envelope;
  const inputs = envelope.inputs;
  const tensors = new Array<Tensor>(inputs.length);
  for (let i = 0; i < inputs.length; i++) {
    const header = inputs[i] as InputHeader;
    const decoded = decodeTensorData(header.target, header.data);
    if (!decoded.ok) return decoded;
    const { name, datatype, shape } = header.target;
    tensors[i] =
      header.parameters === undefined
        ? { name, datatype, shape, data: decoded.data }
        : { name, datatype, shape, data: decoded.data, parameters: header.parameters };
  }
  const request: {
    inputs: Tensor[];
    id?: string;
    parameters?: TensorParameters;
    outputs?: readonly string[];
  } = { inputs: tensors };
  if (envelope.id !== undefined) request.id = envelope.id;
  if (envelope.parameters !== undefined) request.parameters = envelope.parameters;
  if (envelope.outputs !== undefined) request.outputs = envelope.outputs;
  return { ok: true, request };
}

/** Every check decodeInferRequest makes, without building the tensors (for the gateway). */
export function checkInferRequest(body: unknown, schema: CompiledSchema | null): CheckInferResult {
  const envelope = readEnvelope(body, schema);
  if (!envelope.ok) return envelope;
  for (const header of envelope.inputs) {
    const checked = checkTensorData(header.target, header.data);
    if (!checked.ok) return checked;
  }
  return { ok: true };
}

/**
 * Parses (NaN/Infinity allowed) and decodes a raw body, INT64/UINT64 exact to 64 bits.
 * `parsed`: parseJsonLenient(text) when the caller has it already (the gateway, having read
 * a slice value from the body), so the text is not parsed twice.
 */
export function parseInferRequest(
  text: string | Buffer,
  schema: CompiledSchema | null,
  parsed?: JsonParseResult,
): DecodeInferResult {
  return withExactRetry(text, parsed, (body) => decodeInferRequest(body, schema));
}

/** Parses and checks a raw body without building tensors: checkInferRequest on the text. */
export function checkInferRequestText(
  text: string | Buffer,
  schema: CompiledSchema | null,
  parsed?: JsonParseResult,
): CheckInferResult {
  return withExactRetry(text, parsed, (body) => checkInferRequest(body, schema));
}

function withExactRetry<R extends { readonly ok: boolean }>(
  text: string | Buffer,
  parsed: JsonParseResult | undefined,
  run: (body: unknown) => R | V2Failure,
): R | V2Failure {
  const first = parsed ?? parseJsonLenient(text);
  if (!first.ok) return invalidJson(first.message);
  const result = run(first.value);
  if (result.ok || (result as TensorDataFailure).inexactInteger !== true) return result;
  // An INT64/UINT64 element past 2^53: read the text again keeping such integers exact.
  const exact = parseJsonLenient(text, { exactIntegers: true });
  return exact.ok ? run(exact.value) : invalidJson(exact.message);
}

function invalidJson(reason: string): V2Failure {
  return v2Failure('KILN_INVALID_JSON', `request body is not valid JSON: ${reason}`);
}

// --- the envelope: everything but the tensor data ------------------------------------------

interface InputHeader {
  readonly target: TensorDataTarget;
  readonly data: unknown;
  readonly parameters: TensorParameters | undefined;
}

interface Envelope {
  readonly ok: true;
  readonly id: string | undefined;
  readonly parameters: TensorParameters | undefined;
  readonly outputs: readonly string[] | undefined;
  readonly inputs: readonly InputHeader[];
}

type JsonObject = Readonly<Record<string, unknown>>;

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function invalid(message: string, input?: string): V2Failure {
  return v2Failure('KILN_INVALID_INFER_REQUEST', message, input);
}

function readEnvelope(body: unknown, schema: CompiledSchema | null): Envelope | V2Failure {
  if (!isObject(body))
    return invalid(`the request body must be a JSON object, got ${jsonKind(body)}`);
  const id = body.id;
  if (id !== undefined && typeof id !== 'string') {
    return invalid(`'id' must be a string, got ${jsonKind(id)}`);
  }
  const parameters = readParameters(body.parameters, "'parameters'");
  if (!parameters.ok) return parameters;
  const v1 = v1FieldProblem(body);
  if (v1 !== null) return v1;
  const rawInputs = body.inputs;
  if (!Array.isArray(rawInputs)) {
    return invalid(`'inputs' must be an array of tensors, got ${jsonKind(rawInputs)}`);
  }
  if (rawInputs.length === 0 && (schema === null || schema.inputList.length > 0)) {
    return invalid("'inputs' is empty; send at least one input tensor");
  }
  const seen: boolean[] = [];
  let names: Set<string> | null = null;
  const inputs: InputHeader[] = [];
  const specs: { spec: CompiledInput; shape: readonly number[] }[] = [];
  for (let i = 0; i < rawInputs.length; i++) {
    const raw: unknown = rawInputs[i];
    if (!isObject(raw)) return invalid(`inputs[${i}] must be an object, got ${jsonKind(raw)}`);
    const name = raw.name;
    if (typeof name !== 'string' || name === '') {
      return invalid(`inputs[${i}]: 'name' must be a non-empty string`);
    }
    let spec: CompiledInput | null = null;
    if (schema !== null) {
      const found = findInput(schema, name);
      if ('ok' in found) return found;
      if (seen[found.index] === true) return invalid(`input '${name}' appears twice`, name);
      seen[found.index] = true;
      spec = found;
    } else if (rawInputs.length > 1) {
      names ??= new Set();
      if (names.has(name)) return invalid(`input '${name}' appears twice`, name);
      names.add(name);
    }
    const header = readInputHeader(raw, name, spec);
    if (!header.ok) return header;
    inputs.push(header.header);
    if (spec !== null) specs.push({ spec, shape: header.header.target.shape });
  }
  if (schema !== null) {
    const missing = checkMissingInputs(schema, seen);
    if (missing !== null) return missing;
    const batch = checkBatch(schema, specs);
    if (batch !== null && typeof batch === 'object') return batch;
  }
  const outputs = readRequestedOutputs(body.outputs, schema);
  if (!outputs.ok) return outputs;
  return {
    ok: true,
    id,
    parameters: parameters.value,
    outputs: outputs.names,
    inputs,
  };
}

/** A v1 body (`instances`) sent as v2, alone or beside `inputs`: said so, not ignored. */
function v1FieldProblem(body: JsonObject): V2Failure | null {
  if (body.instances === undefined) return null;
  return invalid(
    body.inputs === undefined
      ? `'instances' is the v1 protocol's field (POST /v1/models/{name}:predict); v2 infer takes {"inputs": [...]}`
      : `the body mixes v1 'instances' with v2 'inputs'; send one or the other`,
  );
}

function readInputHeader(
  raw: JsonObject,
  name: string,
  spec: CompiledInput | null,
): { readonly ok: true; readonly header: InputHeader } | V2Failure {
  const parameters = readParameters(raw.parameters, `input '${name}': 'parameters'`);
  if (!parameters.ok) return parameters;
  if (parameters.value !== undefined && 'binary_data_size' in parameters.value) {
    return v2Failure(
      'KILN_UNSUPPORTED_EXTENSION',
      `input '${name}': binary tensor data extension is not supported; send JSON data`,
      name,
    );
  }
  const datatype: unknown = raw.datatype;
  if (!isTensorDatatype(datatype)) {
    return invalid(
      `input '${name}': unknown datatype ${preview(datatype)}; expected one of ${tensorDatatypes.join(', ')}`,
      name,
    );
  }
  const shape: unknown = raw.shape;
  const count = shapeCount(shape);
  if (count < 0) {
    return invalid(
      `input '${name}': 'shape' must be an array of non-negative integers, got ${preview(shape)}`,
      name,
    );
  }
  const dims = shape as readonly number[];
  if (spec !== null) {
    const mismatch = matchInput(spec, datatype, dims);
    if (mismatch !== null) return mismatch;
  }
  if (raw.data === undefined) return invalid(`input '${name}': 'data' is missing`, name);
  const target: TensorDataTarget = {
    name,
    datatype: datatype satisfies TensorDatatype,
    shape: dims,
    count,
    allowNonFinite: spec?.allowNonFinite ?? true,
  };
  return { ok: true, header: { target, data: raw.data, parameters: parameters.value } };
}

/** Product of a valid shape, or -1 when `shape` is not an array of non-negative integers. */
function shapeCount(shape: unknown): number {
  if (!Array.isArray(shape)) return -1;
  let count = 1;
  for (const d of shape as readonly unknown[]) {
    if (typeof d !== 'number' || !Number.isSafeInteger(d) || d < 0) return -1;
    count *= d;
  }
  return count;
}

type ParametersResult =
  { readonly ok: true; readonly value: TensorParameters | undefined } | V2Failure;

/** v2 parameters: an object of string, number or boolean values (bigints become numbers). */
function readParameters(value: unknown, where: string): ParametersResult {
  if (value === undefined) return { ok: true, value: undefined };
  if (!isObject(value)) return invalid(`${where} must be an object, got ${jsonKind(value)}`);
  let converted: Record<string, string | number | boolean> | null = null;
  for (const key of Object.keys(value)) {
    const v = value[key];
    if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') continue;
    if (typeof v !== 'bigint') {
      return invalid(`${where}: '${key}' must be a string, number or boolean, got ${jsonKind(v)}`);
    }
    converted ??= { ...(value as Record<string, string | number | boolean>) };
    converted[key] = Number(v);
  }
  return { ok: true, value: converted ?? (value as TensorParameters) };
}

function readRequestedOutputs(
  value: unknown,
  schema: CompiledSchema | null,
): { readonly ok: true; readonly names: readonly string[] | undefined } | V2Failure {
  if (value === undefined) return { ok: true, names: undefined };
  if (!Array.isArray(value)) {
    return invalid(`'outputs' must be an array of {"name"} objects, got ${jsonKind(value)}`);
  }
  // No outputs listed means all of them, as when 'outputs' is absent.
  if (value.length === 0) return { ok: true, names: undefined };
  const names: string[] = [];
  for (let i = 0; i < value.length; i++) {
    const raw: unknown = value[i];
    if (!isObject(raw) || typeof raw.name !== 'string' || raw.name === '') {
      return invalid(`outputs[${i}] must be an object with a non-empty 'name'`);
    }
    const name = raw.name;
    if (names.includes(name)) return invalid(`output '${name}' is requested twice`);
    const parameters = readParameters(raw.parameters, `output '${name}': 'parameters'`);
    if (!parameters.ok) return parameters;
    // `binary_data` is ignored: outputs always come back as JSON, which v2 clients read.
    if (parameters.value !== undefined && 'classification' in parameters.value) {
      return v2Failure(
        'KILN_UNSUPPORTED_EXTENSION',
        `output '${name}': the classification extension is not supported`,
      );
    }
    if (schema !== null) {
      const unknown = checkRequestedOutput(schema, name);
      if (unknown !== null) return unknown;
    }
    names.push(name);
  }
  return { ok: true, names };
}
