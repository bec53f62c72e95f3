// A decoded infer request written back as v2 JSON: what the gateway forwards when it has
// rewritten a request (v1 instances, named features, a renamed input) for a replica that does
// not take tensor frames. Tensors are written as responses write them (encode-response.ts), so
// every datatype round-trips exactly: NaN as null, ±Infinity as ±1e999, INT64 digit for digit.

import type { DecodedInferRequest } from './decode-request.ts';
import { encodeTensorList } from './encode-response.ts';

export function encodeInferRequest(request: DecodedInferRequest): string {
  let json = '{';
  if (request.id !== undefined) json += `"id":${JSON.stringify(request.id)},`;
  if (request.parameters !== undefined) {
    json += `"parameters":${JSON.stringify(request.parameters)},`;
  }
  json += `"inputs":${encodeTensorList(request.inputs)}`;
  if (request.outputs !== undefined) {
    json += `,"outputs":[${request.outputs.map((name) => `{"name":${JSON.stringify(name)}}`).join(',')}]`;
  }
  return `${json}}`;
}
