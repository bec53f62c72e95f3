// The caller key a sticky split hashes: who the request is for, so a user keeps its variant.
// It comes from the `kiln-user` header, else from a place in the JSON body named by the
// endpoint's policy (`keyPath`), else there is none and the split draws at random.
//
// Key path syntax (small on purpose — no wildcards, filters or quoting):
//   path     := [ '$' ] first rest*          e.g.  $.parameters.user_id   inputs[0].data[0]
//   first    := name | index                       (after '$' a name needs its '.')
//   rest     := '.' name | index
//   name     := [A-Za-z0-9_-]+                      an object's own property
//   index    := '[' digits ']'                      an array element, 0-based
// The value found must be a non-blank string (trimmed, as the header is) or a finite number
// (42 and "42" are the same user); anything else — missing, null, a boolean, an object — is
// no key.

/** The header a caller names itself with; it wins over the body. */
export const CALLER_KEY_HEADER = 'kiln-user';

export type KeyPathSegment =
  | { readonly kind: 'name'; readonly name: string }
  | { readonly kind: 'index'; readonly index: number };

export interface CallerKeySource {
  /** The path as configured, for messages and round trips; null: the header only. */
  readonly keyPath: string | null;
  readonly segments: readonly KeyPathSegment[];
}

export type CompileKeyPathResult =
  | { readonly ok: true; readonly source: CallerKeySource }
  | { readonly ok: false; readonly problem: string };

const NAME_CHAR = /[A-Za-z0-9_-]/;
const MAX_INDEX = 2 ** 31 - 1;

/** Reads a key path (null or absent: header only); a bad path is a value naming the problem. */
export function compileCallerKey(keyPath: string | null = null): CompileKeyPathResult {
  if (keyPath === null) return { ok: true, source: { keyPath: null, segments: [] } };
  const parsed = parseKeyPath(keyPath);
  if (typeof parsed === 'string') return { ok: false, problem: parsed };
  return { ok: true, source: { keyPath, segments: parsed } };
}

/**
 * The caller key of a request: the `kiln-user` header's value (`headerValue`, as node gives
 * it; the first when repeated), else the value at the source's path in the parsed `body`;
 * null when neither gives one.
 */
export function callerKey(
  source: CallerKeySource,
  headerValue: string | readonly string[] | undefined,
  body: unknown,
): string | null {
  const header = typeof headerValue === 'string' ? headerValue : headerValue?.[0];
  if (header !== undefined && header.trim() !== '') return header.trim();
  if (source.segments.length === 0) return null;
  return keyAtPath(body, source.segments);
}

/** The key at `segments` in `value`, or null (see the syntax note above). */
export function keyAtPath(value: unknown, segments: readonly KeyPathSegment[]): string | null {
  let at: unknown = value;
  for (const segment of segments) {
    if (segment.kind === 'index') {
      if (!Array.isArray(at) || segment.index >= at.length) return null;
      at = at[segment.index];
    } else {
      // Own properties only: `constructor` or `__proto__` must not reach the prototype.
      if (typeof at !== 'object' || at === null || Array.isArray(at)) return null;
      if (!Object.prototype.hasOwnProperty.call(at, segment.name)) return null;
      at = (at as Record<string, unknown>)[segment.name];
    }
  }
  // Trimmed as the header is (and as experiment outcomes name their user): ' alice ' in the
  // body is the same user as `kiln-user: alice`, in the split and in outcome attribution.
  if (typeof at === 'string') {
    const key = at.trim();
    return key === '' ? null : key;
  }
  if (typeof at === 'number' && Number.isFinite(at)) return String(at);
  return null;
}

/** The segments of `path`, or a message naming what is wrong and where. */
function parseKeyPath(path: string): KeyPathSegment[] | string {
  if (typeof path !== 'string' || path.trim() === '') return 'the key path is empty';
  const segments: KeyPathSegment[] = [];
  let i = 0;
  const rooted = path.startsWith('$');
  if (rooted) i = 1;
  const at = (n: number): string => `at character ${n + 1} of key path '${path}'`;
  while (i < path.length) {
    const c = path.charAt(i);
    if (c === '[') {
      const close = path.indexOf(']', i);
      const digits = close < 0 ? '' : path.slice(i + 1, close);
      if (!/^(0|[1-9][0-9]*)$/.test(digits) || Number(digits) > MAX_INDEX) {
        return `an index must be [digits] with a whole number ${at(i)}`;
      }
      segments.push({ kind: 'index', index: Number(digits) });
      i = close + 1;
      continue;
    }
    const first = segments.length === 0 && !rooted;
    if (c === '.') {
      i += 1;
    } else if (!first) {
      return `expected '.' or '[' ${at(i)}, got '${c}'`;
    }
    let end = i;
    while (end < path.length && NAME_CHAR.test(path.charAt(end))) end += 1;
    if (end === i) {
      return end < path.length
        ? `expected a name (letters, digits, '_' or '-') ${at(i)}, got '${path.charAt(i)}'`
        : `key path '${path}' ends with '.'`;
    }
    segments.push({ kind: 'name', name: path.slice(i, end) });
    i = end;
  }
  if (segments.length === 0) return `the key path '${path}' names no field`;
  return segments;
}
