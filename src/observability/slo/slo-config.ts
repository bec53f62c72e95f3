// Resolves the `slo` part of an endpoint's observability settings (docs/slo.md): every field
// checked and named, the defaults filled. Pure.
//
//   availability      share of answers without a server error (5xx, timeouts), in (0, 1)
//   latencyMs         latency objective: `latencyTarget` of the 200s within this, > 0
//   latencyTarget     in (0, 1); default 0.99 (a p99 objective) when latencyMs is set
//   driftPsiCeiling   highest PSI a feature or output may reach, > 0
//   webhooks          http(s) URLs alerts are POSTed to (at most 8)
//
// At least one objective must be set: an SLO with none would never alert, which is more
// likely a typo than an intent.

import type { SloConfig } from '../../store/observability-config.ts';
import { objectFields, type Resolved } from '../resolved.ts';

export const sloFields = [
  'availability',
  'latencyMs',
  'latencyTarget',
  'driftPsiCeiling',
  'webhooks',
] as const;

/** The latency target when only latencyMs is given: "p99 within latencyMs". */
export const defaultLatencyTarget = 0.99;
export const maxWebhooks = 8;
const maxWebhookUrlLength = 2048;
/** A day: a longer latency objective is not one a request could meet. */
const maxLatencyMs = 86_400_000;

type Field = Resolved<number | null>;

function openUnit(fields: Record<string, unknown>, key: string): Field {
  const value = fields[key];
  if (value === undefined || value === null) return { ok: true, value: null };
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0 || value >= 1) {
    return { ok: false, reason: `${key} must be a number in (0, 1), e.g. 0.999` };
  }
  return { ok: true, value };
}

function positive(fields: Record<string, unknown>, key: string, max: number): Field {
  const value = fields[key];
  if (value === undefined || value === null) return { ok: true, value: null };
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0 || value > max) {
    return { ok: false, reason: `${key} must be a number > 0 and <= ${max}` };
  }
  return { ok: true, value };
}

function webhooksOf(value: unknown): Resolved<readonly string[]> {
  if (value === undefined || value === null) return { ok: true, value: [] };
  if (!Array.isArray(value)) return { ok: false, reason: 'webhooks must be a list of URLs' };
  if (value.length > maxWebhooks) {
    return { ok: false, reason: `webhooks lists ${value.length} URLs (at most ${maxWebhooks})` };
  }
  const urls: string[] = [];
  for (const [i, entry] of value.entries()) {
    if (typeof entry !== 'string' || entry.length === 0 || entry.length > maxWebhookUrlLength) {
      return {
        ok: false,
        reason: `webhooks[${i}] must be a URL of 1 to ${maxWebhookUrlLength} characters`,
      };
    }
    let url: URL;
    try {
      url = new URL(entry);
    } catch {
      return { ok: false, reason: `webhooks[${i}] ${JSON.stringify(entry)} is not a URL` };
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      return {
        ok: false,
        reason: `webhooks[${i}] ${JSON.stringify(entry)} must be an http: or https: URL`,
      };
    }
    if (urls.includes(url.href)) {
      return { ok: false, reason: `webhooks[${i}] ${JSON.stringify(entry)} is listed twice` };
    }
    urls.push(url.href);
  }
  return { ok: true, value: urls };
}

export function resolveSloConfig(input: unknown): Resolved<SloConfig> {
  const object = objectFields(input);
  if (!object.ok) return object;
  const fields = object.value;
  const unknown = Object.keys(fields).find(
    (key) => !(sloFields as readonly string[]).includes(key),
  );
  if (unknown !== undefined) {
    return { ok: false, reason: `unknown field ${unknown} (known: ${sloFields.join(', ')})` };
  }
  const availability = openUnit(fields, 'availability');
  if (!availability.ok) return availability;
  const latencyMs = positive(fields, 'latencyMs', maxLatencyMs);
  if (!latencyMs.ok) return latencyMs;
  const latencyTarget = openUnit(fields, 'latencyTarget');
  if (!latencyTarget.ok) return latencyTarget;
  if (latencyMs.value === null && latencyTarget.value !== null) {
    return { ok: false, reason: 'latencyTarget needs latencyMs (the latency it is a target for)' };
  }
  const driftPsiCeiling = positive(fields, 'driftPsiCeiling', 100);
  if (!driftPsiCeiling.ok) return driftPsiCeiling;
  const webhooks = webhooksOf(fields.webhooks);
  if (!webhooks.ok) return { ok: false, reason: webhooks.reason };
  if (availability.value === null && latencyMs.value === null && driftPsiCeiling.value === null) {
    return {
      ok: false,
      reason: 'set at least one objective: availability, latencyMs or driftPsiCeiling',
    };
  }
  return {
    ok: true,
    value: {
      availability: availability.value,
      latencyMs: latencyMs.value,
      latencyTarget:
        latencyMs.value === null ? null : (latencyTarget.value ?? defaultLatencyTarget),
      driftPsiCeiling: driftPsiCeiling.value,
      webhooks: webhooks.value,
    },
  };
}
