// The result shape every tokenizer constructor and loader returns: expected failures (a file
// missing, a construct we do not implement, a template that raises) are values that name
// their cause, never exceptions.

export type TokenizerResult<T> =
  { readonly ok: true; readonly value: T } | { readonly ok: false; readonly message: string };

export function succeed<T>(value: T): TokenizerResult<T> {
  return { ok: true, value };
}

export function fail<T>(message: string): TokenizerResult<T> {
  return { ok: false, message };
}

/** A JSON object (not an array, not null), as `tokenizer.json` nests them. */
export type JsonObject = Readonly<Record<string, unknown>>;

export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The `type` field of a component, for error messages; '(missing)' when absent. */
export function componentType(value: unknown): string {
  return isJsonObject(value) && typeof value.type === 'string' ? value.type : '(missing)';
}

/**
 * A `Sequence` component: each item parsed with `parse`, the steps it gives (null = none)
 * applied in order. `what` names the component for the error ('normalizer', 'decoder').
 */
export function parseSequence<T>(
  items: unknown,
  field: string,
  what: string,
  parse: (json: unknown) => TokenizerResult<((value: T) => T) | null>,
): TokenizerResult<(value: T) => T> {
  if (!Array.isArray(items)) return fail(`Sequence ${what}: no "${field}"`);
  const steps: ((value: T) => T)[] = [];
  for (const item of items) {
    const step = parse(item);
    if (!step.ok) return fail(step.message);
    if (step.value !== null) steps.push(step.value);
  }
  return succeed((value) => steps.reduce((acc, step) => step(acc), value));
}
