// The `pattern` field of Split, Replace (normalizer and decoder): `{"String": "…"}` matches
// the literal text, `{"Regex": "…"}` an Oniguruma pattern (see onig-regex.ts).

import { compileOnigRegex, literalRegex } from './onig-regex.ts';
import { fail, isJsonObject, succeed, type TokenizerResult } from './tokenizer-result.ts';

export function parseTextPattern(pattern: unknown, owner: string): TokenizerResult<RegExp> {
  if (isJsonObject(pattern)) {
    if (typeof pattern.String === 'string') return succeed(literalRegex(pattern.String));
    if (typeof pattern.Regex === 'string') return compileOnigRegex(pattern.Regex);
  }
  return fail(`${owner}: pattern must be {"String": …} or {"Regex": …}`);
}

/**
 * [start, end) spans of every non-empty match of a global regex, in order. Empty matches
 * delimit nothing (the Rust library drops the empty pieces they would make).
 */
export function findMatches(regex: RegExp, text: string): Array<[number, number]> {
  const spans: Array<[number, number]> = [];
  for (const m of text.matchAll(regex)) {
    if (m[0].length > 0) spans.push([m.index, m.index + m[0].length]);
  }
  return spans;
}
