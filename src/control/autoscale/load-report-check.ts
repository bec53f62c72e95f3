// A gateway's load report (protocol/scaling/load-report.ts), checked whole before anything
// of it is used: a report with one malformed field is refused (400 naming the field), never
// half merged. Reports are small (one entry per active endpoint), so the check is plain code.

import { kilnError } from '../../core/errors.ts';
import { HistogramSketch, type HistogramSketchSnapshot } from '../../traffic/histogram-sketch.ts';
import type { EndpointLoad, LoadReport } from '../../protocol/scaling/load-report.ts';
import { reportSketchAccuracy } from '../../protocol/traffic/traffic-report.ts';

/** A report may list at most this many endpoints (a gateway routes fewer). */
export const maxReportEndpoints = 10_000;
/** A report window longer than this is not a one-second report (a stalled gateway's). */
export const maxReportWindowMs = 60_000;
/** Buckets per side of a latency sketch (1 % accuracy spans 1 µs..1 h in about 1 400). */
const maxSketchBuckets = 4096;

function bad(reason: string): never {
  throw kilnError('KILN_VALIDATION_FAILED', { reason });
}

function objectAt(value: unknown, path: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    bad(`${path} must be an object`);
  }
  return value as Record<string, unknown>;
}

function onlyKeys(record: Record<string, unknown>, keys: readonly string[], path: string): void {
  for (const key of Object.keys(record)) {
    if (!keys.includes(key)) bad(`${path} has unknown property ${JSON.stringify(key)}`);
  }
}

function stringAt(record: Record<string, unknown>, key: string, path: string): string {
  const value = record[key];
  if (typeof value !== 'string' || value.length === 0 || value.length > 256) {
    bad(`${path}/${key} must be a string of 1 to 256 characters`);
  }
  return value;
}

function timeAt(record: Record<string, unknown>, key: string, path: string): number {
  const text = stringAt(record, key, path);
  const ms = Date.parse(text);
  if (!Number.isFinite(ms)) bad(`${path}/${key} ${JSON.stringify(text)} is not an ISO 8601 time`);
  return ms;
}

function countAt(record: Record<string, unknown>, key: string, path: string): number {
  const value = record[key];
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    bad(`${path}/${key} must be an integer >= 0`);
  }
  return value;
}

function amountAt(record: Record<string, unknown>, key: string, path: string): number {
  const value = record[key];
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    bad(`${path}/${key} must be a finite number >= 0`);
  }
  return value;
}

/** The snapshot's shape (fromSnapshot checks the numbers, not that the lists are lists). */
function sketchAt(value: unknown, path: string): HistogramSketchSnapshot {
  const record = objectAt(value, path);
  onlyKeys(record, ['relativeAccuracy', 'zeroCount', 'positive', 'negative'], path);
  // One accuracy for every report: sketches of a minute add bucket by bucket.
  if (record.relativeAccuracy !== reportSketchAccuracy) {
    bad(`${path}/relativeAccuracy must be ${reportSketchAccuracy}`);
  }
  if (typeof record.zeroCount !== 'number') bad(`${path}/zeroCount must be a number`);
  for (const side of ['positive', 'negative'] as const) {
    const buckets = record[side];
    const pairs =
      Array.isArray(buckets) &&
      buckets.length <= maxSketchBuckets &&
      buckets.every(
        (b) =>
          Array.isArray(b) &&
          b.length === 2 &&
          typeof b[0] === 'number' &&
          typeof b[1] === 'number',
      );
    if (!pairs) {
      bad(`${path}/${side} must be a list of at most ${maxSketchBuckets} [index, count] pairs`);
    }
  }
  return record as unknown as HistogramSketchSnapshot;
}

const endpointKeys = [
  'endpoint',
  'arrivals',
  'completed',
  'concurrencyMean',
  'concurrencyMax',
  'held',
  'latencyMs',
  'promptTokens',
  'completionTokens',
];

function endpointLoadOf(value: unknown, path: string): EndpointLoad {
  const record = objectAt(value, path);
  onlyKeys(record, endpointKeys, path);
  const sketch = HistogramSketch.fromSnapshot(sketchAt(record.latencyMs, `${path}/latencyMs`));
  if (!sketch.ok) bad(`${path}/latencyMs: ${sketch.message}`);
  return {
    endpoint: stringAt(record, 'endpoint', path),
    arrivals: countAt(record, 'arrivals', path),
    completed: countAt(record, 'completed', path),
    concurrencyMean: amountAt(record, 'concurrencyMean', path),
    concurrencyMax: countAt(record, 'concurrencyMax', path),
    held: countAt(record, 'held', path),
    // Re-serialized from the parsed sketch: bucket lists in order, nothing extra carried.
    latencyMs: sketch.sketch.snapshot(),
    // Issue 15 (cost): an LLM endpoint's tokens, both or neither.
    ...(record.promptTokens === undefined && record.completionTokens === undefined
      ? {}
      : {
          promptTokens: countAt(record, 'promptTokens', path),
          completionTokens: countAt(record, 'completionTokens', path),
        }),
  };
}

/** The report, or KILN_VALIDATION_FAILED naming the first field that is wrong. */
export function checkLoadReport(body: unknown): LoadReport {
  const record = objectAt(body, 'body');
  onlyKeys(record, ['gateway', 'windowStart', 'windowEnd', 'endpoints'], 'body');
  const gateway = stringAt(record, 'gateway', 'body');
  const startMs = timeAt(record, 'windowStart', 'body');
  const endMs = timeAt(record, 'windowEnd', 'body');
  if (!(endMs > startMs)) bad('body/windowEnd must be after body/windowStart');
  if (endMs - startMs > maxReportWindowMs) {
    bad(`body: a report window is at most ${maxReportWindowMs / 1000} s`);
  }
  const list = record.endpoints;
  if (!Array.isArray(list)) bad('body/endpoints must be an array');
  if (list.length > maxReportEndpoints) {
    bad(`body/endpoints lists more than ${maxReportEndpoints} endpoints`);
  }
  const endpoints = list.map((entry, i) => endpointLoadOf(entry, `body/endpoints/${i}`));
  const seen = new Set<string>();
  for (const [i, load] of endpoints.entries()) {
    if (seen.has(load.endpoint)) {
      bad(`body/endpoints/${i}: endpoint ${load.endpoint} is listed twice`);
    }
    seen.add(load.endpoint);
  }
  return {
    gateway,
    windowStart: new Date(startMs).toISOString(),
    windowEnd: new Date(endMs).toISOString(),
    endpoints,
  };
}
