// Bytes of an XGBoost `save_model` file → the document as plain values. The two encodings
// hold the same tree; which one a file uses is decided by content, since both start with `{`
// Shared by the registration check (xgboost.ts) and the tree runtime, so what registers
// is exactly what loads.
//
// XGBoost's JSON writer prints non-finite floats as bare NaN / Infinity / -Infinity (a
// categorical split's split_conditions entry is NaN), which JSON.parse rejects. When the
// plain parse fails, those tokens outside strings are rewritten (NaN → null, ±Infinity →
// ±1e999, which parses as ±Infinity) and the text is parsed again; number readers treat
// null as NaN.

import { decodeUbjson } from './ubjson.ts';

export type DecodedDocument =
  | { readonly ok: true; readonly value: unknown; readonly encoding: 'json' | 'ubjson' }
  | { readonly ok: false; readonly reason: string };

export function decodeXgboostDocument(bytes: Uint8Array): DecodedDocument {
  const encoding = sniff(bytes);
  if (encoding === null) {
    return { ok: false, reason: 'not an XGBoost JSON or UBJSON model (it does not start with {)' };
  }
  if (encoding === 'ubjson') {
    const result = decodeUbjson(bytes);
    return result.ok
      ? { ok: true, value: result.value, encoding }
      : { ok: false, reason: `not valid UBJSON (${result.reason})` };
  }
  const text = new TextDecoder('utf-8', { fatal: false }).decode(bytes);
  const first = parseJson(text);
  if (first.ok) return { ok: true, value: first.value, encoding };
  const second = parseJson(replaceNonFiniteTokens(text));
  if (second.ok) return { ok: true, value: second.value, encoding };
  return { ok: false, reason: `not valid JSON (${first.reason})` };
}

function parseJson(text: string): { ok: true; value: unknown } | { ok: false; reason: string } {
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch (error) {
    return { ok: false, reason: error instanceof Error ? error.message : String(error) };
  }
}

/** Rewrites bare NaN / Infinity / -Infinity outside strings into tokens JSON.parse accepts. */
function replaceNonFiniteTokens(text: string): string {
  return text.replace(/"(?:[^"\\]|\\.)*"|-?Infinity|NaN/g, (match) => {
    if (match.startsWith('"')) return match;
    if (match === 'NaN') return 'null';
    return match.startsWith('-') ? '-1e999' : '1e999';
  });
}

/** Text JSON: optional BOM and whitespace, `{`, whitespace, then `"` or `}`. UBJSON has a
 * length marker (i U I l L), `$` or `#` right after its `{`. */
function sniff(bytes: Uint8Array): 'json' | 'ubjson' | null {
  const isSpace = (b: number | undefined): boolean =>
    b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;
  let i = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0;
  while (isSpace(bytes[i])) i += 1;
  if (bytes[i] !== 0x7b /* { */) return null;
  if (i > 0) return 'json';
  i += 1;
  while (isSpace(bytes[i])) i += 1;
  return bytes[i] === 0x22 || bytes[i] === 0x7d || i > 1 ? 'json' : 'ubjson';
}
