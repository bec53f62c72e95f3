// Character classes with the meaning the Rust tokenizers library gives them. JavaScript's
// `\s` differs from Unicode White_Space (it adds U+FEFF and lacks U+0085) and its `\w` is
// ASCII-only, while Rust's regex crate and Oniguruma use the Unicode definitions; a
// tokenizer that splits differently on one character produces different ids.

/** Unicode White_Space, as class contents (usable inside `[...]`). */
export const whiteSpaceClass =
  '\\t\\n\\v\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000';

/** Unicode `\w` (UTS #18: Alphabetic, marks, decimal digits, connector punctuation). */
export const wordClass = '\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\p{Join_Control}';

const whiteSpaceChar = new RegExp(`^[${whiteSpaceClass}]$`, 'u');
const wordChar = new RegExp(`^[${wordClass}]$`, 'u');
const loneSurrogate = /[\uD800-\uDFFF]/gu;

/** Index where the run of white space that ends `text[0, end)` begins. */
export function whiteSpaceRunStart(text: string, end: number): number {
  // White_Space is all in the BMP: one code unit per character.
  let i = end;
  while (i > 0 && whiteSpaceChar.test(text[i - 1] ?? '')) i -= 1;
  return i;
}

/** Length of the run of white space that starts at `text[start]`. */
export function whiteSpaceRunLength(text: string, start: number): number {
  let i = start;
  while (i < text.length && whiteSpaceChar.test(text[i] ?? '')) i += 1;
  return i - start;
}

/** Whether the character starting at `text[index]` is a word character. */
export function isWordCharAt(text: string, index: number): boolean {
  const code = text.codePointAt(index);
  return code !== undefined && wordChar.test(String.fromCodePoint(code));
}

/** Whether the character that ends at `text[end - 1]` is a word character. */
export function isWordCharBefore(text: string, end: number): boolean {
  if (end <= 0) return false;
  const low = text.charCodeAt(end - 1);
  const isPair = low >= 0xdc00 && low <= 0xdfff && end >= 2;
  return isWordCharAt(text, isPair ? end - 2 : end - 1);
}

/**
 * Replaces lone surrogates with U+FFFD. A JavaScript string may hold them, a Rust string
 * cannot: this is what encoding to UTF-8 would do to them anyway, done once up front.
 */
export function wellFormed(text: string): string {
  return text.replace(loneSurrogate, '\uFFFD');
}
