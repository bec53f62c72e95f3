// JSON as Python writes it: standard JSON plus the bare tokens NaN, Infinity and -Infinity
// that `json.dumps` emits by default (allow_nan=True), which users send us as they are.
//
// Fast path: JSON.parse. Only when that fails, one linear scan rewrites those tokens outside
// string literals (NaN → a sentinel string turned back into NaN by a reviver, Infinity →
// 1e999, -Infinity → -1e999, both of which JSON.parse reads as ±Infinity) and parses again.
// Text that is still invalid is reported with the message JSON.parse gives for a
// length-preserving rewrite (NaN → 0.0, Infinity → "1e999   "), so positions in the message
// are positions in the text the user sent.
//
// With `exactIntegers`, integer literals beyond ±(2^53−1) become bigint values instead of
// rounded numbers (same scan, same reviver), so INT64/UINT64 data can be read exactly.

import { randomBytes } from 'node:crypto';

export type JsonParseResult =
  { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly message: string };

export interface LenientJsonOptions {
  /** Read integer literals beyond ±(2^53−1) as bigint values (always takes the slow path). */
  readonly exactIntegers?: boolean;
}

// Sentinels are strings no client can guess: a NUL and a per-process random nonce.
const nonce = randomBytes(12).toString('hex');
const sentinelMark = `\u0000kiln-${nonce}-`;
const nanSentinel = `${sentinelMark}nan`;
const integerSentinel = `${sentinelMark}int:`;
const nanLiteral = JSON.stringify(nanSentinel);
const integerLiteralStart = JSON.stringify(integerSentinel).slice(0, -1);

export function parseJsonLenient(
  input: string | Buffer,
  options: LenientJsonOptions = {},
): JsonParseResult {
  let text = typeof input === 'string' ? input : input.toString('utf8');
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1); // a UTF-8 byte order mark
  const exactIntegers = options.exactIntegers === true;
  let firstError: unknown = null;
  if (!exactIntegers) {
    try {
      return { ok: true, value: JSON.parse(text) as unknown };
    } catch (error) {
      firstError = error;
    }
  }
  const rewritten = rewrite(text, 'parse', exactIntegers);
  if (rewritten === null && firstError !== null)
    return { ok: false, message: messageOf(firstError) };
  try {
    const source = rewritten?.text ?? text;
    if (rewritten === null || !rewritten.sentinels) {
      return { ok: true, value: JSON.parse(source) as unknown };
    }
    let sentinelKey = false;
    const value = JSON.parse(source, (key, v: unknown) => {
      if (key.startsWith(sentinelMark)) sentinelKey = true;
      if (typeof v !== 'string' || !v.startsWith(sentinelMark)) return v;
      if (v === nanSentinel) return NaN;
      if (v.startsWith(integerSentinel)) return exactInteger(v.slice(integerSentinel.length));
      return v;
    }) as unknown;
    // `{NaN: 1}` is not JSON even though its rewrite `{"<sentinel>": 1}` is.
    if (!sentinelKey) return { ok: true, value };
  } catch {
    // fall through to the diagnosis
  }
  return { ok: false, message: diagnose(text) };
}

function exactInteger(digits: string): number | bigint {
  const value = BigInt(digits);
  return value >= -maxSafe && value <= maxSafe ? Number(value) : value;
}
const maxSafe = BigInt(Number.MAX_SAFE_INTEGER);

function diagnose(text: string): string {
  const standIn = rewrite(text, 'diagnose', false)?.text ?? text;
  try {
    JSON.parse(standIn);
    return 'unexpected token'; // unreachable: the stand-in has the same validity as the text
  } catch (error) {
    const message = messageOf(error);
    return standIn === text ? message : restoreExcerpt(message, standIn, text);
  }
}

// V8 quotes the text (or an excerpt of it) in "Unexpected token" messages; put the user's
// own characters back where the stand-in has 0.0 or 1e999 (same length, so same offsets).
const excerptPattern =
  /^(Unexpected token '[\s\S]{1,2}', (?:\.\.\.)?")([\s\S]*)("(?:\.\.\.)? is not valid JSON)$/;

