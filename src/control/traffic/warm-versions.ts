// The lists of versions that run without traffic: `warm` (until a time: what makes a
// rollback instant) and `staged` (no expiry). Pure edits that return new lists; expired warm
// entries are dropped whenever a list is rewritten, so the stored list does not grow.

import { versionKey, type VersionRef, type WarmVersion } from '../../store/traffic-records.ts';

export function sameVersion(a: VersionRef, b: VersionRef): boolean {
  return a.model === b.model && a.version === b.version;
}

/** The list without `ref` (any entry of the same model and version). */
export function withoutVersion<T extends VersionRef>(list: readonly T[], ref: VersionRef): T[] {
  return list.filter((entry) => !sameVersion(entry, ref));
}

/** Entries still warm at `nowMs` (until in the future). */
export function liveWarm(warm: readonly WarmVersion[], nowMs: number): WarmVersion[] {
  return warm.filter((entry) => Date.parse(entry.until) > nowMs);
}

/**
 * `ref` kept warm until `untilMs` (replacing an entry it had, whichever ends later wins),
 * without `except` (the version that just took the stable position: it runs anyway), and
 * without what has expired by `nowMs`.
 */
export function keepWarm(
  warm: readonly WarmVersion[],
  ref: VersionRef,
  untilMs: number,
  nowMs: number,
  except?: VersionRef,
): WarmVersion[] {
  const live = liveWarm(warm, nowMs);
  const had = live.find((entry) => sameVersion(entry, ref));
  const until = Math.max(untilMs, had === undefined ? 0 : Date.parse(had.until));
  const kept = withoutVersion(live, ref).filter(
    (entry) => except === undefined || !sameVersion(entry, except),
  );
  // A grace of 0 (a deploy that asks for none): nothing to keep.
  if (until <= nowMs || (except !== undefined && sameVersion(ref, except))) return kept;
  return [
    ...kept,
    { model: ref.model, version: ref.version, until: new Date(until).toISOString() },
  ];
}

/** `iris:3, iris:4`: versions for messages. */
export function listVersions(refs: readonly VersionRef[]): string {
  return refs.map(versionKey).join(', ');
}
