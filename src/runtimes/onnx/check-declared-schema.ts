// Deploy-time check of a version's declared schema (what the user promised callers) against
// the tensors the ONNX model really takes and gives. Pure: the model side is either a loaded
// runtime's inputs/outputs or the registry's formatInfo for the version (both fit
// ModelTensors), so the control plane can check before starting any replica.
//
// Rules: every declared input exists in the model with the same datatype and a compatible
// shape; every model input is declared (initializers are not inputs: the registry's reader
// and onnxruntime both leave them out); every declared output exists, likewise. Undeclared
// model outputs are fine: a schema may publish a subset. Shapes are compatible when the ranks
// match and each pair of dimensions is equal or has a -1 on either side; a model whose graph
// leaves the rank open accepts any declared shape.

import type { ModelSchema, TensorSpec } from '../../core/tensor.ts';
import { formatShape } from './onnx-signature.ts';

/** A model-side tensor: a TensorSpec, or the registry's OnnxTensorInfo (nulls when unknown). */
export interface ModelTensor {
  readonly name: string;
  readonly datatype: string | null;
  readonly shape: readonly number[] | null;
  /** Set for values that are not dense tensors ('sequence', 'map', ...). */
  readonly kind?: string;
}

export interface ModelTensors {
  readonly inputs: readonly ModelTensor[];
  readonly outputs: readonly ModelTensor[];
}

export type SchemaCheck = { readonly ok: true } | { readonly ok: false; readonly reason: string };

export function checkDeclaredSchema(declared: ModelSchema, model: ModelTensors): SchemaCheck {
  const problems: string[] = [];
  for (const [role, declaredSpecs, modelSpecs] of [
    ['input', declared.inputs, model.inputs],
    ['output', declared.outputs, model.outputs],
  ] as const) {
    const byName = new Map(modelSpecs.map((spec) => [spec.name, spec]));
    const seen = new Set<string>();
    for (const spec of declaredSpecs) {
      if (seen.has(spec.name)) {
        problems.push(`${role} '${spec.name}' is declared twice`);
        continue;
      }
      seen.add(spec.name);
      const actual = byName.get(spec.name);
      if (actual === undefined) {
        const names = modelSpecs.map((s) => `'${s.name}'`).join(', ') || 'none';
        problems.push(
          `${role} '${spec.name}' is declared but the model has no such ${role} (its ${role}s: ${names})`,
        );
        continue;
      }
      const problem = specProblem(role, spec, actual);
      if (problem !== null) problems.push(problem);
    }
    if (role === 'input') {
      for (const spec of modelSpecs) {
        if (!seen.has(spec.name)) {
          problems.push(
            `input '${spec.name}' (${describe(spec)}) is required by the model but not declared`,
          );
        }
      }
    }
  }
  return problems.length === 0 ? { ok: true } : { ok: false, reason: problems.join('; ') };
}

function specProblem(
  role: 'input' | 'output',
  declared: TensorSpec,
  actual: ModelTensor,
): string | null {
  const where = `${role} '${declared.name}'`;
  const verb = role === 'input' ? 'takes' : 'gives';
  if (actual.kind !== undefined)
    return `${where}: the model's ${role} is a ${actual.kind}, not a tensor`;
  if (actual.datatype !== declared.datatype) {
    return `${where}: declared ${declared.datatype} but the model ${verb} ${actual.datatype ?? 'an unknown type'}`;
  }
  if (actual.shape === null) return null;
  const compatible =
    actual.shape.length === declared.shape.length &&
    actual.shape.every((dim, i) => {
      const other = declared.shape[i] ?? -1;
      return dim === -1 || other === -1 || dim === other;
    });
  if (compatible) return null;
  const rank = actual.shape.length === declared.shape.length ? '' : ' (ranks differ)';
  return `${where}: declared shape ${formatShape(declared.shape)} but the model ${verb} ${formatShape(actual.shape)}${rank}`;
}

function describe(spec: ModelTensor): string {
  return `${spec.datatype ?? spec.kind ?? 'unknown type'} ${formatShape(spec.shape)}`;
}
