// Small hand-written tokenizer.json objects for unit tests, one per tokenizer family. Their
// expected encodings in the tests were checked against the Rust tokenizers library (0.23)
// loading these same objects; they are small enough to follow by hand too.

import { byteLevelAlphabet } from '../../../src/llm/tokenizer/byte-level-alphabet.ts';
import { byteToken } from '../../../src/llm/tokenizer/bpe-model.ts';

const b = (char: string): string => {
  // The byte-level symbol of a one-byte character ('Ġ' for ' ').
  return byteLevelAlphabet.byteToChar[char.charCodeAt(0)] ?? '';
};

/** A special or plain added token as tokenizer.json writes it. */
export function addedToken(
  id: number,
  content: string,
  flags: {
    special?: boolean;
    lstrip?: boolean;
    rstrip?: boolean;
    singleWord?: boolean;
    normalized?: boolean;
  } = {},
): Record<string, unknown> {
  const special = flags.special ?? false;
  return {
    id,
    content,
    single_word: flags.singleWord ?? false,
    lstrip: flags.lstrip ?? false,
    rstrip: flags.rstrip ?? false,
    normalized: flags.normalized ?? !special,
    special,
  };
}

/** Ids of the byte-level tokenizer: bytes 0-255, merged tokens 256-272, then added tokens. */
export const byteLevelIds = { bos: 273, eos: 274, firstFreeId: 275 } as const;

/**
 * Byte-level BPE, GPT-2 style. Ids 0-255: the byte symbols in byte order ('Ġ' = 32);
 * merged tokens from 256; added tokens right after the vocab, as real files number them.
 */
export function byteLevelJson(
  options: {
    mergesAsArrays?: boolean;
    llama3Split?: boolean;
    ignoreMerges?: boolean;
    added?: unknown[];
  } = {},
): Record<string, unknown> {
  const vocab: Record<string, number> = {};
  byteLevelAlphabet.byteToChar.forEach((char, byte) => {
    vocab[char] = byte;
  });
  const pairs: Array<[string, string]> = [
    [b(' '), 't'], // 256 Ġt
    ['h', 'e'], // 257 he
    [b(' ') + 't', 'he'], // 258 Ġthe
    ['l', 'l'], // 259 ll
    ['e', 'll'], // 260 ell
    ['H', 'ell'], // 261 Hell
    ['Hell', 'o'], // 262 Hello
    [b(' '), 'w'], // 263 Ġw
    ['o', 'r'], // 264 or
    [b(' ') + 'w', 'or'], // 265 Ġwor
    ['l', 'd'], // 266 ld
    [b(' ') + 'wor', 'ld'], // 267 Ġworld
    ["'", 's'], // 268 's
    ['ð', 'Ł'], // 269: the first two bytes of U+1F389 🎉 (F0 9F)
    ['ðŁ', 'İ'], // 270: F0 9F 8E
    ['ðŁİ', 'ī'], // 271 🎉 (F0 9F 8E 89)
  ];
  let next = 256;
  for (const [left, right] of pairs) vocab[left + right] = next++;
  // Reachable only without merges (ignore_merges): "xyz" has no merge path.
  vocab.xyz = next++;
  return {
    version: '1.0',
    added_tokens: options.added ?? [
      addedToken(byteLevelIds.bos, '<|begin_of_text|>', { special: true }),
      addedToken(byteLevelIds.eos, '<|end_of_text|>', { special: true }),
    ],
    normalizer: null,
    pre_tokenizer: options.llama3Split
      ? {
          type: 'Sequence',
          pretokenizers: [
            {
              type: 'Split',
              pattern: {
                Regex:
                  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
              },
              behavior: 'Isolated',
              invert: false,
            },
            { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: false },
          ],
        }
      : { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
    post_processor: {
      type: 'Sequence',
      processors: [
        { type: 'ByteLevel', add_prefix_space: true, trim_offsets: false, use_regex: true },
        {
          type: 'TemplateProcessing',
          single: [
            { SpecialToken: { id: '<|begin_of_text|>', type_id: 0 } },
            { Sequence: { id: 'A', type_id: 0 } },
          ],
          pair: [],
          special_tokens: {
            '<|begin_of_text|>': {
              id: '<|begin_of_text|>',
              ids: [byteLevelIds.bos],
              tokens: ['<|begin_of_text|>'],
            },
          },
        },
      ],
    },
    decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: options.ignoreMerges ?? false,
      vocab,
      merges: pairs.map(([l, r]) => (options.mergesAsArrays ? [l, r] : `${l} ${r}`)),
    },
  };
}

