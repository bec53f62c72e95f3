// v2 metadata responses: the server's (`GET /v2`) and a model's (`GET /v2/models/{m}`).

import { kilnVersion } from '../../core/version.ts';
import type { TensorDatatype, TensorSpec } from '../../core/tensor.ts';

export interface V2TensorMetadata {
  readonly name: string;
  readonly datatype: TensorDatatype;
  /** -1 marks a variable dimension. */
  readonly shape: readonly number[];
}

export interface V2ModelMetadata {
  readonly name: string;
  readonly versions: readonly string[];
  readonly platform: string;
  readonly inputs: readonly V2TensorMetadata[];
  readonly outputs: readonly V2TensorMetadata[];
}

export interface V2ServerMetadata {
  readonly name: 'kiln';
  readonly version: string;
  readonly extensions: readonly string[];
}

export interface ModelMetadataSource {
  readonly name: string;
  /** Versions served under this name; numbers are written as strings, as v2 wants. */
  readonly versions: readonly (string | number)[];
  /** e.g. `onnxruntime_onnx`, `xgboost`, `lightgbm`. */
  readonly platform: string;
  readonly inputs: readonly TensorSpec[];
  readonly outputs: readonly TensorSpec[];
}

export function buildModelMetadata(source: ModelMetadataSource): V2ModelMetadata {
  return {
    name: source.name,
    versions: source.versions.map(String),
    platform: source.platform,
    inputs: source.inputs.map(tensorMetadata),
    outputs: source.outputs.map(tensorMetadata),
  };
}

/** `{"name":"kiln","version","extensions"}`: Kiln implements no optional v2 extension yet. */
export function buildServerMetadata(extensions: readonly string[] = []): V2ServerMetadata {
  return { name: 'kiln', version: kilnVersion, extensions: [...extensions] };
}

function tensorMetadata(spec: TensorSpec): V2TensorMetadata {
  return { name: spec.name, datatype: spec.datatype, shape: [...spec.shape] };
}
