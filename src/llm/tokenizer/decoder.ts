// Decoders from tokenizer.json: turn token strings back into text. Each step maps the list
// of token strings to a new list (the Rust library's decode_chain); the result is joined.
// Byte-level tokenizers use ByteLevel (symbols → bytes → UTF-8); SentencePiece-style ones
// use Sequence[Replace("▁", " "), ByteFallback, Fuse, Strip(" ", 1, 0)] or Metaspace.
//
// Invalid UTF-8 is replaced exactly as the Rust library does it, since streamed output is
// compared against whole-sequence output: ByteLevel decodes lossily (one U+FFFD per
// maximal invalid subpart, TextDecoder's rule too), ByteFallback writes one U+FFFD per byte
// of a run of `<0xNN>` tokens that is not valid UTF-8 as a whole.

import { byteLevelAlphabet } from './byte-level-alphabet.ts';
import { parsePrependScheme } from './pre-tokenizer.ts';
import { parseTextPattern } from './text-pattern.ts';
import {
  componentType,
  fail,
  isJsonObject,
  parseSequence,
  succeed,
  type TokenizerResult,
} from './tokenizer-result.ts';

export type DecoderStep = (tokens: string[]) => string[];

export interface Decoder {
  readonly decode: DecoderStep;
  /**
   * Whether a ByteFallback step is in the chain. Its output for a run of `<0xNN>` tokens
   * is only final when the run ends (one stray byte turns the whole run into U+FFFDs), so
   * incremental decoding holds text while the last token is a byte token.
   */
  readonly byteFallback: boolean;
  /**
   * A token's own bytes where it stands within a text (OpenAI's logprobs `bytes`): a
   * byte-level token's symbols as bytes, a `<0xNN>` token its byte, `▁` a space. Not its
   * text alone decoded, which turns a token holding part of a UTF-8 character into U+FFFD.
   */
  readonly tokenBytes: (token: string) => Uint8Array;
}

const utf8 = new TextEncoder();
const lossyUtf8 = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });
const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
const byteTokenPattern = /^<0x([0-9A-Fa-f]{2})>$/;

/** The decoder described by `json` (null: none), or the construct we do not support. */
export function parseDecoder(json: unknown): TokenizerResult<Decoder | null> {
  const step = parseStep(json);
  if (!step.ok || step.value === null) return step as TokenizerResult<null>;
  return succeed({
    decode: step.value,
    byteFallback: usesByteFallback(json),
    tokenBytes: tokenBytesOf(json),
  });
}

/** A token on its way through tokenBytes: text, or bytes once a step made it bytes. */
type TokenPiece = string | Uint8Array;

function flattenSteps(json: unknown): Record<string, unknown>[] {
  if (!isJsonObject(json)) return [];
  if (json.type === 'Sequence' && Array.isArray(json.decoders))
    return json.decoders.flatMap(flattenSteps);
  return [json];
}

/**
 * The decoder chain for one token in the middle of a text (`json` already parsed, so valid):
 * the steps that act on each token act on it; after a Fuse, a Strip trims the whole text's
 * ends, which a token within it does not reach; Metaspace drops its replacement only in the
 * text's first token.
 */
function tokenBytesOf(json: unknown): (token: string) => Uint8Array {
  const steps: ((piece: TokenPiece) => TokenPiece)[] = [];
  let fused = false;
  for (const step of flattenSteps(json)) {
    switch (step.type) {
      case 'ByteLevel':
        steps.push((piece) => (typeof piece === 'string' ? byteLevelBytes(piece) : piece));
        break;
      case 'Replace': {
        const regex = parseTextPattern(step.pattern, 'Replace decoder');
        const content = step.content;
        if (!regex.ok || typeof content !== 'string') break;
        steps.push((piece) =>
          typeof piece === 'string' ? piece.replace(regex.value, () => content) : piece,
        );
        break;
      }
      case 'ByteFallback':
        steps.push((piece) => {
          const m = typeof piece === 'string' ? byteTokenPattern.exec(piece) : null;
          return m === null ? piece : Uint8Array.of(Number.parseInt(m[1] ?? '', 16));
        });
        break;
      case 'Fuse':
        fused = true;
        break;
      case 'Strip': {
        const { content, start, stop } = step;
        if (fused || typeof content !== 'string' || !isCount(start) || !isCount(stop)) break;
        steps.push((piece) =>
          typeof piece === 'string' ? strip(piece, content, start, stop) : piece,
        );
        break;
      }
      case 'Metaspace': {
        const replacement = step.replacement;
        if (typeof replacement !== 'string') break;
        steps.push((piece) =>
          typeof piece === 'string' ? piece.replaceAll(replacement, ' ') : piece,
        );
        break;
      }
    }
  }
  return (token) => {
    let piece: TokenPiece = token;
    for (const step of steps) piece = step(piece);
    return typeof piece === 'string' ? utf8.encode(piece) : piece;
  };
}