/** Ids of the SentencePiece-style tokenizer; pieces end at 282. */
export const sentencePieceIds = { unk: 0, bos: 1, eos: 2, firstFreeId: 283 } as const;

/**
 * SentencePiece-style BPE as Llama-2 ships it: <unk> 0, <s> 1, </s> 2, the 256 byte tokens
 * <0x00>… at 3-258, then pieces. `style: 'normalizer'` is Llama-2's current form
 * (Prepend + Replace, Replace/ByteFallback/Fuse/Strip decoder); 'metaspace' the older
 * Metaspace pre-tokenizer and decoder.
 */
export function sentencePieceJson(
  options: {
    style?: 'normalizer' | 'metaspace';
    metaspace?: Record<string, unknown>;
    fuseUnk?: boolean;
    byteFallback?: boolean;
    added?: unknown[];
  } = {},
): Record<string, unknown> {
  const vocab: Record<string, number> = { '<unk>': 0, '<s>': 1, '</s>': 2 };
  for (let byte = 0; byte < 256; byte += 1) vocab[byteToken(byte)] = 3 + byte;
  // Single characters first (259-…), then merged pieces.
  const chars = ['▁', 'H', 'e', 'l', 'o', 'w', 'r', 'd', 'a', 'b', 'c', ',', 'é'];
  let next = 259;
  for (const c of chars) vocab[c] = next++;
  const pairs: Array<[string, string]> = [
    ['l', 'l'], // ll
    ['e', 'll'], // ell
    ['H', 'ell'], // Hell
    ['Hell', 'o'], // Hello
    ['▁', 'Hello'], // ▁Hello
    ['▁', 'w'], // ▁w
    ['o', 'r'], // or
    ['▁w', 'or'], // ▁wor
    ['l', 'd'], // ld
    ['▁wor', 'ld'], // ▁world
    ['▁', '▁'], // ▁▁
  ];
  for (const [left, right] of pairs) vocab[left + right] = next++;
  const metaspace = {
    type: 'Metaspace',
    replacement: '▁',
    ...(options.metaspace ?? { prepend_scheme: 'first', split: false }),
  };
  const normalizerStyle = (options.style ?? 'normalizer') === 'normalizer';
  return {
    version: '1.0',
    added_tokens: options.added ?? [
      addedToken(0, '<unk>', { special: true }),
      addedToken(1, '<s>', { special: true }),
      addedToken(2, '</s>', { special: true }),
    ],
    normalizer: normalizerStyle
      ? {
          type: 'Sequence',
          normalizers: [
            { type: 'Prepend', prepend: '▁' },
            { type: 'Replace', pattern: { String: ' ' }, content: '▁' },
          ],
        }
      : null,
    pre_tokenizer: normalizerStyle ? null : metaspace,
    post_processor: {
      type: 'TemplateProcessing',
      single: [{ SpecialToken: { id: '<s>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
      pair: [],
      special_tokens: { '<s>': { id: '<s>', ids: [1], tokens: ['<s>'] } },
    },
    decoder: normalizerStyle
      ? {
          type: 'Sequence',
          decoders: [
            { type: 'Replace', pattern: { String: '▁' }, content: ' ' },
            { type: 'ByteFallback' },
            { type: 'Fuse' },
            { type: 'Strip', content: ' ', start: 1, stop: 0 },
          ],
        }
      : metaspace,
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: '<unk>',
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: options.fuseUnk ?? true,
      byte_fallback: options.byteFallback ?? true,
      ignore_merges: false,
      vocab,
      merges: pairs.map(([l, r]) => `${l} ${r}`),
    },
  };
}
