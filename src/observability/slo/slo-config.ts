// Resolves the `slo` part of an endpoint's observability settings (owner: issue 15 helper F).
// STUB from the contracts commit: accepts an object and fills nothing; its owner replaces it
// with the full check (every field, range and default, each problem named).

import type { SloConfig } from '../../store/observability-config.ts';
import { objectFields, type Resolved } from '../resolved.ts';

export function resolveSloConfig(input: unknown): Resolved<SloConfig> {
  const fields = objectFields(input);
  if (!fields.ok) return fields;
  return { ok: true, value: fields.value as unknown as SloConfig };
}
