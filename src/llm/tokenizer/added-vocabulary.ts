// Added tokens (tokenizer.json's `added_tokens`): strings such as `<s>`, `<|eot_id|>` or
// user-added words that are cut out of the input before the model sees it, each becoming
// its own id. As in the Rust library, tokens with `normalized: false` (most special tokens)
// are matched in the raw input; those with `normalized: true` are matched, in their
// normalized form, in each normalized remaining piece. Matching is leftmost-longest and
// non-overlapping; `single_word` rejects a match glued to a word character, `lstrip` /
// `rstrip` swallow the white space beside the match.

import type { Normalizer } from './normalizer.ts';
import {
  isWordCharAt,
  isWordCharBefore,
  whiteSpaceRunLength,
  whiteSpaceRunStart,
} from './unicode-classes.ts';
import { fail, isJsonObject, succeed, type TokenizerResult } from './tokenizer-result.ts';

export interface AddedToken {
  readonly id: number;
  readonly content: string;
  readonly singleWord: boolean;
  readonly lstrip: boolean;
  readonly rstrip: boolean;
  readonly normalized: boolean;
  readonly special: boolean;
}

/** A piece of the input: an added token's id, or text still to tokenize. */
export interface AddedSplit {
  readonly text: string;
  /** The added token's id; undefined for text still to tokenize. */
  readonly id: number | undefined;
  /** UTF-16 offset of the piece in the string that was split. */
  readonly offset: number;
}

/** Patterns to find: token text (as matched) → the token, grouped by first code unit. */
class Matcher {
  readonly #byFirst = new Map<string, Array<{ pattern: string; token: AddedToken }>>();

  add(pattern: string, token: AddedToken): void {
    if (pattern.length === 0) return;
    const first = pattern[0] ?? '';
    const list = this.#byFirst.get(first) ?? [];
    // First occurrence of a pattern wins; the longest candidates are tried first.
    if (!list.some((entry) => entry.pattern === pattern)) list.push({ pattern, token });
    list.sort((a, b) => b.pattern.length - a.pattern.length);
    this.#byFirst.set(first, list);
  }

  get empty(): boolean {
    return this.#byFirst.size === 0;
  }

  /** The leftmost-longest match starting at or after `from`. */
  find(text: string, from: number): { start: number; end: number; token: AddedToken } | null {
    for (let i = from; i < text.length; i += 1) {
      const candidates = this.#byFirst.get(text[i] ?? '');
      if (candidates === undefined) continue;
      for (const { pattern, token } of candidates) {
        if (text.startsWith(pattern, i)) return { start: i, end: i + pattern.length, token };
      }
    }
    return null;
  }
}

export class AddedVocabulary {
  readonly #byId = new Map<number, AddedToken>();
  readonly #byContent = new Map<string, AddedToken>();
  readonly #specialContents = new Set<string>();
  /** id → the text decoding starts from (see tokenText). */
  readonly #decodeForms = new Map<number, string>();
  readonly #raw = new Matcher();
  readonly #normalized = new Matcher();

  private constructor(tokens: readonly AddedToken[], normalizer: Normalizer | null) {
    // Special tokens are matched before the others, as the Rust library orders them.
    const ordered = [...tokens.filter((t) => t.special), ...tokens.filter((t) => !t.special)];
    for (const token of tokens) {
      this.#byId.set(token.id, token);
      this.#byContent.set(token.content, token);
      if (token.special) this.#specialContents.add(token.content);
    }
    for (const token of ordered) {
      if (token.normalized) {
        const form = normalizer === null ? token.content : normalizer(token.content);
        this.#normalized.add(form, token);
        this.#decodeForms.set(token.id, form);
      } else {
        this.#raw.add(token.content, token);
      }
    }
  }

  static parse(json: unknown, normalizer: Normalizer | null): TokenizerResult<AddedVocabulary> {
    if (json === undefined || json === null) return succeed(new AddedVocabulary([], normalizer));
    if (!Array.isArray(json)) return fail('added_tokens must be an array');
    const tokens: AddedToken[] = [];
    for (const [i, item] of (json as unknown[]).entries()) {
      if (!isJsonObject(item)) return fail(`added_tokens[${i}] must be an object`);
      const { id, content } = item;
      if (typeof id !== 'number' || !Number.isInteger(id) || id < 0) {
        return fail(`added_tokens[${i}]: "id" must be a non-negative integer`);
      }
      if (typeof content !== 'string' || content.length === 0) {
        return fail(`added_tokens[${i}]: "content" must be a non-empty string`);
      }
      const special = item.special === true;
      tokens.push({
        id,
        content,
        singleWord: item.single_word === true,
        lstrip: item.lstrip === true,
        rstrip: item.rstrip === true,
        // Special tokens default to matching the raw text, others the normalized text.
        normalized: typeof item.normalized === 'boolean' ? item.normalized : !special,
        special,
      });
    }
    return succeed(new AddedVocabulary(tokens, normalizer));
  }

  get tokens(): IterableIterator<AddedToken> {
    return this.#byId.values();
  }

  byId(id: number): AddedToken | undefined {
    return this.#byId.get(id);
  }

  byContent(content: string): AddedToken | undefined {
    return this.#byContent.get(content);
  }

  /**
   * The token string decoding starts from: a normalized token's normalized form (so the
   * decoder undoes the normalizer: Llama's "wor" is matched as "▁wor" and decodes to
   * " wor"), else its content. The Rust library does this since version 0.22.
   */
  tokenText(id: number): string | undefined {
    return this.#decodeForms.get(id) ?? this.#byId.get(id)?.content;
  }

  /** Whether `content` is a special token's text (decode skips these on request). */
  isSpecial(content: string): boolean {
    return this.#specialContents.has(content);
  }

  /** Splits raw input on the added tokens that match raw text. */
  splitRaw(text: string): AddedSplit[] {
    return split(text, this.#raw);
  }

  /** Splits an already normalized piece on the added tokens that match normalized text. */
  splitNormalized(text: string): AddedSplit[] {
    return split(text, this.#normalized);
  }
}

function split(text: string, matcher: Matcher): AddedSplit[] {
  if (matcher.empty) return text.length === 0 ? [] : [{ text, id: undefined, offset: 0 }];
  const out: AddedSplit[] = [];
  let done = 0;
  let from = 0;
  for (;;) {
    const match = matcher.find(text, from);
    if (match === null) break;
    from = match.end;
    const { token } = match;
    let { start, end } = match;
    if (token.singleWord) {
      const alone = !isWordCharBefore(text, start) && !isWordCharAt(text, end);
      if (!alone) continue;
    }
    if (token.lstrip) {
      // Spaces already taken by the previous match (its rstrip) stay with it.
      start = Math.max(whiteSpaceRunStart(text, start), done);
    }
    if (token.rstrip) end += whiteSpaceRunLength(text, end);
    if (start > done) out.push({ text: text.slice(done, start), id: undefined, offset: done });
    out.push({ text: text.slice(start, end), id: token.id, offset: start });
    done = end;
  }
  if (done < text.length) out.push({ text: text.slice(done), id: undefined, offset: done });
  return out;
}
