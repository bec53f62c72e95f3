// Normalizers from tokenizer.json: string → string, applied to each piece of input text that
// is not an added token. The SentencePiece-style Llama tokenizers use
// Sequence[Prepend("▁"), Replace(" ", "▁")]; the byte-level ones have none (null).

import { whiteSpaceClass, whiteSpaceRunStart } from './unicode-classes.ts';
import { parseTextPattern } from './text-pattern.ts';
import {
  componentType,
  fail,
  isJsonObject,
  parseSequence,
  succeed,
  type TokenizerResult,
} from './tokenizer-result.ts';

export type Normalizer = (text: string) => string;

const leadingSpace = new RegExp(`^[${whiteSpaceClass}]+`, 'u');

/** The normalizer described by `json` (null: none), or the construct we do not support. */
export function parseNormalizer(json: unknown): TokenizerResult<Normalizer | null> {
  if (json === null || json === undefined) return succeed(null);
  if (!isJsonObject(json)) return fail('normalizer must be an object or null');
  const type = componentType(json);
  switch (type) {
    case 'Sequence':
      return parseSequence<string>(json.normalizers, 'normalizers', 'normalizer', parseNormalizer);
    case 'Prepend': {
      const prefix = json.prepend;
      if (typeof prefix !== 'string') return fail('Prepend normalizer: "prepend" must be a string');
      // The Rust library leaves an empty piece empty.
      return succeed((text) => (text.length === 0 ? text : prefix + text));
    }
    case 'Replace': {
      const regex = parseTextPattern(json.pattern, 'Replace normalizer');
      if (!regex.ok) return regex;
      const content = json.content;
      if (typeof content !== 'string')
        return fail('Replace normalizer: "content" must be a string');
      return succeed((text) => text.replace(regex.value, () => content));
    }
    case 'NFC':
    case 'NFD':
    case 'NFKC':
    case 'NFKD':
      return succeed((text) => text.normalize(type));
    case 'Lowercase':
      return succeed((text) => text.toLowerCase());
    case 'Strip': {
      const left = json.strip_left !== false;
      const right = json.strip_right !== false;
      return succeed((text) => {
        let out = left ? text.replace(leadingSpace, '') : text;
        // Not a `[…]+$` regex: it retries from every space of a long run (quadratic).
        if (right) out = out.slice(0, whiteSpaceRunStart(out, out.length));
        return out;
      });
    }
    default:
      return fail(`unsupported normalizer type: ${type}`);
  }
}
