// The gateway's check of an infer body before any worker sees it, through the v2 codec
// (src/protocol/v2): lenient JSON (NaN/Infinity allowed, as Python clients send them), the
// request's structure, then the endpoint's schema (compiled once per snapshot). The codec's
// validate-only form builds no tensors; the worker runs the decoding form of the same checks,
// so both give the same verdict and the same message.

import type { ModelSchema } from '../core/tensor.ts';
import {
  checkInferRequestText,
  parseInferRequest,
  type DecodedInferRequest,
} from '../protocol/v2/decode-request.ts';
import { compileSchema, type CompiledSchema } from '../protocol/v2/schema.ts';
import { inputDatatypePolicy } from '../protocol/v2/input-datatypes.ts';
import type { ModelFormat } from '../registry/formats/artifact-file.ts';
import type { V2ProtocolErrorCode } from '../protocol/v2/errors.ts';

export type RequestCheck = CompiledSchema;

export type CompiledCheck =
  | { readonly ok: true; readonly check: RequestCheck | null }
  | { readonly ok: false; readonly reason: string };

/**
 * Compiles an endpoint's schema. A schema the codec refuses (the registry checks schemas at
 * registration, so this is a bug upstream) leaves the endpoint unchecked at the gateway:
 * the worker still checks every request. The format says which request datatypes an input
 * takes (tree models: any numeric one), as the worker's own check does.
 */
export function compileRequestCheck(
  schema: ModelSchema | null,
  format: ModelFormat,
): CompiledCheck {
  if (schema === null) return { ok: true, check: null };
  try {
    return {
      ok: true,
      check: compileSchema(schema, { inputDatatypes: inputDatatypePolicy(format) }),
    };
  } catch (error) {
    return { ok: false, reason: (error as Error).message };
  }
}

/**
 * Like `checkInferBody`, but keeps the decoded tensors (for the worker channel's tensor
 * frames): the same verdict and message either way.
 */
export function decodeInferBody(
  body: Buffer,
  check: RequestCheck | null,
):
  | { readonly ok: true; readonly request: DecodedInferRequest }
  | { readonly ok: false; readonly code: V2ProtocolErrorCode; readonly message: string } {
  const result = parseInferRequest(body, check);
  return result.ok
    ? { ok: true, request: result.request }
    : { ok: false, code: result.code, message: result.message };
}

/** null when the body may go to a worker, else the codec's code and message for the 400. */
export function checkInferBody(
  body: Buffer,
  check: RequestCheck | null,
): { readonly code: V2ProtocolErrorCode; readonly message: string } | null {
  const result = checkInferRequestText(body, check);
  return result.ok ? null : { code: result.code, message: result.message };
}
