// Pre-tokenizers from tokenizer.json: cut a normalized piece of text into words that BPE then
// encodes one by one (and caches). Byte-level tokenizers split with the GPT-2 regex (or a
// Split pre-tokenizer with Llama-3's regex) and then write each word's UTF-8 bytes as
// byte-level symbols; SentencePiece-style ones either have none (the whole piece is one
// word) or Metaspace (spaces become '▁', optionally split before each '▁').

import { toByteLevel } from './byte-level-alphabet.ts';
import { compileOnigRegex } from './onig-regex.ts';
import { findMatches, parseTextPattern } from './text-pattern.ts';
import {
  componentType,
  fail,
  isJsonObject,
  succeed,
  type JsonObject,
  type TokenizerResult,
} from './tokenizer-result.ts';

/** A piece of text; `atStart`: it begins at offset 0 of the original input. */
export interface PreToken {
  readonly text: string;
  readonly atStart: boolean;
}

export type PreTokenizer = (pieces: readonly PreToken[]) => PreToken[];

/** GPT-2's split regex, which ByteLevel uses when `use_regex` is true. */
export const gpt2SplitPattern =
  "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

export type SplitBehavior =
  'Removed' | 'Isolated' | 'MergedWithPrevious' | 'MergedWithNext' | 'Contiguous';

export type PrependScheme = 'always' | 'first' | 'never';

/** The pre-tokenizer described by `json` (null: none), or the construct we do not support. */
export function parsePreTokenizer(json: unknown): TokenizerResult<PreTokenizer | null> {
  if (json === null || json === undefined) return succeed(null);
  if (!isJsonObject(json)) return fail('pre_tokenizer must be an object or null');
  const type = componentType(json);
  switch (type) {
    case 'Sequence': {
      if (!Array.isArray(json.pretokenizers)) {
        return fail('Sequence pre_tokenizer: no "pretokenizers"');
      }
      const steps: PreTokenizer[] = [];
      for (const item of json.pretokenizers) {
        const step = parsePreTokenizer(item);
        if (!step.ok) return step;
        if (step.value !== null) steps.push(step.value);
      }
      return succeed((pieces) => steps.reduce<PreToken[]>((acc, step) => step(acc), [...pieces]));
    }
    case 'ByteLevel':
      return byteLevel(json);
    case 'Split': {
      const regex = parseTextPattern(json.pattern, 'Split pre_tokenizer');
      if (!regex.ok) return regex;
      const behavior = parseBehavior(json.behavior);
      if (behavior === null)
        return fail(`Split pre_tokenizer: unknown behavior ${String(json.behavior)}`);
      const invert = json.invert === true;
      return succeed(eachPiece((text) => splitText(text, regex.value, behavior, invert)));
    }
    case 'Metaspace':
      return metaspace(json);
    case 'WhitespaceSplit': {
      const regex = compileOnigRegex('\\S+');
      if (!regex.ok) return regex;
      return succeed(eachPiece((text) => splitText(text, regex.value, 'Removed', true)));
    }
    case 'Digits': {
      // Rust's char::is_numeric: every \p{N} (½, ², Ⅻ), not only decimal digits.
      const regex = compileOnigRegex(json.individual_digits === true ? '\\p{N}' : '\\p{N}+');
      if (!regex.ok) return regex;
      return succeed(eachPiece((text) => splitText(text, regex.value, 'Isolated', false)));
    }
    default:
      return fail(`unsupported pre_tokenizer type: ${type}`);
  }
}

function byteLevel(json: JsonObject): TokenizerResult<PreTokenizer> {
  const addPrefixSpace = json.add_prefix_space === true;
  const useRegex = json.use_regex !== false;
  const regex = compileOnigRegex(gpt2SplitPattern);
  if (!regex.ok) return regex;
  return succeed((pieces) => {
    const out: PreToken[] = [];
    for (const piece of pieces) {
      const text = addPrefixSpace && !piece.text.startsWith(' ') ? ' ' + piece.text : piece.text;
      const words = useRegex ? splitText(text, regex.value, 'Isolated', false) : [text];
      words.forEach((word, i) => {
        if (word.length > 0) {
          out.push({ text: toByteLevel(word), atStart: piece.atStart && i === 0 });
        }
      });
    }
    return out;
  });
}

