// Checks an endpoint's observability settings (observability-config.ts) as a user sent them
// (deploy's `config.observability`, `PUT /api/v1/endpoints/{e}/observability`) and fills the
// defaults. Pure. Each part is checked by its area's resolver; the first problem found is
// answered as KILN_OBSERVABILITY_INVALID naming the field.

import type { ObservabilityConfig } from '../store/observability-config.ts';
import { resolveTracingConfig } from './tracing/tracing-config.ts';
import { resolveDriftConfig } from './drift/drift-config.ts';
import { resolvePredictionLogConfig } from './prediction-log/prediction-log-config.ts';
import { resolveQualityConfig } from './quality/quality-config.ts';
import { resolveSloConfig } from './slo/slo-config.ts';
import type { Resolved } from './resolved.ts';

const parts = ['tracing', 'drift', 'predictionLog', 'quality', 'slo'] as const;

export function resolveObservabilityConfig(input: unknown): Resolved<ObservabilityConfig> {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    return { ok: false, reason: 'observability must be an object' };
  }
  const fields = input as Record<string, unknown>;
  const unknown = Object.keys(fields).filter((key) => !(parts as readonly string[]).includes(key));
  if (unknown.length > 0) {
    return { ok: false, reason: `unknown field ${unknown[0]} (known: ${parts.join(', ')})` };
  }
  const out: Record<string, unknown> = {};
  const resolvers: Record<(typeof parts)[number], (value: unknown) => Resolved<unknown>> = {
    tracing: resolveTracingConfig,
    drift: resolveDriftConfig,
    predictionLog: resolvePredictionLogConfig,
    quality: resolveQualityConfig,
    slo: resolveSloConfig,
  };
  for (const part of parts) {
    const value = fields[part];
    if (value === undefined || value === null) continue;
    const resolved = resolvers[part](value);
    if (!resolved.ok) return { ok: false, reason: `${part}: ${resolved.reason}` };
    out[part] = resolved.value;
  }
  return { ok: true, value: out };
}
