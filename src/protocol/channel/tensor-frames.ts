// Infer requests on the worker channel as tensors rather than JSON (frame kind `tensors`).
// The gateway has already parsed and checked the request's JSON against the endpoint's
// schema; sending the decoded typed arrays spares the worker a second parse of the same
// text, which for a few rows of features costs about as much as evaluating them.
//
//   meta  {"tp"?, "ts"?: trace context (a traced request; channel-client.ts puts them first),
//          "t"?, "p"?: steering headers, "id"?, "pa"?: parameters, "o"?: outputs,
//          "i": [[name, datatype, shape, byteOffset, byteLength, parameters?], …]}
//   body  each input's elements as little-endian bytes (the typed array's own layout), one
//         after the other
//
// Requests with a BYTES input (strings, variable length) are sent as JSON frames instead.

import type { Tensor, TensorDatatype, TensorParameters } from '../../core/tensor.ts';
import type { DecodedInferRequest } from '../v2/decode-request.ts';
import { datatypeInfo, isTensorDatatype } from '../v2/datatypes.ts';

type InputEntry = [string, TensorDatatype, number[], number, number, TensorParameters?];

interface TensorFrameMeta {
  tp?: string;
  ts?: string;
  t?: string;
  p?: string;
  /** Drift sketches (issue 15): the slice value to sketch the request under ('': none). */
  d?: string;
  id?: string;
  pa?: DecodedInferRequest['parameters'];
  o?: readonly string[];
  i: InputEntry[];
}

/** The frame's meta and body for `request`, or null when it has a BYTES input. */
export function encodeTensorRequest(
  request: DecodedInferRequest,
  timeoutHeader: string | undefined,
  priorityHeader: string | undefined,
  /** Marks the request for the worker's drift sketches, under this slice ('': none). */
  driftSlice?: string,
): { readonly meta: string; readonly body: Buffer } | null {
  let total = 0;
  for (const input of request.inputs) {
    if (Array.isArray(input.data)) return null;
    total += (input.data as ArrayBufferView).byteLength;
  }
  const body = Buffer.allocUnsafe(total);
  const entries: InputEntry[] = [];
  let offset = 0;
  for (const input of request.inputs) {
    const data = input.data as ArrayBufferView;
    body.set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength), offset);
    const entry: InputEntry = [
      input.name,
      input.datatype,
      [...input.shape],
      offset,
      data.byteLength,
    ];
    if (input.parameters !== undefined) entry.push(input.parameters);
    entries.push(entry);
    offset += data.byteLength;
  }
  const meta: TensorFrameMeta = { i: entries };
  if (timeoutHeader !== undefined) meta.t = timeoutHeader;
  if (priorityHeader !== undefined) meta.p = priorityHeader;
  if (driftSlice !== undefined) meta.d = driftSlice;
  if (request.id !== undefined) meta.id = request.id;
  if (request.parameters !== undefined) meta.pa = request.parameters;
  if (request.outputs !== undefined) meta.o = request.outputs;
  return { meta: JSON.stringify(meta), body };
}

export type TensorRequestResult =
  | {
      readonly ok: true;
      readonly request: DecodedInferRequest;
      readonly timeoutHeader: string | undefined;
      readonly priorityHeader: string | undefined;
      /** Drift sketches: the slice value ('': none); undefined: not marked. */
      readonly driftSlice: string | undefined;
      /** A traced request's `traceparent` and `tracestate` (undefined: not traced). */
      readonly traceparent: string | undefined;
      readonly tracestate: string | undefined;
    }
  | { readonly ok: false; readonly message: string };

/** Rebuilds the request a tensors frame carries; the body is copied (it may be reused). */
export function decodeTensorRequest(metaText: string, body: Buffer): TensorRequestResult {
  let meta: TensorFrameMeta;
  try {
    meta = JSON.parse(metaText) as TensorFrameMeta;
  } catch {
    return { ok: false, message: 'a tensors frame with meta that is not JSON' };
  }
  if (typeof meta !== 'object' || meta === null || !Array.isArray(meta.i))
    return { ok: false, message: 'a tensors frame without inputs' };
  const inputs: Tensor[] = [];
  for (const entry of meta.i as unknown[]) {
    if (!Array.isArray(entry))
      return { ok: false, message: 'a tensors frame with a malformed input entry' };
    const [name, datatype, shape, offset, length, parameters] = entry as InputEntry;
    if (
      typeof name !== 'string' ||
      !isTensorDatatype(datatype) ||
      datatype === 'BYTES' ||
      !Array.isArray(shape) ||
      !shape.every((d) => Number.isInteger(d) && d >= 0) ||
      !Number.isInteger(offset) ||
      !Number.isInteger(length) ||
      !(parameters === undefined || isPlainObject(parameters)) ||
      offset < 0 ||
      offset + length > body.length
    ) {
      return { ok: false, message: `a tensors frame with a malformed input entry` };
    }
    const info = datatypeInfo[datatype];
    const count = shape.reduce((n, d) => n * d, 1);
    if (count * info.bytesPerElement !== length) {
      return { ok: false, message: `input ${name}: ${length} bytes for ${count} ${datatype}` };
    }
    const data = info.allocate(count) as ArrayBufferView;
    new Uint8Array(data.buffer, data.byteOffset, data.byteLength).set(
      body.subarray(offset, offset + length),
    );
    const tensor: Tensor =
      parameters === undefined
        ? { name, datatype, shape, data: data as Tensor['data'] }
        : { name, datatype, shape, data: data as Tensor['data'], parameters };
    inputs.push(tensor);
  }
  const optional = (value: unknown, ok: (v: unknown) => boolean): boolean =>
    value === undefined || ok(value);
  if (
    !optional(meta.o, (o) => Array.isArray(o) && o.every((n) => typeof n === 'string')) ||
    !optional(meta.pa, isPlainObject) ||
    !optional(meta.id, (id) => typeof id === 'string') ||
    !optional(meta.t, (t) => typeof t === 'string') ||
    !optional(meta.p, (p) => typeof p === 'string') ||
    !optional(meta.d, (d) => typeof d === 'string')
  )
    return { ok: false, message: 'a tensors frame with malformed request fields' };
  const request: DecodedInferRequest = {
    inputs,
    ...(meta.o === undefined ? {} : { outputs: meta.o }),
    ...(meta.pa === undefined ? {} : { parameters: meta.pa }),
    ...(meta.id === undefined ? {} : { id: meta.id }),
  };
  // A malformed trace context only loses the trace, never the request.
  return {
    ok: true,
    request,
    timeoutHeader: meta.t,
    priorityHeader: meta.p,
    driftSlice: meta.d,
    traceparent: typeof meta.tp === 'string' ? meta.tp : undefined,
    tracestate: typeof meta.ts === 'string' ? meta.ts : undefined,
  };
}

function isPlainObject(value: unknown): boolean {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
