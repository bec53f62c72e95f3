// A Hugging Face tokenizer.json → llama.cpp's tokenizer metadata (tokenizer.ggml.*), as
// llama.cpp's convert_hf_to_gguf.py writes it for byte-level BPE tokenizers and as
// llama-vocab.cpp reads it back:
//
//   tokenizer.ggml.model       "gpt2" (byte-level BPE: tokens are in GPT-2's byte alphabet)
//   tokenizer.ggml.pre         the split regex by name: "gpt-2" for ByteLevel's own regex,
//                              "llama-bpe" for a Split pre-tokenizer with Llama-3's regex
//   tokenizer.ggml.tokens      one string a token id, vocab_size of them; ids the tokenizer
//                              does not name become "[PAD<id>]", typed unused
//   tokenizer.ggml.token_type  normal, control (special added tokens), user-defined (others)
//   tokenizer.ggml.merges      "left right", in rank order
//   tokenizer.ggml.bos_token_id / eos_token_id / add_bos_token, tokenizer.chat_template
//
// SentencePiece-style BPE (Metaspace, <0xNN> byte fallback) would map to "llama" with scores;
// it is refused by name rather than written wrong.

import { gpt2SplitPattern } from '../tokenizer/pre-tokenizer.ts';
import { ggufTokenTypes, type GgufValue } from './gguf-format.ts';

export type GgufTokenizerResult =
  | { readonly ok: true; readonly metadata: Map<string, GgufValue> }
  | { readonly ok: false; readonly message: string };

/** The Split regex of Llama-3's tokenizer.json (llama.cpp's "llama-bpe" pre-tokenizer). */
const llama3SplitPattern =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** llama.cpp's name for the pre-tokenizer's split regex, or why there is none. */
function preTokenizerName(preTokenizer: unknown): string | { why: string } {
  if (!isObject(preTokenizer)) return { why: 'no pre_tokenizer (not a byte-level BPE)' };
  if (preTokenizer['type'] === 'ByteLevel') {
    // llama.cpp's BPE tokenizers never put a space in front of the text.
    if (preTokenizer['add_prefix_space'] === true) {
      return { why: 'ByteLevel add_prefix_space has no llama.cpp equivalent for BPE' };
    }
    return preTokenizer['use_regex'] === false
      ? { why: 'a ByteLevel pre_tokenizer without its regex has no llama.cpp equivalent' }
      : 'gpt-2';
  }
  if (preTokenizer['type'] === 'Sequence' && Array.isArray(preTokenizer['pretokenizers'])) {
    const parts = preTokenizer['pretokenizers'] as unknown[];
    const split = parts.find((p) => isObject(p) && p['type'] === 'Split');
    const byteLevel = parts.find((p) => isObject(p) && p['type'] === 'ByteLevel');
    if (parts.length === 2 && isObject(split) && isObject(byteLevel)) {
      const pattern = isObject(split['pattern']) ? split['pattern']['Regex'] : undefined;
      if (pattern === llama3SplitPattern) return 'llama-bpe';
      if (pattern === gpt2SplitPattern) return 'gpt-2';
      return { why: `a Split pre_tokenizer regex llama.cpp has no name for: ${String(pattern)}` };
    }
  }
  return {
    why: `pre_tokenizer ${JSON.stringify(preTokenizer).slice(0, 80)} is not byte-level BPE`,
  };
}

/** Whether the post-processor (or tokenizer_config) puts BOS in front of every encoding. */
function addsBos(tokenizer: Json, tokenizerConfig: Json | undefined, bos: number | null): boolean {
  if (typeof tokenizerConfig?.['add_bos_token'] === 'boolean')
    return tokenizerConfig['add_bos_token'];
  const processors = (post: unknown): unknown[] =>
    isObject(post) && post['type'] === 'Sequence' && Array.isArray(post['processors'])
      ? (post['processors'] as unknown[])
      : [post];
  for (const processor of processors(tokenizer['post_processor'])) {
    if (!isObject(processor) || processor['type'] !== 'TemplateProcessing') continue;
    const first = Array.isArray(processor['single'])
      ? (processor['single'] as unknown[])[0]
      : undefined;
    const special = isObject(first) ? first['SpecialToken'] : undefined;
    const table = processor['special_tokens'];
    if (!isObject(special) || !isObject(table)) continue;
    const entry = table[String(special['id'])];
    const ids = isObject(entry) ? entry['ids'] : undefined;
    return Array.isArray(ids) && ids.length === 1 && ids[0] === bos;
  }
  return false;
}

