// Reproduces a version's golden set against one of its ready replicas before a blue-green
// switch: each case's request goes to the worker as it is (plain v2; the gateway's rewrites
// of v1 bodies or named features do not happen here), and every expected output element
// must come back within |got - want| <= absolute + relative * |want|. The first case that
// fails decides, and its reason names the case, output and element.

import type { GoldenCase, GoldenSet, GoldenTolerance } from '../../store/traffic-records.ts';

export type GoldenOutcome =
  | { readonly ok: true; readonly cases: number }
  | { readonly ok: false; readonly caseIndex: number; readonly reason: string };

/** Runs a golden set against one replica (injected in tests). */
export type GoldenRunner = (
  replicaUrl: string,
  endpoint: string,
  set: GoldenSet,
) => Promise<GoldenOutcome>;

export interface GoldenRunOptions {
  readonly fetch?: typeof fetch;
  /** Per case; a replica that hangs fails the set. */
  readonly timeoutMs?: number;
  /** For the whole set: a slow replica fails it too (the controller waits on it). */
  readonly totalTimeoutMs?: number;
}

export function httpGoldenRunner(options: GoldenRunOptions = {}): GoldenRunner {
  const send = options.fetch ?? fetch;
  const timeoutMs = options.timeoutMs ?? 10_000;
  const totalTimeoutMs = options.totalTimeoutMs ?? 120_000;
  return async (replicaUrl, endpoint, set) => {
    const url = `${replicaUrl}/v2/models/${encodeURIComponent(endpoint)}/infer`;
    const deadline = Date.now() + totalTimeoutMs;
    for (const [index, golden] of set.cases.entries()) {
      if (Date.now() > deadline)
        return {
          ok: false,
          caseIndex: index,
          reason: `case ${index}: not reached, the set took longer than ${totalTimeoutMs / 1000} s`,
        };
      let status: number;
      let body: unknown;
      try {
        const response = await send(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(golden.request),
          signal: AbortSignal.timeout(timeoutMs),
        });
        status = response.status;
        const text = await response.text();
        body = text.length > 0 ? JSON.parse(text) : null;
      } catch (error) {
        const why = error instanceof Error ? error.message : String(error);
        return { ok: false, caseIndex: index, reason: `case ${index}: no answer (${why})` };
      }
      if (status !== 200)
        return {
          ok: false,
          caseIndex: index,
          reason: `case ${index}: status ${status}: ${JSON.stringify(body).slice(0, 200)}`,
        };
      const mismatch = compareGoldenOutputs(golden, body, set.tolerance);
      if (mismatch !== null)
        return { ok: false, caseIndex: index, reason: `case ${index}: ${mismatch}` };
    }
    return { ok: true, cases: set.cases.length };
  };
}

/** null when `response` (a v2 infer answer) reproduces the case; else what differs. */
export function compareGoldenOutputs(
  golden: GoldenCase,
  response: unknown,
  tolerance: GoldenTolerance,
): string | null {
  const outputs = (response as { outputs?: unknown } | null)?.outputs;
  if (!Array.isArray(outputs)) return 'the answer has no outputs';
  for (const want of golden.outputs) {
    const got = outputs.find(
      (output): output is { name: string; data: unknown } =>
        typeof output === 'object' &&
        output !== null &&
        (output as { name?: unknown }).name === want.name,
    );
    if (got === undefined) return `output ${want.name} is missing`;
    const data = Array.isArray(got.data) ? (got.data.flat(Infinity) as unknown[]) : null;
    if (data === null) return `output ${want.name} has no data`;
    if (data.length !== want.data.length)
      return `output ${want.name}: ${data.length} elements, ${want.data.length} expected`;
    for (const [index, expected] of want.data.entries()) {
      const actual = data[index];
      if (!withinTolerance(actual, expected, tolerance))
        return (
          `output ${want.name}[${index}]: got ${JSON.stringify(actual)}, want ` +
          `${JSON.stringify(expected)} (tolerance absolute ${tolerance.absolute}, relative ${tolerance.relative})`
        );
    }
  }
  return null;
}

function withinTolerance(actual: unknown, expected: unknown, tolerance: GoldenTolerance): boolean {
  if (typeof expected === 'number' && typeof actual === 'number') {
    if (Number.isNaN(expected)) return Number.isNaN(actual);
    return (
      Math.abs(actual - expected) <= tolerance.absolute + tolerance.relative * Math.abs(expected)
    );
  }
  return actual === expected;
}
