// Checks one inference request against the model's signature and turns it into onnxruntime
// feeds. Everything onnxruntime would reject about the inputs themselves (names, datatypes,
// ranks, fixed dimensions, data lengths) is caught here and answered as `invalid_input`, so
// ORT never throws at a caller; what ORT still rejects at run time is the model's failure.

import type { InferFailure, InferRequest } from '../runtime.ts';
import type { Tensor as OrtTensor } from 'onnxruntime-node';
import { formatShape, type OnnxSignature } from './onnx-signature.ts';
import { tensorDataProblem, toOrtTensor } from './onnx-tensors.ts';

export type PreparedRequest =
  | {
      readonly ok: true;
      readonly feeds: Record<string, OrtTensor>;
      /** Output names to fetch, in the order the outputs are returned. */
      readonly fetches: readonly string[];
    }
  | InferFailure;

function invalid(message: string): InferFailure {
  return { ok: false, kind: 'invalid_input', message };
}

export function checkInferRequest(
  signature: OnnxSignature,
  request: InferRequest,
): PreparedRequest {
  const specs = new Map(signature.inputs.map((spec) => [spec.name, spec]));
  const feeds: Record<string, OrtTensor> = {};
  for (const tensor of request.inputs) {
    const spec = specs.get(tensor.name);
    const where = `input '${tensor.name}'`;
    if (spec === undefined) {
      const names = signature.inputs.map((s) => `'${s.name}'`).join(', ');
      return invalid(`${where}: the model has no such input (it takes ${names})`);
    }
    if (Object.hasOwn(feeds, tensor.name)) return invalid(`${where} is given twice`);
    if (tensor.datatype !== spec.datatype) {
      return invalid(`${where}: got ${tensor.datatype} but the model takes ${spec.datatype}`);
    }
    const badDim = tensor.shape.find((dim) => !Number.isSafeInteger(dim) || dim < 0);
    if (badDim !== undefined) {
      return invalid(
        `${where}: shape ${formatShape(tensor.shape)} has an invalid dimension ${badDim}`,
      );
    }
    if (!shapeFits(tensor.shape, spec.shape)) {
      return invalid(
        `${where}: got shape ${formatShape(tensor.shape)} but the model takes ${formatShape(spec.shape)}`,
      );
    }
    const problem = tensorDataProblem(tensor, spec.datatype);
    if (problem !== null) return invalid(`${where}: ${problem}`);
    feeds[tensor.name] = toOrtTensor(tensor, spec.datatype);
  }
  const missing = signature.inputs.filter((spec) => !Object.hasOwn(feeds, spec.name));
  if (missing.length > 0) {
    const list = missing.map((s) => `'${s.name}' (${s.datatype} ${formatShape(s.shape)})`);
    return invalid(`missing input${missing.length === 1 ? '' : 's'} ${list.join(', ')}`);
  }

  // No list, or an empty one, means every output (the v2 protocol's reading of both).
  const requested = request.outputs ?? [];
  if (requested.length === 0) {
    return { ok: true, feeds, fetches: signature.outputs.map((spec) => spec.name) };
  }
  const known = new Set(signature.outputs.map((spec) => spec.name));
  const seen = new Set<string>();
  for (const name of requested) {
    if (!known.has(name)) {
      const names = [...known].map((n) => `'${n}'`).join(', ');
      return invalid(`output '${name}': the model has no such output (it gives ${names})`);
    }
    if (seen.has(name)) return invalid(`output '${name}' is requested twice`);
    seen.add(name);
  }
  return { ok: true, feeds, fetches: requested };
}

/** Same rank, and every fixed dimension of the model's shape matched (-1 takes any size). */
function shapeFits(shape: readonly number[], expected: readonly number[] | null): boolean {
  if (expected === null) return true;
  return (
    shape.length === expected.length && expected.every((dim, i) => dim === -1 || dim === shape[i])
  );
}
