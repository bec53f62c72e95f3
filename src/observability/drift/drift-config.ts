// Resolves the `drift` part of an endpoint's observability settings (owner: issue 15 helper C):
// every field checked and named when wrong, the defaults filled.
//
//   {"enabled"?: bool = true, "sliceKey"?: name | null, "slicePath"?: key path | null,
//    "windowMs"?: 1 000 .. 86 400 000 = 300 000, "sampleRate"?: (0, 1] = 1,
//    "maxRequestsPerSecond"?: 1 .. 1 000 000 | null = 200}
//
// A slice path needs a slice key (the key names the slices in reports); a slice key alone
// takes its values from the `kiln-slice` header only.

import type { DriftConfig } from '../../store/observability-config.ts';
import { compileCallerKey } from '../../traffic/caller-key.ts';
import { isIntegerIn, objectFields, type Resolved } from '../resolved.ts';

export const defaultDriftWindowMs = 300_000;
export const minDriftWindowMs = 1_000;
export const maxDriftWindowMs = 86_400_000;

const known = [
  'enabled',
  'sliceKey',
  'slicePath',
  'windowMs',
  'sampleRate',
  'maxRequestsPerSecond',
] as const;

export const defaultDriftMaxRequestsPerSecond = 200;

/** A slice key is a name shown in reports and typed on the command line. */
const sliceKeyPattern = /^[A-Za-z0-9_.-]{1,64}$/;

export function resolveDriftConfig(input: unknown): Resolved<DriftConfig> {
  const fields = objectFields(input);
  if (!fields.ok) return fields;
  const value = fields.value;
  const unknown = Object.keys(value).filter((key) => !(known as readonly string[]).includes(key));
  if (unknown.length > 0) {
    return { ok: false, reason: `unknown field ${unknown[0]} (known: ${known.join(', ')})` };
  }
  const enabled = value.enabled ?? true;
  if (typeof enabled !== 'boolean') return { ok: false, reason: 'enabled must be true or false' };
  const sliceKey = value.sliceKey ?? null;
  if (sliceKey !== null && (typeof sliceKey !== 'string' || !sliceKeyPattern.test(sliceKey))) {
    return {
      ok: false,
      reason: 'sliceKey must be a name of 1 to 64 letters, digits, _, . or - (or null)',
    };
  }
  const slicePath = value.slicePath ?? null;
  if (slicePath !== null) {
    if (typeof slicePath !== 'string') {
      return { ok: false, reason: 'slicePath must be a key path such as $.parameters.country' };
    }
    const compiled = compileCallerKey(slicePath);
    if (!compiled.ok) return { ok: false, reason: `slicePath: ${compiled.problem}` };
    if (sliceKey === null) {
      return { ok: false, reason: 'slicePath needs a sliceKey (the slices name in reports)' };
    }
  }
  const windowMs = value.windowMs ?? defaultDriftWindowMs;
  if (!isIntegerIn(windowMs, minDriftWindowMs, maxDriftWindowMs)) {
    return {
      ok: false,
      reason: `windowMs must be a whole number of milliseconds from ${minDriftWindowMs} to ${maxDriftWindowMs}`,
    };
  }
  const sampleRate = value.sampleRate ?? 1;
  if (typeof sampleRate !== 'number' || !(sampleRate > 0 && sampleRate <= 1)) {
    return { ok: false, reason: 'sampleRate must be a number in (0, 1]' };
  }
  const maxRequestsPerSecond =
    value.maxRequestsPerSecond === undefined
      ? defaultDriftMaxRequestsPerSecond
      : value.maxRequestsPerSecond;
  if (maxRequestsPerSecond !== null && !isIntegerIn(maxRequestsPerSecond, 1, 1_000_000)) {
    return {
      ok: false,
      reason: 'maxRequestsPerSecond must be a whole number from 1 to 1000000, or null (no limit)',
    };
  }
  return {
    ok: true,
    value: { enabled, sliceKey, slicePath, windowMs, sampleRate, maxRequestsPerSecond },
  };
}
