// Compiles the regular expressions found in tokenizer.json (written for Oniguruma, which the
// Rust tokenizers library uses) into JavaScript RegExps with the same matches on the
// patterns real tokenizers ship. What differs and is translated here:
//   - `(?i:…)` scoped case-insensitivity (Llama-3's and Qwen's `(?i:'s|'t|…)`): Node 20 has
//     no pattern modifiers, so each letter inside becomes a class of every character that
//     case-folds to it (`s` → `[sSſ]`, as Unicode folding matches it).
//   - `\s` / `\S`: Unicode White_Space, not JavaScript's set (see unicode-classes.ts).
//   - `\x{HHHH}` → `\u{HHHH}`; identity escapes of punctuation (`\'`), which the `u` flag
//     rejects, become the plain character.
// Constructs with no JavaScript equivalent (atomic groups, possessive quantifiers, inline
// flags that are not scoped) are refused by name rather than approximated.

import { whiteSpaceClass, wordClass } from './unicode-classes.ts';
import { fail, succeed, type TokenizerResult } from './tokenizer-result.ts';

const syntaxChars = new Set([
  '^',
  '$',
  '\\',
  '.',
  '*',
  '+',
  '?',
  '(',
  ')',
  '[',
  ']',
  '{',
  '}',
  '|',
  '/',
]);

/** A global, Unicode RegExp equivalent to the Oniguruma pattern, or why there is none. */
export function compileOnigRegex(pattern: string): TokenizerResult<RegExp> {
  const translated = translate(pattern);
  if (!translated.ok) return translated;
  try {
    return succeed(new RegExp(translated.value, 'gu'));
  } catch (error) {
    return fail(`unsupported regex ${JSON.stringify(pattern)}: ${(error as Error).message}`);
  }
}

/** A RegExp matching the literal string (Split and Replace with a `String` pattern). */
export function literalRegex(text: string): RegExp {
  return new RegExp(text.replace(/[\\^$.*+?()[\]{}|/-]/g, '\\$&'), 'gu');
}

function translate(pattern: string): TokenizerResult<string> {
  const chars = Array.from(pattern);
  let out = '';
  let inClass = false;
  // One entry per open group: whether it is case-insensitive.
  const groups: boolean[] = [];
  const caseless = (): boolean => groups.length > 0 && groups[groups.length - 1] === true;
  const refuse = (what: string): TokenizerResult<string> =>
    fail(`unsupported regex ${JSON.stringify(pattern)}: ${what}`);

  for (let i = 0; i < chars.length; i += 1) {
    const c = chars[i] ?? '';
    if (c === '\\') {
      const next = chars[i + 1];
      if (next === undefined) return refuse('trailing backslash');
      i += 1;
      if (next === 's') out += inClass ? whiteSpaceClass : `[${whiteSpaceClass}]`;
      else if (next === 'S') {
        if (inClass) return refuse('\\S inside a character class');
        out += `[^${whiteSpaceClass}]`;
      } else if (next === 'x' && chars[i + 1] === '{') {
        const close = chars.indexOf('}', i + 2);
        if (close < 0) return refuse('unterminated \\x{');
        out += `\\u{${chars.slice(i + 2, close).join('')}}`;
        i = close;
      } else if ((next === 'p' || next === 'P') && chars[i + 1] === '{') {
        // A property class (\p{L}) passes through whole, braces included.
        const close = chars.indexOf('}', i + 2);
        if (close < 0) return refuse(`unterminated \\${next}{`);
        out += `\\${next}${chars.slice(i + 1, close + 1).join('')}`;
        i = close;
      } else if (next === 'A') out += '^';
      else if (next === 'z') out += '$';
      // Oniguruma's \d and \w are Unicode (JavaScript's are ASCII, even with /u).
      else if (next === 'd') out += '\\p{Nd}';
      else if (next === 'D') out += '\\P{Nd}';
      else if (next === 'w') out += inClass ? wordClass : `[${wordClass}]`;
      else if (next === 'W') {
        if (inClass) return refuse('\\W inside a character class');
        out += `[^${wordClass}]`;
      } else if (next === 'b' || next === 'B') return refuse(`\\${next} (a Unicode word boundary)`);
      else if (/[\p{L}\p{N}]/u.test(next)) {
        // \p{..}, \n, \t, \uHHHH and friends mean the same in both engines.
        out += `\\${next}`;
      } else if (syntaxChars.has(next) || (inClass && next === '-')) out += `\\${next}`;
      else out += next;
      continue;
    }
    if (inClass) {
      if (c === ']') inClass = false;
      else if (c === '[') return refuse('nested character class');
      else if (caseless() && isCased(c)) {
        if (chars[i + 1] === '-' || chars[i - 1] === '-') {
          return refuse('case-insensitive character range');
        }
        out += caseFoldClassContents(c);
        continue;
      }
      out += c;
      continue;
    }
    switch (c) {
      case '[':
        inClass = true;
        out += c;
        if (chars[i + 1] === '^') {
          out += '^';
          i += 1;
        }
        if (chars[i + 1] === ']') {
          // A ']' first in a class is a literal in Oniguruma; JavaScript needs it escaped.
          out += '\\]';
          i += 1;
        }
        continue;
      case '(': {
        if (chars[i + 1] !== '?') {
          groups.push(caseless());
          out += c;
          continue;
        }
        const rest = chars.slice(i + 2, i + 4).join('');
        if (rest.startsWith(':') || rest.startsWith('=') || rest.startsWith('!')) {
          groups.push(caseless());
          out += '(?' + rest[0];
          i += 2;
        } else if (rest === '<=' || rest === '<!') {
          groups.push(caseless());
          out += '(?' + rest;
          i += 3;
        } else if (rest.startsWith('<')) {
          groups.push(caseless());
          out += '(?<';
          i += 2;
        } else if (rest === 'i:') {
          groups.push(true);
          out += '(?:';
          i += 3;
        } else if (rest.startsWith('>')) {
          return refuse('atomic group (?>…)');
        } else {
          return refuse(`inline flags (?${rest}…)`);
        }
        continue;
      }
      case ')':
        groups.pop();
        out += c;
        continue;
      case '+':
      case '*':
      case '?':
        if (chars[i + 1] === '+') return refuse('possessive quantifier');
        out += c;
        continue;
      default:
        out += caseless() && isCased(c) ? `[${caseFoldClassContents(c)}]` : c;
    }
  }
  if (inClass) return refuse('unterminated character class');
  return succeed(out);
}

function isCased(c: string): boolean {
  return c.toLowerCase() !== c.toUpperCase();
}

const foldCache = new Map<string, string>();

/**
 * Every BMP character that matches `c` under Unicode case-insensitive matching, as class
 * contents. Found by asking the engine itself (`/c/iu` uses Unicode simple case folding,
 * as Oniguruma does), so the answer follows the engine's Unicode tables.
 */
function caseFoldClassContents(c: string): string {
  const cached = foldCache.get(c);
  if (cached !== undefined) return cached;
  const probe = new RegExp(`^${c.replace(/[\\^$.*+?()[\]{}|/-]/g, '\\$&')}$`, 'iu');
  let contents = '';
  for (let code = 0; code <= 0xffff; code += 1) {
    if (code >= 0xd800 && code <= 0xdfff) continue;
    const candidate = String.fromCharCode(code);
    if (probe.test(candidate)) contents += `\\u{${code.toString(16)}}`;
  }
  foldCache.set(c, contents);
  return contents;
}
