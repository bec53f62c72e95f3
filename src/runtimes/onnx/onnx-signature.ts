// The tensors an ONNX model takes and gives, read from the graph with the same protobuf reader
// the registry uses at registration (src/registry/formats/onnx.ts), so a version's formatInfo
// and the loaded runtime always agree.
//
// onnxruntime-node 1.30 does expose `session.inputMetadata` / `outputMetadata`, but it reports
// an unknown rank and a scalar both as shape [], and a non-tensor value only as
// `isTensor: false` (not whether it is a sequence, a map or an optional), which are the two
// things the checks below need. We use ORT's input and output names as a cross-check only.

import type { OnnxTensorInfo } from '../../registry/formats/onnx.ts';
import { onnxSupportedDatatype, type OnnxDatatype } from './onnx-tensors.ts';

export interface OnnxValueSpec {
  readonly name: string;
  readonly datatype: OnnxDatatype;
  /** Dimensions, -1 where symbolic (e.g. the batch); null when the graph leaves the rank open. */
  readonly shape: readonly number[] | null;
}

export interface OnnxSignature {
  readonly inputs: readonly OnnxValueSpec[];
  readonly outputs: readonly OnnxValueSpec[];
}

export type SignatureOutcome =
  | { readonly ok: true; readonly signature: OnnxSignature }
  | { readonly ok: false; readonly reason: string };

/**
 * The model's signature from the registry's format info, refused when a value is not a dense
 * tensor of a datatype onnxruntime-node can carry, or when ORT sees other names.
 */
export function readOnnxSignature(
  info: { readonly inputs: readonly OnnxTensorInfo[]; readonly outputs: readonly OnnxTensorInfo[] },
  /** onnxruntime's input and output names; null when there is no session to compare with. */
  ortNames: { readonly inputs: readonly string[]; readonly outputs: readonly string[] } | null,
): SignatureOutcome {
  const inputs: OnnxValueSpec[] = [];
  const outputs: OnnxValueSpec[] = [];
  for (const [role, values, specs] of [
    ['input', info.inputs, inputs],
    ['output', info.outputs, outputs],
  ] as const) {
    for (const value of values) {
      const spec = valueSpec(role, value);
      if (typeof spec === 'string') return { ok: false, reason: spec };
      specs.push(spec);
    }
  }
  const mismatch =
    ortNames === null
      ? null
      : (namesDiffer('inputs', inputs, ortNames.inputs) ??
        namesDiffer('outputs', outputs, ortNames.outputs));
  if (mismatch !== null) return { ok: false, reason: mismatch };
  return { ok: true, signature: { inputs, outputs } };
}

function valueSpec(role: 'input' | 'output', value: OnnxTensorInfo): OnnxValueSpec | string {
  const where = `${role} '${value.name}'`;
  if (value.kind === 'sequence' || value.kind === 'map') {
    const hint =
      role === 'output'
        ? '; Kiln serves tensors only. A scikit-learn classifier converted by skl2onnx ' +
          'returns its probabilities through a ZipMap (a sequence of maps): convert it with ' +
          "skl2onnx's zipmap=False option (options={id(model): {'zipmap': False}}) to get a " +
          'plain [N, classes] tensor'
        : '; Kiln serves tensors only';
    return `${where} is a ${value.kind}, not a tensor${hint}`;
  }
  if (value.kind !== undefined) {
    return `${where} is ${value.kind === 'optional' ? 'an optional' : 'a sparse tensor'}; Kiln serves dense tensors only`;
  }
  const datatype = onnxSupportedDatatype(value.datatype);
  if (datatype === null) {
    const what = value.datatype === null ? 'has no element type' : `is ${value.datatype}`;
    return `${where} ${what}, which onnxruntime-node cannot pass to or from JavaScript`;
  }
  return { name: value.name, datatype, shape: value.shape };
}

function namesDiffer(
  what: string,
  specs: readonly OnnxValueSpec[],
  ortNames: readonly string[],
): string | null {
  const ours = specs.map((spec) => spec.name);
  const same = ours.length === ortNames.length && ours.every((name) => ortNames.includes(name));
  if (same) return null;
  return `the graph's ${what} (${ours.join(', ')}) differ from onnxruntime's (${ortNames.join(', ')})`;
}

/** `[-1, 4]`, or `[?]` for an open rank: how reasons print shapes. */
export function formatShape(shape: readonly number[] | null): string {
  return shape === null ? '[?]' : `[${shape.join(', ')}]`;
}
