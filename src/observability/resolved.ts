// The result of checking a part of the observability settings: the value with its defaults
// filled, or why it is refused (the caller names the part and answers KILN_OBSERVABILITY_INVALID).

export type Resolved<T> =
  { readonly ok: true; readonly value: T } | { readonly ok: false; readonly reason: string };

/** A plain JSON object, or the reason it is not. */
export function objectFields(input: unknown): Resolved<Record<string, unknown>> {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    return { ok: false, reason: 'must be an object' };
  }
  return { ok: true, value: input as Record<string, unknown> };
}

/**
 * Whether `value` is an integer in [min, max] (both within the safe integers): the range
 * check of the settings' counts and durations; each resolver names its own field.
 */
export function isIntegerIn(value: unknown, min: number, max: number): value is number {
  return Number.isSafeInteger(value) && (value as number) >= min && (value as number) <= max;
}
