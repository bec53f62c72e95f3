// Which model version answered a gateway request: every answer carries `kiln-model-version`
// (the number) and `kiln-model` (the model) of the replica that answered (issue 13). Tests of
// traffic switches read them to see a switch take effect, and a load driver files every
// answer under them.

import { request, type Dispatcher } from 'undici';

export const MODEL_VERSION_HEADER = 'kiln-model-version';
export const MODEL_HEADER = 'kiln-model';

export interface ServedBy {
  /** `kiln-model-version` as a number; null when absent or not a whole number. */
  readonly version: number | null;
  /** `kiln-model`; null when absent. */
  readonly model: string | null;
}

type HeaderBag = Headers | Record<string, string | string[] | undefined>;

function header(headers: HeaderBag, name: string): string | null {
  if (headers instanceof Headers) return headers.get(name);
  const value = headers[name];
  return Array.isArray(value) ? (value[0] ?? null) : (value ?? null);
}

/** Reads the two headers off a fetch `Headers` or an undici/node header object. */
export function servedBy(headers: HeaderBag): ServedBy {
  const text = header(headers, MODEL_VERSION_HEADER);
  const version = text !== null && /^\d+$/.test(text.trim()) ? Number(text.trim()) : null;
  return { version, model: header(headers, MODEL_HEADER) };
}

export interface ProbeAnswer extends ServedBy {
  readonly status: number;
  readonly body: unknown;
}

/** One infer request to `{gatewayUrl}/v2/models/{endpoint}/infer`; its status, body and headers read. */
export async function probeVersion(
  gatewayUrl: string,
  endpoint: string,
  body: string,
  headers: Record<string, string> = {},
  dispatcher?: Dispatcher,
): Promise<ProbeAnswer> {
  const response = await request(`${gatewayUrl}/v2/models/${endpoint}/infer`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
    ...(dispatcher === undefined ? {} : { dispatcher }),
  });
  const text = await response.body.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON: keep the text for the message
  }
  return { status: response.statusCode, body: parsed, ...servedBy(response.headers) };
}