/** A byte-level token's bytes; a token with any other character is its own UTF-8. */
function byteLevelBytes(token: string): Uint8Array {
  const mapped: number[] = [];
  for (const char of token) {
    const b = byteLevelAlphabet.charToByte.get(char);
    if (b === undefined) return utf8.encode(token);
    mapped.push(b);
  }
  return Uint8Array.from(mapped);
}

function usesByteFallback(json: unknown): boolean {
  if (!isJsonObject(json)) return false;
  if (json.type === 'ByteFallback') return true;
  return (
    json.type === 'Sequence' && Array.isArray(json.decoders) && json.decoders.some(usesByteFallback)
  );
}

function parseStep(json: unknown): TokenizerResult<DecoderStep | null> {
  if (json === null || json === undefined) return succeed(null);
  if (!isJsonObject(json)) return fail('decoder must be an object or null');
  const type = componentType(json);
  switch (type) {
    case 'Sequence':
      return parseSequence<string[]>(json.decoders, 'decoders', 'decoder', parseStep);
    case 'ByteLevel':
      return succeed(decodeByteLevel);
    case 'Replace': {
      const regex = parseTextPattern(json.pattern, 'Replace decoder');
      if (!regex.ok) return regex;
      const content = json.content;
      if (typeof content !== 'string') return fail('Replace decoder: "content" must be a string');
      return succeed((tokens) => tokens.map((t) => t.replace(regex.value, () => content)));
    }
    case 'ByteFallback':
      return succeed(decodeByteFallback);
    case 'Fuse':
      return succeed((tokens) => [tokens.join('')]);
    case 'Strip': {
      const { content, start, stop } = json;
      if (typeof content !== 'string' || Array.from(content).length !== 1) {
        return fail('Strip decoder: "content" must be one character');
      }
      if (!isCount(start) || !isCount(stop)) {
        return fail('Strip decoder: "start" and "stop" must be non-negative integers');
      }
      return succeed((tokens) => tokens.map((t) => strip(t, content, start, stop)));
    }
    case 'Metaspace': {
      const replacement = json.replacement;
      if (typeof replacement !== 'string' || Array.from(replacement).length !== 1) {
        return fail('Metaspace decoder: "replacement" must be one character');
      }
      const scheme = parsePrependScheme(json);
      if (!scheme.ok) return scheme;
      const stripFirst = scheme.value !== 'never';
      // Every replacement character becomes a space, except in the first token, where they
      // are dropped (the space the pre-tokenizer prepended).
      return succeed((tokens) =>
        tokens.map((t, i) => t.replaceAll(replacement, i === 0 && stripFirst ? '' : ' ')),
      );
    }
    default:
      return fail(`unsupported decoder type: ${type}`);
  }
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0;
}

/** Byte-level symbols back to bytes; a token with any other character keeps its own UTF-8. */
function decodeByteLevel(tokens: string[]): string[] {
  const bytes: number[] = [];
  for (const token of tokens) bytes.push(...byteLevelBytes(token));
  return [lossyUtf8.decode(new Uint8Array(bytes))];
}

/** Runs of `<0xNN>` tokens become the text their bytes spell. */
function decodeByteFallback(tokens: string[]): string[] {
  const out: string[] = [];
  let pending: number[] = [];
  const flush = (): void => {
    if (pending.length === 0) return;
    try {
      out.push(strictUtf8.decode(new Uint8Array(pending)));
    } catch {
      for (let i = 0; i < pending.length; i += 1) out.push('\uFFFD');
    }
    pending = [];
  };
  for (const token of tokens) {
    const m = byteTokenPattern.exec(token);
    if (m !== null) {
      pending.push(Number.parseInt(m[1] ?? '', 16));
      continue;
    }
    flush();
    out.push(token);
  }
  flush();
  return out;
}

/** Removes up to `start` leading and `stop` trailing copies of `content` (one character). */
function strip(token: string, content: string, start: number, stop: number): string {
  const chars = Array.from(token);
  let from = 0;
  while (from < Math.min(start, chars.length) && chars[from] === content) from += 1;
  let to = chars.length;
  for (let i = 0; i < stop && to > from && chars[to - 1] === content; i += 1) to -= 1;
  return chars.slice(from, to).join('');
}
