// Helpers shared by the v2 request tests: build bodies, decode them, and collect the
// refusal message while checking the validate-only path (gateway) agrees with decoding (worker).

import assert from 'node:assert/strict';
import {
  checkInferRequest,
  checkInferRequestText,
  decodeInferRequest,
  parseInferRequest,
} from '../../../src/protocol/v2/decode-request.ts';
import type { DecodedInferRequest } from '../../../src/protocol/v2/decode-request.ts';

export function input(datatype: string, shape: unknown, data: unknown, extra: object = {}): object {
  return { name: 'x', datatype, shape, data, ...extra };
}

export function decoded(text: string): DecodedInferRequest {
  const result = parseInferRequest(text, null);
  assert.ok(result.ok, result.ok ? '' : result.message);
  return result.request;
}

/** The message for a body (object or text); checks the validate-only path agrees. */
export function refusal(body: object | string, code?: string): string {
  const result =
    typeof body === 'string' ? parseInferRequest(body, null) : decodeInferRequest(body, null);
  assert.equal(result.ok, false, `expected a refusal for ${JSON.stringify(body)}`);
  const check =
    typeof body === 'string' ? checkInferRequestText(body, null) : checkInferRequest(body, null);
  assert.deepEqual(check, result, 'checkInferRequest agrees with decodeInferRequest');
  if (result.ok) return '';
  if (code !== undefined) assert.equal(result.code, code);
  return result.message;
}

export const one = (datatype: string, shape: unknown, data: unknown): object => ({
  inputs: [input(datatype, shape, data)],
});

export const oneText = (datatype: string, shape: string, data: string): string =>
  `{"inputs":[{"name":"x","datatype":"${datatype}","shape":${shape},"data":${data}}]}`;
