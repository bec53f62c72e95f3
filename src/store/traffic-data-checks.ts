// What the stores check and compute for traffic data without their database: times given as
// ISO 8601, outcomes grouped and merged into their moments, observation deltas keyed by
// bucket. Both stores (sqlite-traffic-data.ts, postgres/pg-traffic-data.ts) run these inside
// their write transactions, so they refuse the same calls with the same messages.

import { kilnError } from '../core/errors.ts';
import { RunningMoments, type MomentsSnapshot } from '../traffic/running-moments.ts';
import {
  observationBucketMs,
  type ObservationDelta,
  type OutcomeEntry,
  type OutcomeKind,
} from './traffic-records.ts';

function invalid(reason: string): never {
  throw kilnError('KILN_VALIDATION_FAILED', { reason });
}

/** Epoch ms of an ISO 8601 time; `what` names it in the refusal. */
export function timeMs(iso: string, what: string): number {
  const ms = Date.parse(iso);
  if (!Number.isFinite(ms)) invalid(`${what} ${JSON.stringify(iso)} is not an ISO 8601 time`);
  return ms;
}

/** Stored times are toISOString()'s: the same form keeps text order time order. */
export function canonicalTime(iso: string, what: string): string {
  return new Date(timeMs(iso, what)).toISOString();
}

export interface OutcomeGroup {
  readonly variant: string;
  readonly metric: string;
  readonly kind: OutcomeKind;
  readonly values: number[];
}

/**
 * Checks every entry before anything is merged (the transaction would undo it anyway; this
 * keeps the first problem the one reported) and groups the values per (variant, metric).
 * `variants`: the experiment's, as `model:version`; `kinds`: the kind each metric already has.
 */
export function groupOutcomes(
  experimentId: string,
  variants: readonly string[],
  kinds: ReadonlyMap<string, OutcomeKind>,
  entries: readonly OutcomeEntry[],
): OutcomeGroup[] {
  const known = new Map(kinds);
  const groups = new Map<string, OutcomeGroup>();
  entries.forEach((entry, i) => {
    const at = `outcomes[${i}]`;
    if (!variants.includes(entry.variant)) {
      invalid(
        `${at}.variant ${entry.variant} is not a variant of experiment ${experimentId} (${variants.join(', ')})`,
      );
    }
    if (typeof entry.metric !== 'string' || entry.metric === '') {
      invalid(`${at}.metric must be a non-empty string`);
    }
    if (entry.kind !== 'rate' && entry.kind !== 'mean') {
      invalid(`${at}.kind must be 'rate' or 'mean'`);
    }
    if (!Number.isFinite(entry.value)) invalid(`${at}.value must be a finite number`);
    if (entry.kind === 'rate' && entry.value !== 0 && entry.value !== 1) {
      invalid(`${at}.value of rate metric ${entry.metric} must be 0 or 1, got ${entry.value}`);
    }
    const kind = known.get(entry.metric);
    if (kind !== undefined && kind !== entry.kind) {
      invalid(
        `${at}: metric ${entry.metric} is a ${kind} metric of experiment ${experimentId}; it cannot take a ${entry.kind} value`,
      );
    }
    known.set(entry.metric, entry.kind);
    const key = JSON.stringify([entry.variant, entry.metric]);
    const group = groups.get(key) ?? {
      variant: entry.variant,
      metric: entry.metric,
      kind: entry.kind,
      values: [],
    };
    group.values.push(entry.value);
    groups.set(key, group);
  });
  return [...groups.values()];
}

/** The stored moments (JSON, or undefined: none yet) with `values` added, as JSON. */
export function mergedMomentsJson(stored: string | undefined, values: readonly number[]): string {
  const moments = new RunningMoments();
  if (stored !== undefined) {
    const parsed = RunningMoments.fromSnapshot(JSON.parse(stored) as MomentsSnapshot);
    if (!parsed.ok) {
      throw kilnError('KILN_INTERNAL', { reason: `stored outcome moments: ${parsed.message}` });
    }
    moments.merge(parsed.moments);
  }
  for (const value of values) moments.add(value);
  return JSON.stringify(moments.snapshot());
}

/**
 * Each delta's row key (endpoint, bucket_ms, kind, model, version, slice); refuses the whole
 * call when one is off a bucket boundary or malformed.
 */
export function observationKeys(
  deltas: readonly ObservationDelta[],
): { readonly delta: ObservationDelta; readonly key: unknown[] }[] {
  return deltas.map((delta, i) => {
    const at = `observations[${i}]`;
    const bucketMs = timeMs(delta.bucketStart, `${at}.bucketStart`);
    if (bucketMs % observationBucketMs !== 0) {
      invalid(
        `${at}.bucketStart ${delta.bucketStart} is not on a ${observationBucketMs} ms boundary`,
      );
    }
    if (delta.kind !== 'primary' && delta.kind !== 'shadow') {
      invalid(`${at}.kind must be 'primary' or 'shadow'`);
    }
    if (!Number.isSafeInteger(delta.version)) invalid(`${at}.version must be an integer`);
    return {
      delta,
      key: [delta.endpoint, bucketMs, delta.kind, delta.model, delta.version, delta.slice],
    };
  });
}