function metaspace(json: JsonObject): TokenizerResult<PreTokenizer> {
  const replacement = json.replacement;
  if (typeof replacement !== 'string' || Array.from(replacement).length !== 1) {
    return fail('Metaspace pre_tokenizer: "replacement" must be one character');
  }
  const scheme = parsePrependScheme(json);
  if (!scheme.ok) return scheme;
  const split = json.split !== false;
  const splitRegex = new RegExp(replacement.replace(/[\\^$.*+?()[\]{}|/-]/g, '\\$&'), 'gu');
  return succeed(
    eachPiece((text, atStart) => {
      let out = text.replaceAll(' ', replacement);
      const prepend = scheme.value === 'always' || (scheme.value === 'first' && atStart);
      if (prepend && !out.startsWith(replacement)) out = replacement + out;
      return split ? splitText(out, splitRegex, 'MergedWithNext', false) : [out];
    }),
  );
}

/** Metaspace's `prepend_scheme`, or the older `add_prefix_space` boolean it replaced. */
export function parsePrependScheme(json: JsonObject): TokenizerResult<PrependScheme> {
  const scheme = json.prepend_scheme;
  if (scheme === 'always' || scheme === 'first' || scheme === 'never') return succeed(scheme);
  if (scheme !== undefined && scheme !== null) {
    return fail(`Metaspace: unknown prepend_scheme ${JSON.stringify(scheme)}`);
  }
  return succeed(json.add_prefix_space === false ? 'never' : 'always');
}

function parseBehavior(value: unknown): SplitBehavior | null {
  switch (value) {
    case 'Removed':
    case 'Isolated':
    case 'MergedWithPrevious':
    case 'MergedWithNext':
    case 'Contiguous':
      return value;
    default:
      return null;
  }
}

/** Applies a text splitter to each piece; only a piece's first part keeps `atStart`. */
function eachPiece(split: (text: string, atStart: boolean) => string[]): PreTokenizer {
  return (pieces) => {
    const out: PreToken[] = [];
    for (const piece of pieces) {
      let first = true;
      for (const text of split(piece.text, piece.atStart)) {
        if (text.length === 0) continue;
        out.push({ text, atStart: piece.atStart && first });
        first = false;
      }
    }
    return out;
  };
}

/**
 * Splits `text` around the regex's matches the way the Rust NormalizedString::split does:
 * the text becomes alternating (gap, match) spans, which the behavior then keeps, drops or
 * glues to a neighbour. With `invert`, the gaps are the delimiters instead. Empty parts are
 * dropped by the caller.
 */
export function splitText(
  text: string,
  regex: RegExp,
  behavior: SplitBehavior,
  invert: boolean,
): string[] {
  // [start, end, isDelimiter] covering the whole text.
  const spans: Array<[number, number, boolean]> = [];
  let last = 0;
  for (const [start, end] of findMatches(regex, text)) {
    if (start > last) spans.push([last, start, invert]);
    spans.push([start, end, !invert]);
    last = end;
  }
  if (last < text.length) spans.push([last, text.length, invert]);

  const kept: Array<[number, number]> = [];
  let previousDelimiter = false;
  switch (behavior) {
    case 'Isolated':
      for (const [start, end] of spans) kept.push([start, end]);
      break;
    case 'Removed':
      for (const [start, end, isDelimiter] of spans) if (!isDelimiter) kept.push([start, end]);
      break;
    case 'Contiguous':
      for (const [start, end, isDelimiter] of spans) {
        const lastKept = kept[kept.length - 1];
        if (lastKept !== undefined && isDelimiter === previousDelimiter) lastKept[1] = end;
        else kept.push([start, end]);
        previousDelimiter = isDelimiter;
      }
      break;
    case 'MergedWithPrevious':
      for (const [start, end, isDelimiter] of spans) {
        const lastKept = kept[kept.length - 1];
        if (lastKept !== undefined && isDelimiter && !previousDelimiter) lastKept[1] = end;
        else kept.push([start, end]);
        previousDelimiter = isDelimiter;
      }
      break;
    case 'MergedWithNext':
      for (let i = spans.length - 1; i >= 0; i -= 1) {
        const [start, end, isDelimiter] = spans[i] ?? [0, 0, false];
        const lastKept = kept[kept.length - 1];
        if (lastKept !== undefined && isDelimiter && !previousDelimiter) lastKept[0] = start;
        else kept.push([start, end]);
        previousDelimiter = isDelimiter;
      }
      kept.reverse();
      break;
  }
  return kept.map(([start, end]) => text.slice(start, end));
}
