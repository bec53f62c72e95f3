// Incremental detokenization: ids arrive one at a time (generation), text leaves as deltas
// whose concatenation equals decoding all the ids at once. Same scheme as the Rust library's
// DecodeStream and vLLM's detokenizer: keep a short window of recent ids, decode the window
// with and without the new id, and emit the difference.
//
//   ids:     … a  b | c  d | e          window = ids from `prefixStart` on
//                   ^ prefixStart       prefixText = decode(window minus the unemitted tail)
//   push(e): text = decode([c, d, e]); emit text.slice(prefixText.length)
//
// Decoding a window rather than a single id matters twice: a SentencePiece decoder strips
// the space of the *first* token (so "▁world" alone decodes to "world", but after "▁Hello"
// to " world"), and a character split over several byte tokens only decodes once all its
// bytes are there. While the window's text ends in U+FFFD (an incomplete character, so far)
// nothing is emitted: bytes are held until the character completes, and `flush()` gives out
// whatever is still held (as U+FFFD, as whole-sequence decoding would) at the end. With a
// ByteFallback decoder, a run of `<0xNN>` tokens is also held until a token that is not a
// byte ends it, since one invalid byte turns the whole run into U+FFFDs.

export interface DecodeStreamOptions {
  /** Leave special tokens out of the text (default false, as in `decode`). */
  readonly skipSpecialTokens?: boolean;
  /**
   * Ids already in the sequence before the first pushed one (the prompt). Their text is not
   * emitted; they give the first generated tokens the context they decode in (a leading
   * '▁' is then a space, not stripped).
   */
  readonly prefixIds?: readonly number[];
}

/** How many prompt ids to keep as context: enough for any pending multi-byte character. */
const prefixContextIds = 6;

export class DecodeStream {
  readonly #decode: (ids: readonly number[]) => string;
  readonly #mustWait: (ids: readonly number[]) => boolean;
  /** Recent ids: [prefixStart, readStart) are decoded context, [readStart, end) unemitted. */
  #ids: number[];
  #readStart: number;
  #prefixText: string;

  /**
   * `mustWait(ids)`: whether the text of the ids so far may still change with the next id
   * (it ends in a SentencePiece byte token: see decoder.ts).
   */
  constructor(
    decode: (ids: readonly number[]) => string,
    prefixIds: readonly number[] = [],
    mustWait: (ids: readonly number[]) => boolean = () => false,
    /** Whether an id is a `<0xNN>` byte token (ByteFallback decoders; else never). */
    isByteToken: (id: number) => boolean = () => false,
  ) {
    this.#decode = decode;
    this.#mustWait = mustWait;
    // The context never starts inside a run of byte tokens: decoded without its first
    // bytes, the run (and whatever generation adds to it) would come out as U+FFFDs.
    let start = Math.max(0, prefixIds.length - prefixContextIds);
    while (start > 0 && isByteToken(prefixIds[start]!) && isByteToken(prefixIds[start - 1]!))
      start -= 1;
    this.#ids = prefixIds.slice(start);
    this.#readStart = this.#ids.length;
    this.#prefixText = decode(this.#ids);
  }

  /** Adds one id; returns the text it completes ('' while a character is incomplete). */
  push(id: number): string {
    this.#ids.push(id);
    if (this.#mustWait(this.#ids)) return '';
    const text = this.#decode(this.#ids);
    if (text.length <= this.#prefixText.length || text.endsWith('\uFFFD')) return '';
    return this.#emit(text);
  }

  /** Emits whatever is still held (an incomplete character decodes as U+FFFD). */
  flush(): string {
    if (this.#readStart === this.#ids.length) return '';
    const text = this.#decode(this.#ids);
    return this.#emit(text);
  }

  #emit(text: string): string {
    const delta = text.slice(commonPrefixLength(text, this.#prefixText));
    // The ids emitted before this step become the new context; later ids decode after them.
    this.#ids = this.#ids.slice(this.#readStart);
    this.#readStart = this.#ids.length;
    this.#prefixText = this.#decode(this.#ids);
    return delta;
  }
}

/**
 * Length of the shared start of two strings. Normally `text` extends `prefix` and this is
 * `prefix.length`; it is shorter only when the context itself ended in an incomplete
 * character (a prompt cut inside one), whose U+FFFD is then replaced by the completed text.
 * Never splits a surrogate pair.
 */
function commonPrefixLength(text: string, prefix: string): number {
  if (text.startsWith(prefix)) return prefix.length;
  let i = 0;
  while (i < prefix.length && i < text.length && text[i] === prefix[i]) i += 1;
  if (i > 0 && i < text.length) {
    const code = text.charCodeAt(i);
    if (code >= 0xdc00 && code <= 0xdfff) i -= 1;
  }
  return i;
}
