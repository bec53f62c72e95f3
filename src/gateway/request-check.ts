// The gateway's check of an infer body before any worker sees it, through the v2 codec
// (src/protocol/v2): lenient JSON (NaN/Infinity allowed, as Python clients send them), the
// request's structure, then the endpoint's schema (compiled once per snapshot). The codec's
// validate-only form builds no tensors; the worker runs the decoding form of the same checks,
// so both give the same verdict and the same message.

import type { ModelSchema } from '../core/tensor.ts';
import { v1PredictToV2 } from '../protocol/v1/predict-request.ts';
import {
  checkInferRequestText,
  decodeInferRequest,
  parseInferRequest,
  type DecodedInferRequest,
} from '../protocol/v2/decode-request.ts';
import { inputDatatypePolicy } from '../protocol/v2/input-datatypes.ts';
import type { ModelFormat } from '../registry/formats/artifact-file.ts';
import type { V2ProtocolErrorCode } from '../protocol/v2/errors.ts';
import {
  compileInputNaming,
  renameRequestInputs,
  type CompiledNaming,
  type InputNaming,
} from '../protocol/v2/input-naming.ts';
import { parseJsonLenient, type JsonParseResult } from '../protocol/v2/lenient-json.ts';
import { compileSchema, type CompiledSchema } from '../protocol/v2/schema.ts';
import type { TensorDataFailure } from '../protocol/v2/tensor-data.ts';

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
  parsed?: JsonParseResult,
):
  | { readonly ok: true; readonly request: DecodedInferRequest }
  | { readonly ok: false; readonly code: V2ProtocolErrorCode; readonly message: string } {
  const result = parseInferRequest(body, check, parsed);
  return result.ok
    ? { ok: true, request: result.request }
    : { ok: false, code: result.code, message: result.message };
}

/**
 * null when the body may go to a worker, else the codec's code and message for the 400.
 * `parsed`: parseJsonLenient(body) when the caller has it already (not parsed again).
 */
export function checkInferBody(
  body: Buffer,
  check: RequestCheck | null,
  parsed?: JsonParseResult,
): { readonly code: V2ProtocolErrorCode; readonly message: string } | null {
  const result = checkInferRequestText(body, check, parsed);
  return result.ok ? null : { code: result.code, message: result.message };
}

// --- request forms besides plain v2 (docs/v1-protocol.md) -------------------------------------

/** The endpoint's input-name forms (any-name single input, named features), or null. */
export function compileNamingCheck(
  check: RequestCheck | null,
  naming: InputNaming | undefined,
): CompiledNaming | null {
  return check === null ? null : compileInputNaming(check, naming);
}

export type AdaptedBody =
  | { readonly ok: true; readonly request: DecodedInferRequest }
  | { readonly ok: false; readonly code: V2ProtocolErrorCode; readonly message: string };

/**
 * A v1 predict body, or a v2 body the strict check refused whose inputs are named otherwise
 * (any-name single input, named features), decoded into the plain request the schema
 * describes. null for a v2 body that is none of these: the strict check's verdict stands.
 */
export function adaptInferBody(
  body: Buffer,
  check: RequestCheck,
  naming: CompiledNaming | null,
  form: 'v1' | 'v2',
): AdaptedBody | null {
  if (form === 'v2' && naming === null) return null; // names exactly as the schema says
  const adapt = (parsed: unknown): AdaptedBody | null => {
    const rewritten =
      form === 'v1'
        ? v1PredictToV2(parsed, check, naming)
        : naming === null
          ? null
          : renameRequestInputs(parsed, naming);
    if (rewritten === null) return null;
    if (!rewritten.ok) return failed(rewritten);
    const decoded = decodeInferRequest(rewritten.body, check);
    return decoded.ok ? decoded : failed(decoded);
  };
  const parsed = parseJsonLenient(body);
  if (!parsed.ok) {
    return {
      ok: false,
      code: 'KILN_INVALID_JSON',
      message: `request body is not valid JSON: ${parsed.message}`,
    };
  }
  const result = adapt(parsed.value);
  if (result === null || result.ok || !(result as { inexact?: true }).inexact) return result;
  // An INT64/UINT64 element past 2^53: read the text again keeping such integers exact.
  const exact = parseJsonLenient(body, { exactIntegers: true });
  return exact.ok ? adapt(exact.value) : result;
}

function failed(failure: TensorDataFailure): AdaptedBody & { readonly inexact?: true } {
  const out = { ok: false as const, code: failure.code, message: failure.message };
  return failure.inexactInteger === true ? { ...out, inexact: true } : out;
}
