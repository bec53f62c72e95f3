// Resolves the `quality` part of an endpoint's observability settings (owner: issue 15 helper D).
// STUB from the contracts commit: accepts an object and fills nothing; its owner replaces it
// with the full check (every field, range and default, each problem named).

import type { QualityConfig } from '../../store/observability-config.ts';
import { objectFields, type Resolved } from '../resolved.ts';

export function resolveQualityConfig(input: unknown): Resolved<QualityConfig> {
  const fields = objectFields(input);
  if (!fields.ok) return fields;
  return { ok: true, value: fields.value as unknown as QualityConfig };
}
