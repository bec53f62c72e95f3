// ONNX artifacts: exactly one `*.onnx` file (a ModelProto), plus any external-data files its
// initializers point at. We read the protobuf by ranges (see protobuf-reader.ts), so a model
// of any size is checked without loading its weights; only the fields below are decoded.
//
//   ModelProto      1 ir_version  2 producer_name  7 graph  8 opset_import
//   OperatorSetId   1 domain  2 version
//   GraphProto      5 initializer  11 input  12 output  15 sparse_initializer
//   TensorProto     8 name  13 external_data  14 data_location (1 = EXTERNAL)
//   ValueInfoProto  1 name  2 type
//   TypeProto       1 tensor_type  4 sequence_type  5 map_type  8 sparse_tensor_type  9 optional
//   TypeProto.Tensor 1 elem_type  2 shape;  TensorShapeProto 1 dim: 1 dim_value  2 dim_param

import { posix } from 'node:path';
import type { ArtifactFile, FormatCheck } from './artifact-file.ts';
import { onnxDatatype } from './onnx-datatype.ts';
import { ProtobufError, ProtobufReader, type ProtoField } from './protobuf-reader.ts';

export interface OnnxTensorInfo {
  readonly name: string;
  /** Open Inference Protocol datatype (FP32, INT64, BYTES, ...); ONNX's own name for types the
   * protocol lacks (COMPLEX64, FLOAT8E4M3FN, ...); null when not a tensor or unknown. */
  readonly datatype: string | null;
  /** Dimensions, -1 where symbolic or unknown; null when the rank itself is unknown. */
  readonly shape: readonly number[] | null;
  /** Set for non-tensor values: 'sequence', 'map', 'optional' or 'sparse_tensor'. */
  readonly kind?: string;
}

/** TypeProto fields of values that are not dense tensors. */
const nonTensorKinds = new Map([
  [4, 'sequence'],
  [5, 'map'],
  [9, 'optional'],
]);

interface Initializer {
  readonly name: string;
  readonly location: string | null;
  readonly offset: number;
  readonly length: number | null;
}

export async function validateOnnx(files: readonly ArtifactFile[]): Promise<FormatCheck> {
  const models = files.filter((file) => file.path.toLowerCase().endsWith('.onnx'));
  const model = models[0];
  if (model === undefined || models.length > 1) {
    const found = models.length === 0 ? 'none' : models.map((f) => f.path).join(', ');
    return { ok: false, reason: `an ONNX artifact needs exactly one .onnx file; found ${found}` };
  }
  if (model.size === 0)
    return { ok: false, reason: `${model.path}: file is empty`, path: model.path };
  try {
    return await checkModel(model, files);
  } catch (error) {
    if (!(error instanceof ProtobufError)) throw error;
    return {
      ok: false,
      reason: `${model.path}: not an ONNX ModelProto: ${error.message}`,
      path: model.path,
    };
  }
}

async function checkModel(
  model: ArtifactFile,
  files: readonly ArtifactFile[],
): Promise<FormatCheck> {
  const reader = new ProtobufReader(model);
  let irVersion: number | null = null;
  let producer = '';
  const graphs: ProtoField[] = [];
  const opsets: { domain: string; version: number }[] = [];
  for await (const field of reader.fields(0, model.size)) {
    switch (field.number) {
      case 1:
        ProtobufReader.expect(field, 0, 'ir_version');
        irVersion = field.value;
        break;
      case 2:
        ProtobufReader.expect(field, 2, 'producer_name');
        producer = await reader.string(field);
        break;
      case 7:
        ProtobufReader.expect(field, 2, 'graph');
        graphs.push(field);
        break;
      case 8:
        ProtobufReader.expect(field, 2, 'opset_import');
        opsets.push(await readOpset(reader, field));
        break;
    }
  }
  if (irVersion === null) throw new ProtobufError('field 1 (ir_version) is missing');
  if (irVersion < 1) throw new ProtobufError(`ir_version ${irVersion} is not a valid IR version`);
  if (graphs.length === 0) throw new ProtobufError('field 7 (graph) is missing');
  if (opsets.length === 0) throw new ProtobufError('field 8 (opset_import) is missing');

  // Repeated fields of a message that appears twice merge, as protobuf says.
  const inputs: OnnxTensorInfo[] = [];
  const outputs: OnnxTensorInfo[] = [];
  const initializers: Initializer[] = [];
  for (const graph of graphs) await readGraph(reader, graph, inputs, outputs, initializers);
  if (outputs.length === 0) throw new ProtobufError('the graph declares no outputs');
  const unnamed = [...inputs, ...outputs].find((value) => value.name === '');
  if (unnamed !== undefined) throw new ProtobufError('a graph input or output has no name');

  const external = checkExternalData(model, files, initializers);
  if (typeof external === 'string') return { ok: false, reason: external, path: model.path };
  const initializerNames = new Set(initializers.map((i) => i.name));
  const info: Record<string, unknown> = {
    irVersion,
    opsets,
    producer,
    inputs: inputs.filter((input) => !initializerNames.has(input.name)),
    outputs,
  };
  if (external.length > 0) info['externalData'] = external;
  return { ok: true, info };
}

async function readOpset(
  reader: ProtobufReader,
  range: ProtoField,
): Promise<{ domain: string; version: number }> {
  let domain = '';
  let version: number | null = null;
  for await (const field of reader.fields(range.start, range.end)) {
    if (field.number === 1) {
      ProtobufReader.expect(field, 2, 'opset domain');
      domain = await reader.string(field);
    } else if (field.number === 2) {
      ProtobufReader.expect(field, 0, 'opset version');
      version = field.value;
    }
  }
  if (version === null) {
    throw new ProtobufError(`opset_import for domain '${domain || 'ai.onnx'}' has no version`);
  }
  return { domain, version };
}

