// A v2 infer response rewritten as the KServe v1 / TensorFlow Serving answer:
//
//   one output                    {"predictions": [p0, p1, …]}       one entry a row: a number
//                                                                    for [N], a list for
//                                                                    [N, K] (a classifier's K
//                                                                    class probabilities), …
//   several outputs, same N       {"predictions": [{"label": …, "probabilities": […]}, …]}
//   several outputs, N differs    {"outputs": {"label": …, "count": …}}   (TF Serving's
//                                                                    columnar answer)
//
// Numbers are written as the v2 response wrote them (the same digits: FP32 values are the
// exact doubles they hold, INT64 exact past 2^53, NaN as null, ±Infinity as ±1e999), so a v1
// answer and a v2 answer to the same rows carry the same numbers.

import { parseJsonLenient } from '../v2/lenient-json.ts';

type JsonObject = Readonly<Record<string, unknown>>;

interface Output {
  readonly name: string;
  readonly shape: readonly number[];
  readonly data: readonly unknown[];
}

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The v1 body for a v2 response body, or null when it is not a v2 response (a bug upstream). */
export function v1PredictResponse(v2Body: Buffer | string): string | null {
  const parsed = parseJsonLenient(v2Body, { exactIntegers: true });
  if (!parsed.ok || !isObject(parsed.value) || !Array.isArray(parsed.value.outputs)) return null;
  const outputs: Output[] = [];
  for (const raw of parsed.value.outputs as readonly unknown[]) {
    if (!isObject(raw) || typeof raw.name !== 'string' || !Array.isArray(raw.data)) return null;
    const shape = raw.shape;
    if (!Array.isArray(shape) || !shape.every((d) => Number.isSafeInteger(d) && d >= 0)) {
      return null;
    }
    const count = (shape as number[]).reduce((a, b) => a * b, 1);
    if (raw.data.length !== count) return null;
    outputs.push({ name: raw.name, shape: shape as number[], data: raw.data as unknown[] });
  }
  const first = outputs[0];
  if (first === undefined) return '{"predictions":[]}';
  if (outputs.length === 1) return `{"predictions":${rowsText(first)}}`;
  const rows = first.shape[0];
  const batched = outputs.every((o) => o.shape.length >= 1 && o.shape[0] === rows);
  if (!batched || rows === undefined) {
    const columns = outputs.map((o) => `${JSON.stringify(o.name)}:${nested(o.data, 0, o.shape)}`);
    return `{"outputs":{${columns.join(',')}}}`;
  }
  const parts = new Array<string>(rows);
  for (let r = 0; r < rows; r++) {
    const fields = outputs.map((o) => `${JSON.stringify(o.name)}:${rowText(o, r)}`);
    parts[r] = `{${fields.join(',')}}`;
  }
  return `{"predictions":[${parts.join(',')}]}`;
}

/** The output's rows as a list (a scalar output is a list of its one value). */
function rowsText(output: Output): string {
  const rows = output.shape[0];
  if (rows === undefined) return `[${valueText(output.data[0])}]`;
  const parts = new Array<string>(rows);
  for (let r = 0; r < rows; r++) parts[r] = rowText(output, r);
  return `[${parts.join(',')}]`;
}

function rowText(output: Output, row: number): string {
  const inner = output.shape.slice(1);
  const size = inner.reduce((a, b) => a * b, 1);
  return nested(output.data, row * size, inner);
}

/** `shape`-nested JSON for the flat `data` from `offset` (a scalar for shape []). */
function nested(data: readonly unknown[], offset: number, shape: readonly number[]): string {
  if (shape.length === 0) return valueText(data[offset]);
  const [size, ...rest] = shape as [number, ...number[]];
  const stride = rest.reduce((a, b) => a * b, 1);
  const parts = new Array<string>(size);
  for (let i = 0; i < size; i++) parts[i] = nested(data, offset + i * stride, rest);
  return `[${parts.join(',')}]`;
}

function valueText(value: unknown): string {
  if (typeof value === 'number') {
    if (Number.isNaN(value)) return 'null';
    if (value === Infinity) return '1e999';
    if (value === -Infinity) return '-1e999';
    return Object.is(value, -0) ? '0' : String(value);
  }
  if (typeof value === 'bigint') return value.toString();
  return JSON.stringify(value) ?? 'null';
}
