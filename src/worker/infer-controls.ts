// Per-request scheduling controls the worker reads besides the tensors:
//   deadline  `kiln-timeout-ms: <integer ms>` header, else the endpoint's timeoutMs, else none
//   priority  `kiln-priority: high|normal` header, else the request parameter `priority`,
//             else normal
// `priority` is taken out of the request's parameters: it says how to schedule the request,
// not how to compute it, so it must not split batches or reach the runtime.

import type { IncomingHttpHeaders } from 'node:http';
import type { DecodedInferRequest } from '../protocol/v2/decode-request.ts';
import type { Priority } from './batching/dynamic-batcher.ts';

/** Longest deadline a request may ask for (one hour), in ms. */
export const maxTimeoutMs = 3_600_000;

export type InferControls =
  | {
      readonly ok: true;
      readonly priority: Priority;
      readonly timeoutMs: number | null;
      readonly request: DecodedInferRequest;
    }
  | { readonly ok: false; readonly message: string };

export function readInferControls(
  headers: IncomingHttpHeaders,
  request: DecodedInferRequest,
  defaultTimeoutMs: number | null,
): InferControls {
  let timeoutMs = defaultTimeoutMs;
  const timeoutHeader = headers['kiln-timeout-ms'];
  if (timeoutHeader !== undefined) {
    const text = Array.isArray(timeoutHeader) ? timeoutHeader.join(',') : timeoutHeader;
    if (!/^\d{1,10}$/.test(text.trim()) || Number(text) > maxTimeoutMs) {
      return {
        ok: false,
        message: `header kiln-timeout-ms must be a whole number of milliseconds from 0 to ${maxTimeoutMs}, not '${text}'`,
      };
    }
    timeoutMs = Number(text);
  }

  const { priority: fromParameter, ...parameters } = request.parameters ?? {};
  const priorityHeader = headers['kiln-priority'];
  const wanted =
    priorityHeader !== undefined
      ? { source: 'header kiln-priority', value: String(priorityHeader) }
      : fromParameter !== undefined
        ? { source: "parameter 'priority'", value: fromParameter }
        : null;
  let priority: Priority = 'normal';
  if (wanted !== null) {
    if (wanted.value !== 'high' && wanted.value !== 'normal') {
      return {
        ok: false,
        message: `${wanted.source} must be 'high' or 'normal', not '${String(wanted.value)}'`,
      };
    }
    priority = wanted.value;
  }

  if (fromParameter === undefined) return { ok: true, priority, timeoutMs, request };
  const { parameters: _all, ...rest } = request;
  const stripped: DecodedInferRequest =
    Object.keys(parameters).length === 0 ? rest : { ...rest, parameters };
  return { ok: true, priority, timeoutMs, request: stripped };
}
