// Model metadata (`GET /v2/models/{m}[/versions/{v}]`) built from the routing snapshot, so
// it answers without a worker. The body is rendered once per snapshot. When the snapshot
// has no schema yet, the gateway forwards the request to a replica instead.

import type { ModelFormat } from '../registry/formats/artifact-file.ts';
import type { EndpointRoute } from './routing-snapshot.ts';

/** The v2 `platform` string for each format (Triton's names where one exists). */
export function platformFor(format: ModelFormat): string {
  switch (format) {
    case 'onnx':
      return 'onnxruntime_onnx';
    case 'xgboost':
      return 'xgboost';
    case 'lightgbm':
      return 'lightgbm';
    case 'hf-llm':
      return 'hf_llm';
    case 'external':
      return 'external';
  }
}

/** `{"name","versions","platform","inputs","outputs"}`, or null while the schema is unknown. */
export function modelMetadataBody(route: EndpointRoute): string | null {
  if (route.schema === null) return null;
  return JSON.stringify({
    name: route.name,
    versions: [String(route.version)],
    platform: platformFor(route.format),
    inputs: route.schema.inputs.map(tensorMetadata),
    outputs: route.schema.outputs.map(tensorMetadata),
  });
}

function tensorMetadata(spec: {
  readonly name: string;
  readonly datatype: string;
  readonly shape: readonly number[];
}): { name: string; datatype: string; shape: readonly number[] } {
  return { name: spec.name, datatype: spec.datatype, shape: spec.shape };
}
