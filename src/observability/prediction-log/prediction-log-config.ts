// Resolves the `predictionLog` part of an endpoint's observability settings (issue 15, D):
// every field checked and its default filled, each problem named. Whether each redaction
// rule names a field that exists is checked apart (redaction-fields.ts), at deploy, against
// the version's schema when it is known.

import type { PredictionLogConfig, RedactionRule } from '../../store/observability-config.ts';
import { isIntegerIn, objectFields, type Resolved } from '../resolved.ts';

/** Defaults: every request of an endpoint that opted in; 64 MiB files, 8 kept. */
export const defaultPredictionLogSampleRate = 1;
export const defaultPredictionLogMaxFileBytes = 64 * 1024 * 1024;
export const defaultPredictionLogMaxFiles = 8;
/** A file smaller than this would hold few records; larger than this is no local log. */
export const minPredictionLogFileBytes = 4 * 1024;
export const maxPredictionLogFileBytes = 1024 * 1024 * 1024;
export const maxPredictionLogFiles = 1_000;
/** A rule list longer than this is no redaction policy but a schema. */
export const maxRedactionRules = 256;

const known = ['sampleRate', 'redact', 'maxFileBytes', 'maxFiles'];

export function resolvePredictionLogConfig(input: unknown): Resolved<PredictionLogConfig> {
  const fields = objectFields(input);
  if (!fields.ok) return fields;
  const value = fields.value;
  const unknown = Object.keys(value).find((key) => !known.includes(key));
  if (unknown !== undefined) {
    return { ok: false, reason: `unknown field ${unknown} (known: ${known.join(', ')})` };
  }
  const sampleRate = value.sampleRate ?? defaultPredictionLogSampleRate;
  if (typeof sampleRate !== 'number' || !(sampleRate >= 0 && sampleRate <= 1)) {
    return { ok: false, reason: 'sampleRate must be a number in [0, 1]' };
  }
  const maxFileBytes = value.maxFileBytes ?? defaultPredictionLogMaxFileBytes;
  if (!isIntegerIn(maxFileBytes, minPredictionLogFileBytes, maxPredictionLogFileBytes)) {
    return {
      ok: false,
      reason: `maxFileBytes must be an integer in [${minPredictionLogFileBytes}, ${maxPredictionLogFileBytes}]`,
    };
  }
  const maxFiles = value.maxFiles ?? defaultPredictionLogMaxFiles;
  if (!isIntegerIn(maxFiles, 1, maxPredictionLogFiles)) {
    return { ok: false, reason: `maxFiles must be an integer in [1, ${maxPredictionLogFiles}]` };
  }
  const redact = resolveRedactionRules(value.redact ?? []);
  if (!redact.ok) return redact;
  return { ok: true, value: { sampleRate, redact: redact.value, maxFileBytes, maxFiles } };
}

function resolveRedactionRules(input: unknown): Resolved<readonly RedactionRule[]> {
  if (!Array.isArray(input)) return { ok: false, reason: 'redact must be an array of rules' };
  if (input.length > maxRedactionRules) {
    return { ok: false, reason: `redact has more than ${maxRedactionRules} rules` };
  }
  const rules: RedactionRule[] = [];
  const seen = new Set<string>();
  for (const [index, item] of (input as unknown[]).entries()) {
    const where = `redact[${index}]`;
    const fields = objectFields(item);
    if (!fields.ok) return { ok: false, reason: `${where} must be an object {field, action}` };
    const { field, action, ...rest } = fields.value;
    const extra = Object.keys(rest)[0];
    if (extra !== undefined) {
      return { ok: false, reason: `${where} has unknown field ${extra} (known: field, action)` };
    }
    if (typeof field !== 'string' || field === '' || field.length > 256) {
      return {
        ok: false,
        reason: `${where}.field must be a non-empty name (at most 256 characters)`,
      };
    }
    if (field === 'outputs.') return { ok: false, reason: `${where}.field names no output` };
    if (action !== 'drop' && action !== 'hash') {
      return { ok: false, reason: `${where}.action must be "drop" or "hash"` };
    }
    if (seen.has(field)) return { ok: false, reason: `${where}.field ${field} is named twice` };
    seen.add(field);
    rules.push({ field, action });
  }
  return { ok: true, value: rules };
}
