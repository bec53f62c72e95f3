// A Hugging Face `tokenizer.json` tokenizer (BPE, byte-level or SentencePiece-style).
// Encoding runs the same pipeline as the Rust tokenizers library:
//
//   text ─ added tokens (raw) ─┬─ token ids ───────────────────────────────────┐
//                              └─ text ─ normalizer ─ added tokens (normalized) ┤
//                                          └─ text ─ pre-tokenizer ─ words ─ BPE ┴─ ids
//   ids ─ post-processor (BOS…, when addSpecialTokens) ─ result
//
// Decoding maps ids to token strings (added tokens first, then the model's vocab) and runs
// the decoder; decodeStream() does it incrementally for generation.

import type { AddedVocabulary } from './added-vocabulary.ts';
import type { BpeModel } from './bpe-model.ts';
import { ChatTemplate, type ChatMessage } from './chat-template/chat-template.ts';
import { DecodeStream, type DecodeStreamOptions } from './decode-stream.ts';
import type { Decoder } from './decoder.ts';
import type { Normalizer } from './normalizer.ts';
import type { SpecialTokenFrame } from './post-processor.ts';
import type { PreToken, PreTokenizer } from './pre-tokenizer.ts';
import type { SpecialTokenNames, TokenizerConfig } from './tokenizer-config.ts';
import { wellFormed } from './unicode-classes.ts';

const byteTokenPattern = /^<0x[0-9A-Fa-f]{2}>$/;
const utf8 = new TextEncoder();

export interface EncodeOptions {
  /** Add the post-processor's special tokens (BOS for Llama); default true. */
  readonly addSpecialTokens?: boolean;
}

export interface DecodeOptions {
  /** Leave out special tokens (BOS, EOS, <|eot_id|>…); default false. */
  readonly skipSpecialTokens?: boolean;
}

export interface ChatTemplateOptions {
  /** End with the header of an assistant turn, for the model to continue; default false. */
  readonly addGenerationPrompt?: boolean;
  /** Further template variables (tools, documents, date_string…). */
  readonly variables?: Readonly<Record<string, unknown>>;
}

export type ChatTemplateResult =
  { readonly ok: true; readonly text: string } | { readonly ok: false; readonly message: string };

export interface TokenizerParts {
  readonly model: BpeModel;
  readonly added: AddedVocabulary;
  readonly normalizer: Normalizer | null;
  readonly preTokenizer: PreTokenizer | null;
  readonly decoder: Decoder | null;
  readonly frame: SpecialTokenFrame;
  readonly config: TokenizerConfig;
  /**
   * Whether encoding can drop characters without a token standing for them (a Strip
   * normalizer, a pre-tokenizer that removes whitespace or matches, unknown characters
   * fused or dropped): then no count of tokens bounds the length of a text.
   */
  readonly dropsText: boolean;
}

/**
 * How many code points normalization (NFC, NFKC) can compose into one: a Hangul syllable from
 * its three jamo. The bound on a text's length allows for it.
 */
const maxComposedCodePoints = 3;

export class Tokenizer {
  readonly #parts: TokenizerParts;
  /** Ids 0 … vocabSize-1; every token has an id below it (some ids may have no token). */
  readonly vocabSize: number;
  readonly bosTokenId: number | undefined;
  /** Ids that end generation: the EOS token, then generation_config.json's extra ones. */
  readonly eosTokenIds: readonly number[];
  readonly specialTokens: SpecialTokenNames;
  #chatTemplate: ReturnType<typeof ChatTemplate.compile> | undefined;
  #maxTokenBytes: number | undefined;

  constructor(parts: TokenizerParts) {
    this.#parts = parts;
    let span = parts.model.idSpan;
    for (const token of parts.added.tokens) span = Math.max(span, token.id + 1);
    this.vocabSize = span;
    this.specialTokens = parts.config.specialTokens;
    const { bos, eos } = parts.config.specialTokens;
    this.bosTokenId = bos === undefined ? undefined : this.tokenId(bos);
    const eosIds: number[] = [];
    const eosId = eos === undefined ? undefined : this.tokenId(eos);
    for (const id of [eosId, ...parts.config.generationEosTokenIds]) {
      if (id !== undefined && !eosIds.includes(id)) eosIds.push(id);
    }
    this.eosTokenIds = eosIds;
  }

  /** The id of a token string (an added token, or one of the model's), if any. */
  tokenId(token: string): number | undefined {
    return this.#parts.added.byContent(token)?.id ?? this.#parts.model.tokenId(token);
  }

  /** The token string of an id, if any (a normalized added token's normalized form). */
  idToToken(id: number): string | undefined {
    return this.#parts.added.tokenText(id) ?? this.#parts.model.idToToken(id);
  }

  /** Whether the id is a special token (decode can skip these). */
  isSpecialId(id: number): boolean {
    const token = this.idToToken(id);
    return token !== undefined && this.#parts.added.isSpecial(token);
  }

