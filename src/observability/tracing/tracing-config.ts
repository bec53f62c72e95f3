// Resolves the `tracing` part of an endpoint's observability settings: OpenTelemetry head
// sampling (docs/tracing.md). Pure.
//
//   {"sampleRate": 0.05}   5 % of this endpoint's new traces are recorded
//
// A caller's `traceparent` with the sampled flag is always followed, whatever the rate (the
// caller's tracer already decided to record this trace); an unsampled or absent one is
// sampled at the rate. Endpoints without `tracing` are sampled at defaultTraceSampleRate.
// Nothing is recorded at all unless the platform exports traces (`kiln up --otlp URL`).

import type { TracingConfig } from '../../store/observability-config.ts';
import { objectFields, type Resolved } from '../resolved.ts';

/**
 * The share of new traces recorded for an endpoint without a `tracing` setting: 1 % keeps a
 * busy endpoint's spans (~7 per request) a small fraction of its work and still gives a
 * trace every few seconds at a hundred requests a second.
 */
export const defaultTraceSampleRate = 0.01;

const fields = ['sampleRate'] as const;

export function resolveTracingConfig(input: unknown): Resolved<TracingConfig> {
  const object = objectFields(input);
  if (!object.ok) return object;
  const value = object.value;
  const unknown = Object.keys(value).filter((key) => !(fields as readonly string[]).includes(key));
  if (unknown.length > 0) {
    return { ok: false, reason: `unknown field ${unknown[0]} (known: ${fields.join(', ')})` };
  }
  const rate = value.sampleRate;
  if (rate === undefined || rate === null) {
    return { ok: true, value: { sampleRate: defaultTraceSampleRate } };
  }
  if (typeof rate !== 'number' || !Number.isFinite(rate) || rate < 0 || rate > 1) {
    return {
      ok: false,
      reason: `sampleRate must be a number from 0 to 1, not ${JSON.stringify(rate)}`,
    };
  }
  return { ok: true, value: { sampleRate: rate } };
}