async function readGraph(
  reader: ProtobufReader,
  range: ProtoField,
  inputs: OnnxTensorInfo[],
  outputs: OnnxTensorInfo[],
  initializers: Initializer[],
): Promise<void> {
  for await (const field of reader.fields(range.start, range.end)) {
    switch (field.number) {
      case 5:
        ProtobufReader.expect(field, 2, 'graph initializer');
        initializers.push(await readTensor(reader, field));
        break;
      case 15:
        ProtobufReader.expect(field, 2, 'graph sparse_initializer');
        for await (const part of reader.fields(field.start, field.end)) {
          // SparseTensorProto.values (1) carries the sparse tensor's name.
          if (part.number === 1 && part.wireType === 2)
            initializers.push(await readTensor(reader, part));
        }
        break;
      case 11:
        ProtobufReader.expect(field, 2, 'graph input');
        inputs.push(await readValueInfo(reader, field));
        break;
      case 12:
        ProtobufReader.expect(field, 2, 'graph output');
        outputs.push(await readValueInfo(reader, field));
        break;
    }
  }
}

async function readTensor(reader: ProtobufReader, range: ProtoField): Promise<Initializer> {
  let name = '';
  let external = false;
  const entries = new Map<string, string>();
  for await (const field of reader.fields(range.start, range.end)) {
    if (field.number === 8) {
      ProtobufReader.expect(field, 2, 'tensor name');
      name = await reader.string(field);
    } else if (field.number === 14) {
      ProtobufReader.expect(field, 0, 'tensor data_location');
      external = field.value === 1;
    } else if (field.number === 13) {
      ProtobufReader.expect(field, 2, 'tensor external_data');
      let key = '';
      let value = '';
      for await (const part of reader.fields(field.start, field.end)) {
        if (part.number === 1 && part.wireType === 2) key = await reader.string(part);
        if (part.number === 2 && part.wireType === 2) value = await reader.string(part);
      }
      entries.set(key, value);
    }
  }
  const location = external ? (entries.get('location') ?? '') : null;
  const offset = Number(entries.get('offset') ?? '0');
  const lengthText = entries.get('length');
  return { name, location, offset, length: lengthText === undefined ? null : Number(lengthText) };
}

async function readValueInfo(reader: ProtobufReader, range: ProtoField): Promise<OnnxTensorInfo> {
  let name = '';
  let type: Omit<OnnxTensorInfo, 'name'> = { datatype: null, shape: null };
  for await (const field of reader.fields(range.start, range.end)) {
    if (field.number === 1) {
      ProtobufReader.expect(field, 2, 'value name');
      name = await reader.string(field);
    } else if (field.number === 2) {
      ProtobufReader.expect(field, 2, 'value type');
      type = await readType(reader, field);
    }
  }
  return { name, ...type };
}

async function readType(
  reader: ProtobufReader,
  range: ProtoField,
): Promise<Omit<OnnxTensorInfo, 'name'>> {
  let type: Omit<OnnxTensorInfo, 'name'> = { datatype: null, shape: null };
  for await (const field of reader.fields(range.start, range.end)) {
    if (field.wireType !== 2) continue;
    const kind = nonTensorKinds.get(field.number);
    if (field.number === 1) {
      type = await readTensorType(reader, field);
    } else if (field.number === 8) {
      type = { ...(await readTensorType(reader, field)), kind: 'sparse_tensor' };
    } else if (kind !== undefined) {
      type = { datatype: null, shape: null, kind };
    }
  }
  return type;
}

async function readTensorType(
  reader: ProtobufReader,
  range: ProtoField,
): Promise<{ datatype: string | null; shape: number[] | null }> {
  let datatype: string | null = null;
  let shape: number[] | null = null;
  for await (const field of reader.fields(range.start, range.end)) {
    if (field.number === 1) {
      ProtobufReader.expect(field, 0, 'elem_type');
      datatype = onnxDatatype(field.value);
    } else if (field.number === 2) {
      ProtobufReader.expect(field, 2, 'shape');
      shape = [];
      for await (const dim of reader.fields(field.start, field.end)) {
        if (dim.number !== 1 || dim.wireType !== 2) continue;
        let size = -1;
        for await (const part of reader.fields(dim.start, dim.end)) {
          if (part.number === 1 && part.wireType === 0 && part.value >= 0) size = part.value;
        }
        shape.push(size);
      }
    }
  }
  return { datatype, shape };
}

/** The external-data files the initializers use, or a reason when one is missing or short. */
function checkExternalData(
  model: ArtifactFile,
  files: readonly ArtifactFile[],
  initializers: readonly Initializer[],
): string[] | string {
  const byPath = new Map(files.map((file) => [file.path, file]));
  const used = new Set<string>();
  for (const tensor of initializers) {
    if (tensor.location === null) continue;
    const where = `${model.path}: initializer '${tensor.name}' stores its data in '${tensor.location}'`;
    const resolved = posix.normalize(posix.join(posix.dirname(model.path), tensor.location));
    if (tensor.location === '' || posix.isAbsolute(tensor.location) || resolved.startsWith('../')) {
      return `${where}, which is not a path inside the artifact`;
    }
    const file = byPath.get(resolved);
    if (file === undefined) return `${where}, which is not in the artifact`;
    const { offset, length } = tensor;
    const end = offset + (length ?? 0);
    if (
      !Number.isSafeInteger(offset) ||
      offset < 0 ||
      !Number.isSafeInteger(end) ||
      end > file.size
    ) {
      return `${where} at bytes ${offset}..${end}, past the end of that ${file.size}-byte file`;
    }
    used.add(resolved);
  }
  return [...used].sort();
}
