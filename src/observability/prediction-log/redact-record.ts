// Applies an endpoint's redaction rules (PredictionLogConfig.redact) to what one prediction-log
// record would hold, before anything is written (issue 15, D). Pure.
//
// A rule's `field` names
//   - an input tensor of the request (`age`), or, for a request of one 2-D input whose
//     columns are the version's features, a feature (its column);
//   - a request parameter: `parameters.NAME`;
//   - an output tensor of the answer: `outputs.NAME`.
// `drop` removes the tensor or parameter (a feature column's values become null: the shape
// stays true); `hash` replaces each element by `sha256:` + the hex digest of its text, so equal
// values stay joinable and nothing readable is kept.
// Anything the rules cannot see into is not logged when there are rules: a request in
// another form than v2 `inputs` (v1 `instances`) is logged without its inputs
// (`inputsOmitted`), so a redacted field never reaches the file.

import { createHash } from 'node:crypto';
import type { RedactionRule } from '../../store/observability-config.ts';

export interface LoggedTensor {
  readonly name: string;
  readonly datatype?: unknown;
  readonly shape?: unknown;
  readonly data: unknown;
}

export interface RedactedParts {
  readonly inputs: LoggedTensor[] | null;
  readonly parameters: Record<string, unknown> | null;
  readonly outputs: LoggedTensor[] | null;
  /** Why the inputs are not in the record (null: they are, or there were none). */
  readonly inputsOmitted: string | null;
  /** Rules that matched nothing in this record (the schema may not have that field). */
  readonly unmatched: readonly string[];
}

export function hashValue(value: unknown): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return `sha256:${createHash('sha256').update(text).digest('hex')}`;
}

/**
 * The request's inputs and parameters and the answer's outputs with `rules` applied.
 * `request`: the parsed request body (v2 `{inputs, parameters}`; anything else has no
 * inputs the rules can see); `answer`: the parsed answer body (null: none, e.g. an error);
 * `features`: the version's feature names, in column order (null: none known).
 */
export function redactRecord(
  request: unknown,
  answer: unknown,
  rules: readonly RedactionRule[],
  features: readonly string[] | null,
): RedactedParts {
  const matched = new Set<string>();
  let inputs: LoggedTensor[] | null = null;
  let inputsOmitted: string | null = null;
  let parameters: Record<string, unknown> | null = null;
  const body = isObject(request) ? request : null;
  const rawInputs = body?.inputs;
  if (Array.isArray(rawInputs) && rawInputs.every(isTensor)) {
    inputs = redactTensors(rawInputs, rules, '', matched);
    if (features !== null) redactFeatureColumns(inputs, rules, features, matched);
  } else if (body !== null && 'instances' in body && rules.length === 0) {
    // A v1 predict body with nothing to redact: its instances as they came.
    inputs = [{ name: 'instances', data: body.instances }];
  } else if (rawInputs !== undefined || (body !== null && 'instances' in body)) {
    inputsOmitted = 'the request is in a form the redaction rules cannot see into';
  }
  if (isObject(body?.parameters)) {
    parameters = {};
    for (const [name, value] of Object.entries(body.parameters)) {
      const rule = rules.find((r) => r.field === `parameters.${name}`);
      if (rule === undefined) parameters[name] = value;
      else {
        matched.add(rule.field);
        if (rule.action === 'hash') parameters[name] = hashValue(value);
      }
    }
  }
  let outputs: LoggedTensor[] | null = null;
  const rawOutputs = isObject(answer) ? answer.outputs : undefined;
  if (Array.isArray(rawOutputs) && rawOutputs.every(isTensor)) {
    outputs = redactTensors(rawOutputs, rules, 'outputs.', matched);
  }
  const unmatched = rules.filter((r) => !matched.has(r.field)).map((r) => r.field);
  return { inputs, parameters, outputs, inputsOmitted, unmatched };
}

function redactTensors(
  tensors: readonly LoggedTensor[],
  rules: readonly RedactionRule[],
  prefix: string,
  matched: Set<string>,
): LoggedTensor[] {
  const kept: LoggedTensor[] = [];
  for (const tensor of tensors) {
    const rule = rules.find((r) => r.field === prefix + tensor.name);
    const copy: LoggedTensor = {
      name: tensor.name,
      datatype: tensor.datatype,
      shape: tensor.shape,
      data: tensor.data,
    };
    if (rule === undefined) {
      kept.push(copy);
      continue;
    }
    matched.add(rule.field);
    if (rule.action === 'hash') kept.push({ ...copy, data: mapLeaves(tensor.data, hashValue) });
  }
  return kept;
}

/** Feature rules on a request of one 2-D input with one column per feature. */
function redactFeatureColumns(
  inputs: LoggedTensor[],
  rules: readonly RedactionRule[],
  features: readonly string[],
  matched: Set<string>,
): void {
  if (inputs.length !== 1) return;
  const input = inputs[0]!;
  const shape = input.shape;
  if (!Array.isArray(shape) || shape.length !== 2 || shape[1] !== features.length) return;
  const columns = features.length;
  const flat = Array.isArray(input.data) ? (input.data as unknown[]).flat(Infinity) : null;
  if (flat === null || columns === 0) return;
  let changed = false;
  for (const rule of rules) {
    const column = features.indexOf(rule.field);
    if (column === -1 || rule.field === input.name) continue;
    matched.add(rule.field);
    changed = true;
    for (let i = column; i < flat.length; i += columns) {
      flat[i] = rule.action === 'hash' ? hashValue(flat[i]) : null;
    }
  }
  if (changed) inputs[0] = { ...input, data: flat };
}

function mapLeaves(value: unknown, leaf: (value: unknown) => unknown): unknown {
  return Array.isArray(value) ? value.map((item) => mapLeaves(item, leaf)) : leaf(value);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isTensor(value: unknown): value is LoggedTensor {
  return isObject(value) && typeof value.name === 'string';
}

/** The field names rules may name for a version: inputs, features, `outputs.NAME`. */
export function redactableFields(
  inputs: readonly string[],
  outputs: readonly string[],
  features: readonly string[],
): ReadonlySet<string> {
  return new Set([...inputs, ...features, ...outputs.map((name) => `outputs.${name}`)]);
}

/**
 * The rules naming nothing a version has (deploy refuses them when the schema is known);
 * `parameters.*` rules name request parameters, which no schema lists, and always pass.
 */
export function rulesNamingNothing(
  rules: readonly RedactionRule[],
  fields: ReadonlySet<string>,
): string[] {
  return rules
    .filter((r) => !r.field.startsWith('parameters.') && !fields.has(r.field))
    .map((r) => r.field);
}
