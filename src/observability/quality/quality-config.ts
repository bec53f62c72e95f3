// Resolves the `quality` part of an endpoint's observability settings (issue 15, D): every
// field checked and its default filled, each problem named.

import type { QualityConfig } from '../../store/observability-config.ts';
import { compileCallerKey } from '../../traffic/caller-key.ts';
import { isIntegerIn, objectFields, type Resolved } from '../resolved.ts';

/** Predictions wait a day for their outcome by default; at most 30 days. */
export const defaultJoinWindowMs = 24 * 60 * 60 * 1000;
export const maxJoinWindowMs = 30 * 24 * 60 * 60 * 1000;
export const minJoinWindowMs = 1_000;
export const defaultQualityThreshold = 0.5;

const known = ['task', 'output', 'threshold', 'joinWindowMs', 'sliceKey', 'slicePath'];

export function resolveQualityConfig(input: unknown): Resolved<QualityConfig> {
  const fields = objectFields(input);
  if (!fields.ok) return fields;
  const value = fields.value;
  const unknown = Object.keys(value).find((key) => !known.includes(key));
  if (unknown !== undefined) {
    return { ok: false, reason: `unknown field ${unknown} (known: ${known.join(', ')})` };
  }
  const task = value.task;
  if (task !== 'classification' && task !== 'regression') {
    return { ok: false, reason: 'task must be "classification" or "regression"' };
  }
  const output = value.output ?? null;
  if (output !== null && (typeof output !== 'string' || output === '')) {
    return { ok: false, reason: 'output must be an output name or null (the first output)' };
  }
  const threshold = value.threshold ?? defaultQualityThreshold;
  if (typeof threshold !== 'number' || !Number.isFinite(threshold)) {
    return { ok: false, reason: 'threshold must be a finite number' };
  }
  if (task === 'regression' && value.threshold !== undefined) {
    return { ok: false, reason: 'threshold applies to task "classification" only' };
  }
  const joinWindowMs = value.joinWindowMs ?? defaultJoinWindowMs;
  if (!isIntegerIn(joinWindowMs, minJoinWindowMs, maxJoinWindowMs)) {
    return {
      ok: false,
      reason: `joinWindowMs must be an integer in [${minJoinWindowMs}, ${maxJoinWindowMs}]`,
    };
  }
  const sliceKey = value.sliceKey ?? null;
  if (
    sliceKey !== null &&
    (typeof sliceKey !== 'string' || !/^[A-Za-z0-9_.-]{1,64}$/.test(sliceKey))
  ) {
    return { ok: false, reason: 'sliceKey must be a name of 1-64 letters, digits, _ . -' };
  }
  const slicePath = value.slicePath ?? null;
  if (slicePath !== null) {
    if (typeof slicePath !== 'string') return { ok: false, reason: 'slicePath must be a string' };
    const compiled = compileCallerKey(slicePath);
    if (!compiled.ok) return { ok: false, reason: `slicePath: ${compiled.problem}` };
    if (sliceKey === null) return { ok: false, reason: 'slicePath needs a sliceKey (its name)' };
  }
  return {
    ok: true,
    value: {
      task,
      output,
      threshold: task === 'regression' ? 0 : threshold,
      joinWindowMs,
      sliceKey,
      slicePath,
    },
  };
}