export interface GgufTokenizerInputs {
  /** tokenizer.json, parsed. */
  readonly tokenizer: unknown;
  /** tokenizer_config.json, parsed, when the folder has one. */
  readonly tokenizerConfig?: unknown;
  /** config.json's vocab_size: the embedding rows, possibly more than the tokenizer names. */
  readonly vocabSize: number;
  readonly bosTokenId: number | null;
  readonly eosTokenIds: readonly number[];
}

export function ggufTokenizerMetadata(inputs: GgufTokenizerInputs): GgufTokenizerResult {
  const fail = (why: string): GgufTokenizerResult => ({
    ok: false,
    message: `tokenizer.json: ${why}; the GGUF converter writes byte-level BPE tokenizers only`,
  });
  const { tokenizer, vocabSize } = inputs;
  if (!isObject(tokenizer) || !isObject(tokenizer['model'])) return fail('no "model" object');
  const model = tokenizer['model'];
  if (model['type'] !== 'BPE') return fail(`model type ${String(model['type'])}, not BPE`);
  if (model['byte_fallback'] === true) return fail('byte_fallback is SentencePiece-style BPE');
  const pre = preTokenizerName(tokenizer['pre_tokenizer']);
  if (typeof pre !== 'string') return fail(pre.why);
  if (!isObject(model['vocab']) || !Array.isArray(model['merges'])) {
    return fail('model.vocab or model.merges missing');
  }

  const tokens = Array.from({ length: vocabSize }, (_, id) => `[PAD${id}]`);
  const types: number[] = new Array<number>(vocabSize).fill(ggufTokenTypes.unused);
  for (const [text, id] of Object.entries(model['vocab'])) {
    if (typeof id !== 'number' || !Number.isInteger(id) || id < 0 || id >= vocabSize) {
      return fail(
        `token ${JSON.stringify(text)} has id ${String(id)}, outside vocab_size ${vocabSize}`,
      );
    }
    tokens[id] = text;
    types[id] = ggufTokenTypes.normal;
  }
  const added = Array.isArray(tokenizer['added_tokens'])
    ? (tokenizer['added_tokens'] as unknown[])
    : [];
  for (const entry of added) {
    if (!isObject(entry) || typeof entry['id'] !== 'number' || typeof entry['content'] !== 'string')
      continue;
    const id = entry['id'];
    if (id < 0 || id >= vocabSize)
      return fail(`added token id ${id} outside vocab_size ${vocabSize}`);
    tokens[id] = entry['content'];
    types[id] = entry['special'] === true ? ggufTokenTypes.control : ggufTokenTypes.userDefined;
  }
  const merges: string[] = [];
  for (const merge of model['merges'] as unknown[]) {
    if (typeof merge === 'string') merges.push(merge);
    else if (Array.isArray(merge) && merge.length === 2)
      merges.push(`${String(merge[0])} ${String(merge[1])}`);
    else return fail(`merge ${JSON.stringify(merge)} is neither "a b" nor ["a", "b"]`);
  }

  const tokenizerConfig = isObject(inputs.tokenizerConfig) ? inputs.tokenizerConfig : undefined;
  const metadata = new Map<string, GgufValue>([
    ['tokenizer.ggml.model', { type: 'string', value: 'gpt2' }],
    ['tokenizer.ggml.pre', { type: 'string', value: pre }],
    ['tokenizer.ggml.tokens', { type: 'array', itemType: 'string', value: tokens }],
    ['tokenizer.ggml.token_type', { type: 'array', itemType: 'int32', value: types }],
    ['tokenizer.ggml.merges', { type: 'array', itemType: 'string', value: merges }],
  ]);
  if (inputs.bosTokenId !== null) {
    metadata.set('tokenizer.ggml.bos_token_id', { type: 'uint32', value: inputs.bosTokenId });
  }
  const eos = inputs.eosTokenIds[0];
  if (eos !== undefined)
    metadata.set('tokenizer.ggml.eos_token_id', { type: 'uint32', value: eos });
  metadata.set('tokenizer.ggml.add_bos_token', {
    type: 'bool',
    value: addsBos(tokenizer, tokenizerConfig, inputs.bosTokenId),
  });
  const template = tokenizerConfig?.['chat_template'];
  if (typeof template === 'string') {
    metadata.set('tokenizer.chat_template', { type: 'string', value: template });
  }
  return { ok: true, metadata };
}
