// Typed reads from a decoded XGBoost document (JSON values or UBJSON typed arrays), shared by
// the registration check (xgboost.ts) and the tree runtime's loader. Each read
// throws ModelError with the field's path; the loader turns that into `{ ok: false }`.

export class ModelError extends Error {}

export function field(value: unknown, key: string): unknown {
  if (
    typeof value !== 'object' ||
    value === null ||
    Array.isArray(value) ||
    ArrayBuffer.isView(value)
  ) {
    return undefined;
  }
  return Object.hasOwn(value, key) ? (value as Record<string, unknown>)[key] : undefined;
}

export function object(parent: unknown, key: string, label: string): Record<string, unknown> {
  const value = field(parent, key);
  if (
    typeof value !== 'object' ||
    value === null ||
    Array.isArray(value) ||
    ArrayBuffer.isView(value)
  ) {
    throw new ModelError(`${label} is missing or not an object`);
  }
  return value as Record<string, unknown>;
}

export function text(parent: unknown, key: string, label: string): string {
  const value = field(parent, key);
  if (typeof value !== 'string' || value === '') throw new ModelError(`${label} is missing`);
  return value;
}

/** A non-negative integer stored as a string (XGBoost's params) or a number. */
export function count(parent: unknown, key: string, label: string, fallback?: number): number {
  const value = field(parent, key);
  if (value === undefined && fallback !== undefined) return fallback;
  const number = typeof value === 'string' && /^\d+$/.test(value.trim()) ? Number(value) : value;
  if (typeof number !== 'number' || !Number.isSafeInteger(number) || number < 0) {
    throw new ModelError(`${label} is missing or not a non-negative integer`);
  }
  return number;
}

/**
 * A list of numbers: a JSON array (null is NaN, booleans are 0/1) or a UBJSON typed array.
 * With `length`, the list must have exactly that many entries.
 */
export function numbers(value: unknown, label: string, length?: number): ArrayLike<number> {
  let list: ArrayLike<number>;
  if (value instanceof BigInt64Array) {
    list = Array.from(value, Number);
  } else if (ArrayBuffer.isView(value) && !(value instanceof DataView)) {
    list = value as unknown as ArrayLike<number>;
  } else if (Array.isArray(value)) {
    const out = new Array<number>(value.length);
    for (let i = 0; i < value.length; i += 1) {
      const item: unknown = value[i];
      if (typeof item === 'number') out[i] = item;
      else if (item === null) out[i] = Number.NaN;
      else if (typeof item === 'boolean') out[i] = item ? 1 : 0;
      else if (typeof item === 'bigint') out[i] = Number(item);
      else throw new ModelError(`${label} holds a non-number at index ${i}`);
    }
    list = out;
  } else {
    throw new ModelError(`${label} is missing or not a list of numbers`);
  }
  if (length !== undefined && list.length !== length) {
    throw new ModelError(`${label} has ${list.length} entries, expected ${length}`);
  }
  return list;
}

/** Like numbers, for lists that are optional (absent → null). */
export function optionalNumbers(
  value: unknown,
  label: string,
  length?: number,
): ArrayLike<number> | null {
  return value === undefined ? null : numbers(value, label, length);
}

/** "5E-1" (XGBoost 1.x), "[5E-1]" or "[5E-1,2E-1]" (2.x and later: a list), or a number. */
export function baseScores(value: unknown): number[] {
  if (typeof value === 'number') return [value];
  if (typeof value !== 'string') {
    throw new ModelError('learner.learner_model_param.base_score is missing');
  }
  const trimmed = value.trim();
  const inner = trimmed.startsWith('[') && trimmed.endsWith(']') ? trimmed.slice(1, -1) : trimmed;
  const scores = inner.split(',').map((part) => (part.trim() === '' ? Number.NaN : Number(part)));
  if (scores.some((score) => !Number.isFinite(score))) {
    throw new ModelError(
      `learner.learner_model_param.base_score '${value.slice(0, 60)}' is not a list of finite numbers`,
    );
  }
  return scores;
}