  encode(text: string, options: EncodeOptions = {}): number[] {
    const { model, added, normalizer, preTokenizer, frame } = this.#parts;
    const ids: number[] = [];
    for (const raw of added.splitRaw(wellFormed(text))) {
      if (raw.id !== undefined) {
        ids.push(raw.id);
        continue;
      }
      const normalized = normalizer === null ? raw.text : normalizer(raw.text);
      for (const piece of added.splitNormalized(normalized)) {
        if (piece.id !== undefined) {
          ids.push(piece.id);
          continue;
        }
        const start: PreToken = {
          text: piece.text,
          atStart: raw.offset === 0 && piece.offset === 0,
        };
        const words = preTokenizer === null ? [start] : preTokenizer([start]);
        for (const word of words) model.tokenize(word.text, ids);
      }
    }
    if (options.addSpecialTokens === false) return ids;
    return [...frame.before, ...ids, ...frame.after];
  }

  /** Text of the ids; ids with no token are left out, as the Rust library does. */
  decode(ids: readonly number[], options: DecodeOptions = {}): string {
    const { added, decoder } = this.#parts;
    const tokens: string[] = [];
    for (const id of ids) {
      const token = this.idToToken(id);
      if (token === undefined) continue;
      if (options.skipSpecialTokens === true && added.isSpecial(token)) continue;
      tokens.push(token);
    }
    return decoder === null ? tokens.join(' ') : decoder.decode(tokens).join('');
  }

  /**
   * The token's own bytes where it stands within a text, as OpenAI's logprobs `bytes` give
   * them: a token holding part of a UTF-8 character has those bytes (its text alone decodes
   * to U+FFFD). Empty for an id with no token.
   */
  tokenBytes(id: number): number[] {
    const token = this.idToToken(id);
    if (token === undefined) return [];
    const decoder = this.#parts.decoder;
    return [...(decoder === null ? utf8.encode(token) : decoder.tokenBytes(token))];
  }

  /** The most bytes one token stands for: the longest token's own bytes (added ones' text). */
  get maxTokenBytes(): number {
    if (this.#maxTokenBytes === undefined) {
      let most = 0;
      for (let id = 0; id < this.vocabSize; id += 1)
        most = Math.max(most, this.tokenBytes(id).length);
      for (const token of this.#parts.added.tokens)
        most = Math.max(most, utf8.encode(token.content).length);
      this.#maxTokenBytes = most;
    }
    return this.#maxTokenBytes;
  }

  /**
   * The longest text (in UTF-16 units, `text.length`) that could encode to no more than
   * `tokens` tokens, so a longer one is known to need more without encoding it (which costs
   * about a second per 2 MB). Each token stands for at most maxTokenBytes bytes of the
   * normalized text, a UTF-16 unit is at least one of its bytes, and normalization composes
   * at most 3 code points into one. Infinity when encoding can drop text.
   */
  maxTextLength(tokens: number): number {
    if (this.#parts.dropsText) return Infinity;
    return tokens * this.maxTokenBytes * maxComposedCodePoints;
  }

  /** An incremental decoder for generated ids (see decode-stream.ts). */
  decodeStream(options: DecodeStreamOptions = {}): DecodeStream {
    const skipSpecialTokens = options.skipSpecialTokens === true;
    const decode = (ids: readonly number[]): string => this.decode(ids, { skipSpecialTokens });
    if (this.#parts.decoder?.byteFallback !== true)
      return new DecodeStream(decode, options.prefixIds);
    // Wait while the last token that decoding keeps is a byte token: its run may go on.
    const mustWait = (ids: readonly number[]): boolean => {
      for (let i = ids.length - 1; i >= 0; i -= 1) {
        const token = this.idToToken(ids[i] ?? -1);
        if (token === undefined || (skipSpecialTokens && this.#parts.added.isSpecial(token)))
          continue;
        return byteTokenPattern.test(token);
      }
      return false;
    };
    const isByteToken = (id: number): boolean => byteTokenPattern.test(this.idToToken(id) ?? '');
    return new DecodeStream(decode, options.prefixIds, mustWait, isByteToken);
  }

  /** Whether tokenizer_config.json provided a chat template. */
  get hasChatTemplate(): boolean {
    return this.#parts.config.chatTemplate !== undefined;
  }

  /**
   * The prompt text for a conversation, rendered by the model's chat template. The text
   * already holds the template's special tokens (BOS included for Llama), so encode it with
   * `addSpecialTokens: false`.
   */
  applyChatTemplate(
    messages: readonly ChatMessage[],
    options: ChatTemplateOptions = {},
  ): ChatTemplateResult {
    const source = this.#parts.config.chatTemplate;
    if (source === undefined) return { ok: false, message: 'the tokenizer has no chat template' };
    this.#chatTemplate ??= ChatTemplate.compile(source);
    if (!this.#chatTemplate.ok) return this.#chatTemplate;
    const { bos, eos, unk, pad } = this.specialTokens;
    return this.#chatTemplate.template.render({
      ...(bos === undefined ? {} : { bos_token: bos }),
      ...(eos === undefined ? {} : { eos_token: eos }),
      ...(unk === undefined ? {} : { unk_token: unk }),
      ...(pad === undefined ? {} : { pad_token: pad }),
      ...options.variables,
      messages,
      add_generation_prompt: options.addGenerationPrompt === true,
    });
  }
}