function restoreExcerpt(message: string, standIn: string, text: string): string {
  const match = excerptPattern.exec(message);
  const excerpt = match?.[2];
  if (match === null || excerpt === undefined) return message;
  const at = standIn.indexOf(excerpt);
  if (at === -1 || standIn.indexOf(excerpt, at + 1) !== -1) return message;
  return `${match[1]}${text.slice(at, at + excerpt.length)}${match[3]}`;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

// --- the scan ------------------------------------------------------------------------------

const quote = 0x22;
const backslash = 0x5c;
const minus = 0x2d;
const zero = 0x30;
const nine = 0x39;
const upperN = 0x4e;
const upperI = 0x49;

interface Rewrite {
  readonly text: string;
  /** Whether string sentinels were written (they need the reviver). */
  readonly sentinels: boolean;
}

/**
 * Rewrites NaN/Infinity/-Infinity (and, with exactIntegers, long integer literals) outside
 * string literals. 'parse' writes sentinels; 'diagnose' writes same-length numbers. Returns
 * null when there was nothing to rewrite.
 */
function rewrite(text: string, mode: 'parse' | 'diagnose', exactIntegers: boolean): Rewrite | null {
  const parts: string[] = [];
  let copiedTo = 0;
  let sentinels = false;
  const put = (start: number, end: number, replacement: string): void => {
    parts.push(text.slice(copiedTo, start), replacement);
    copiedTo = end;
  };
  const n = text.length;
  let i = 0;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c === quote) {
      i = stringEnd(text, i);
    } else if (c === upperN && isToken(text, i, 'NaN')) {
      if (mode === 'parse') sentinels = true;
      put(i, i + 3, mode === 'parse' ? nanLiteral : '0.0');
      i += 3;
    } else if (c === upperI && isToken(text, i, 'Infinity')) {
      put(i, i + 8, mode === 'parse' ? '1e999' : '1e999   ');
      i += 8;
    } else if (c === minus && text.startsWith('Infinity', i + 1) && isToken(text, i, '-Infinity')) {
      put(i, i + 9, mode === 'parse' ? '-1e999' : '-1e999   ');
      i += 9;
    } else if (exactIntegers && (c === minus || (c >= zero && c <= nine))) {
      const end = numberEnd(text, i);
      if (isLongInteger(text, i, end)) {
        sentinels = true;
        put(i, end, `${integerLiteralStart}${text.slice(i, end)}"`);
      }
      i = Math.max(end, i + 1);
    } else {
      i += 1;
    }
  }
  if (parts.length === 0) return null;
  parts.push(text.slice(copiedTo));
  return { text: parts.join(''), sentinels };
}

/** Index just past the string literal opening at `start` (or the text's end if unclosed). */
function stringEnd(text: string, start: number): number {
  let from = start + 1;
  for (;;) {
    const close = text.indexOf('"', from);
    if (close === -1) return text.length;
    let backslashes = 0;
    while (text.charCodeAt(close - 1 - backslashes) === backslash) backslashes += 1;
    if (backslashes % 2 === 0) return close + 1;
    from = close + 1;
  }
}

function isIdentifierChar(code: number): boolean {
  return (
    (code >= 0x30 && code <= 0x39) ||
    (code >= 0x41 && code <= 0x5a) ||
    (code >= 0x61 && code <= 0x7a) ||
    code === 0x5f ||
    code === 0x24 ||
    code === 0x2e
  );
}

/** `token` at `at`, as a whole word (so `NaNa` and `xNaN` are left alone). */
function isToken(text: string, at: number, token: string): boolean {
  return (
    text.startsWith(token, at) &&
    (at === 0 || !isIdentifierChar(text.charCodeAt(at - 1))) &&
    !isIdentifierChar(text.charCodeAt(at + token.length))
  );
}

/** End of the number-like run starting at `start` (digits, sign, '.', exponent). */
function numberEnd(text: string, start: number): number {
  let i = start + 1;
  for (; i < text.length; i++) {
    const c = text.charCodeAt(i);
    const numeric = (c >= zero && c <= nine) || c === 0x2e || c === 0x65 || c === 0x45;
    const sign = (c === 0x2b || c === minus) && (text.charCodeAt(i - 1) | 0x20) === 0x65;
    if (!numeric && !sign) break;
  }
  return i;
}

/** A valid JSON integer literal (no fraction, exponent or leading zero) beyond 2^53 − 1. */
function isLongInteger(text: string, start: number, end: number): boolean {
  const first = text.charCodeAt(start) === minus ? start + 1 : start;
  const digits = end - first;
  if (digits < 16 || text.charCodeAt(first) === zero) return false;
  for (let i = first; i < end; i++) {
    const c = text.charCodeAt(i);
    if (c < zero || c > nine) return false;
  }
  if (start > 0 && isIdentifierChar(text.charCodeAt(start - 1))) return false;
  const value = BigInt(text.slice(start, end));
  return value > maxSafe || value < -maxSafe;
}
