// v2 error bodies. The Open Inference Protocol's error shape is `{"error": "<message>"}`; Kiln
// adds a stable `"code"` (clients ignore unknown fields) so scripts can match on it.
//
// KILN_INVALID_JSON and KILN_INVALID_INFER_REQUEST are in the core registry; the others are
// not yet (src/core/errors.ts), so this module names them all as a local union and owns their
// HTTP statuses until they are registered.

import type { ErrorCode } from '../../core/errors.ts';

/** Codes the v2 codec reports. All are the caller's fault (400) and never retryable. */
export type V2ProtocolErrorCode =
  /** The body is not JSON (NaN/Infinity tokens allowed). */
  | 'KILN_INVALID_JSON'
  /** The request's structure: not an object, `inputs` missing, bad name/shape/datatype. */
  | 'KILN_INVALID_INFER_REQUEST'
  /** A tensor's data does not match its own datatype and shape. */
  | 'KILN_INVALID_TENSOR'
  /** The request does not match the model's schema (inputs, datatypes, shapes, outputs). */
  | 'KILN_INPUT_MISMATCH'
  /** The batch dimension is larger than the model's maximum. */
  | 'KILN_BATCH_TOO_LARGE'
  /** A v2 extension Kiln does not implement (binary tensor data, classification). */
  | 'KILN_UNSUPPORTED_EXTENSION';

export const v2ErrorStatus: Readonly<Record<V2ProtocolErrorCode, number>> = {
  KILN_INVALID_JSON: 400,
  KILN_INVALID_INFER_REQUEST: 400,
  KILN_INVALID_TENSOR: 400,
  KILN_INPUT_MISMATCH: 400,
  KILN_BATCH_TOO_LARGE: 400,
  KILN_UNSUPPORTED_EXTENSION: 400,
};

/** An expected failure of the codec, as a value. `input` names the input at fault, if one. */
export interface V2Failure {
  readonly ok: false;
  readonly code: V2ProtocolErrorCode;
  readonly message: string;
  readonly input?: string;
}

export function v2Failure(code: V2ProtocolErrorCode, message: string, input?: string): V2Failure {
  return input === undefined ? { ok: false, code, message } : { ok: false, code, message, input };
}

/**
 * The v2 error body: `{"error": "<message>", "code": "KILN_…"}`. Accepts a codec failure or
 * anything with a registry code and a message (a `KilnError`).
 */
export function renderV2Error(error: {
  readonly code: V2ProtocolErrorCode | ErrorCode;
  readonly message: string;
}): string {
  return `{"error":${JSON.stringify(error.message)},"code":${JSON.stringify(error.code)}}`;
}

// --- message helpers ------------------------------------------------------------------------

/** `[2, -1, 4]`, the way every v2 message prints a shape. */
export function formatShape(shape: readonly unknown[]): string {
  return `[${shape.map((d) => (typeof d === 'number' ? String(d) : preview(d))).join(', ')}]`;
}

/** A short, safe rendering of a user's JSON value for an error message. */
export function preview(value: unknown): string {
  let text: string;
  if (typeof value === 'bigint') text = value.toString();
  else if (typeof value === 'number') text = String(value);
  else {
    try {
      text = JSON.stringify(value) ?? String(value);
    } catch {
      text = String(value);
    }
  }
  return text.length > 40 ? `${text.slice(0, 37)}...` : text;
}

/** `a string`, `an array`, `null`…: what a JSON value is, for messages. */
export function jsonKind(value: unknown): string {
  if (value === null) return 'null';
  if (value === undefined) return 'nothing';
  if (Array.isArray(value)) return 'an array';
  const type = typeof value;
  if (type === 'number' || type === 'bigint') return 'a number';
  if (type === 'object') return 'an object';
  return `a ${type}`;
}
