// The BPE model: turns one pre-tokenized word into ids by starting from its characters and
// applying merges in rank order, as the Rust tokenizers library's BPE does.
//
// A word is a doubly linked list of symbols over parallel arrays; candidate merges wait in
// a min-heap keyed by (rank, position), so the lowest-ranked pair is merged first and, among
// equal ranks, the leftmost. A popped candidate is stale when either side has since been
// merged into something else (its symbol is dead, or the pair no longer has that rank):
//
//   symbols:  [T][h][e][▁][c]    pairs (rank): T·h(3) h·e(1) e·▁(-) ▁·c(7)
//   pop h·e → [T][he][▁][c]      push T·he, he·▁; h's old pair T·h is now stale
//
// Each merge is O(log n), so the whole-prompt "word" of a SentencePiece-style tokenizer
// without a pre-tokenizer (thousands of characters) stays fast. Words under 256 characters
// are cached, as most prompts repeat their words.

import {
  fail,
  isJsonObject,
  succeed,
  type JsonObject,
  type TokenizerResult,
} from './tokenizer-result.ts';

/** Pair keys pack two ids; ids stay below 2^21 (2 M), vocabularies are far smaller. */
const idLimit = 2 ** 21;
const maxCachedWordChars = 256;
const maxCacheEntries = 10_000;
const utf8 = new TextEncoder();

export class BpeModel {
  readonly #vocab: ReadonlyMap<string, number>;
  /** id → token string (holes where an id has no token). */
  readonly #tokens: readonly (string | undefined)[];
  /** pairKey(left, right) → merge rank. */
  readonly #mergeRanks: ReadonlyMap<number, number>;
  /** rank → id of the merged token. */
  readonly #mergedIds: Int32Array;
  readonly #unkId: number | undefined;
  readonly #fuseUnk: boolean;
  readonly #byteFallbackIds: Int32Array | null;
  readonly #ignoreMerges: boolean;
  readonly #prefix: string;
  readonly #suffix: string;
  readonly #cache = new Map<string, readonly number[]>();

  private constructor(parts: {
    vocab: Map<string, number>;
    tokens: (string | undefined)[];
    mergeRanks: Map<number, number>;
    mergedIds: Int32Array;
    unkId: number | undefined;
    fuseUnk: boolean;
    byteFallbackIds: Int32Array | null;
    ignoreMerges: boolean;
    prefix: string;
    suffix: string;
  }) {
    this.#vocab = parts.vocab;
    this.#tokens = parts.tokens;
    this.#mergeRanks = parts.mergeRanks;
    this.#mergedIds = parts.mergedIds;
    this.#unkId = parts.unkId;
    this.#fuseUnk = parts.fuseUnk;
    this.#byteFallbackIds = parts.byteFallbackIds;
    this.#ignoreMerges = parts.ignoreMerges;
    this.#prefix = parts.prefix;
    this.#suffix = parts.suffix;
  }

  /** The model described by tokenizer.json's `model`, or what is wrong with it. */
  static parse(json: JsonObject): TokenizerResult<BpeModel> {
    if (json.dropout !== undefined && json.dropout !== null && json.dropout !== 0) {
      return fail('BPE model: dropout is not supported (it makes encoding random)');
    }
    if (!isJsonObject(json.vocab)) return fail('BPE model: "vocab" must be an object');
    const vocab = new Map<string, number>();
    const tokens: (string | undefined)[] = [];
    for (const [token, id] of Object.entries(json.vocab)) {
      if (typeof id !== 'number' || !Number.isInteger(id) || id < 0 || id >= idLimit) {
        return fail(`BPE model: vocab id of ${JSON.stringify(token)} is not an id: ${String(id)}`);
      }
      vocab.set(token, id);
      tokens[id] = token;
    }
    const prefix = optionalString(json.continuing_subword_prefix);
    const suffix = optionalString(json.end_of_word_suffix);

    if (!Array.isArray(json.merges)) return fail('BPE model: "merges" must be an array');
    const merges: unknown[] = json.merges;
    const mergeRanks = new Map<number, number>();
    const mergedIds = new Int32Array(merges.length);
    for (let rank = 0; rank < merges.length; rank += 1) {
      const pair = parseMerge(merges[rank]);
      if (pair === null) {
        return fail(`BPE model: merge ${rank + 1} is not "a b" or ["a", "b"]`);
      }
      const [left, right] = pair;
      const leftId = vocab.get(left);
      const rightId = vocab.get(right);
      const mergedId = vocab.get(left + right.slice(prefix.length));
      if (leftId === undefined || rightId === undefined || mergedId === undefined) {
        return fail(`BPE model: merge ${rank + 1} (${left} ${right}) uses a token not in vocab`);
      }
      // Later duplicates win, as they do in the Rust library's HashMap.
      mergeRanks.set(leftId * idLimit + rightId, rank);
      mergedIds[rank] = mergedId;
    }

    let unkId: number | undefined;
    if (typeof json.unk_token === 'string') {
      unkId = vocab.get(json.unk_token);
      if (unkId === undefined) return fail(`BPE model: unk_token ${json.unk_token} not in vocab`);
    }

    let byteFallbackIds: Int32Array | null = null;
    if (json.byte_fallback === true) {
      byteFallbackIds = new Int32Array(256).fill(-1);
      for (let b = 0; b < 256; b += 1) {
        const id = vocab.get(byteToken(b));
        if (id !== undefined) byteFallbackIds[b] = id;
      }
    }

    return succeed(
      new BpeModel({
        vocab,
        tokens,
        mergeRanks,
        mergedIds,
        unkId,
        fuseUnk: json.fuse_unk === true,
        byteFallbackIds,
        ignoreMerges: json.ignore_merges === true,
        prefix,
        suffix,
      }),
    );
  }

  get size(): number {
    return this.#vocab.size;
  }

  /** One past the largest id. */
  get idSpan(): number {
    return this.#tokens.length;
  }

  tokenId(token: string): number | undefined {
    return this.#vocab.get(token);
  }

  idToToken(id: number): string | undefined {
    return this.#tokens[id];
  }

  /** Appends the ids of one word to `out`. */
  tokenize(word: string, out: number[]): void {
    if (word.length === 0) return;
    if (this.#ignoreMerges) {
      const id = this.#vocab.get(word);
      if (id !== undefined) {
        out.push(id);
        return;
      }
    }
    const cached = this.#cache.get(word);
    if (cached !== undefined) {
      for (const id of cached) out.push(id);
      return;
    }
    const ids = this.#mergeWord(word);
    if (word.length < maxCachedWordChars) {
      if (this.#cache.size >= maxCacheEntries) this.#cache.clear();
      this.#cache.set(word, ids);
    }
    for (const id of ids) out.push(id);
  }

  #mergeWord(word: string): number[] {
    const initial = this.#initialSymbols(word);
    const n = initial.length;
    if (n <= 1) return initial;
    // Linked list over symbol slots: id, previous and next slot (-1: none); a merged-away
    // slot gets id -1.
    const ids = Int32Array.from(initial);
    const prev = new Int32Array(n);
    const next = new Int32Array(n);
    for (let i = 0; i < n; i += 1) {
      prev[i] = i - 1;
      next[i] = i + 1 < n ? i + 1 : -1;
    }
    const heap = new MergeHeap();
    const consider = (pos: number): void => {
      const right = next[pos] ?? -1;
      if (pos < 0 || right < 0) return;
      const rank = this.#mergeRanks.get((ids[pos] ?? 0) * idLimit + (ids[right] ?? 0));
      if (rank !== undefined) heap.push(rank, pos);
    };
    for (let i = 0; i + 1 < n; i += 1) consider(i);

    for (;;) {
      const top = heap.pop();
      if (top === null) break;
      const { rank, pos } = top;
      const right = next[pos] ?? -1;
      const leftId = ids[pos] ?? -1;
      if (leftId < 0 || right < 0) continue;
      if (this.#mergeRanks.get(leftId * idLimit + (ids[right] ?? 0)) !== rank) continue;
      ids[pos] = this.#mergedIds[rank] ?? -1;
      ids[right] = -1;
      const after = next[right] ?? -1;
      next[pos] = after;
      if (after >= 0) prev[after] = pos;
      consider(prev[pos] ?? -1);
      consider(pos);
    }

    const out: number[] = [];
    for (let i = 0; i >= 0; i = next[i] ?? -1) out.push(ids[i] ?? 0);
    return out;
  }

  /**
   * The word's starting symbols: one per character (with the continuing-subword prefix on
   * all but the first and the end-of-word suffix on the last), a character missing from
   * the vocab written as its UTF-8 bytes' `<0xNN>` tokens (byte_fallback) or as the unknown
   * token (consecutive ones fused into one with fuse_unk), or dropped when there is neither.
   */
  #initialSymbols(word: string): number[] {
    const chars = Array.from(word);
    const out: number[] = [];
    let pendingUnk = false;
    for (let i = 0; i < chars.length; i += 1) {
      let symbol = chars[i] ?? '';
      if (i > 0) symbol = this.#prefix + symbol;
      if (i === chars.length - 1) symbol += this.#suffix;
      const id = this.#vocab.get(symbol);
      if (id !== undefined) {
        if (pendingUnk && this.#unkId !== undefined) out.push(this.#unkId);
        pendingUnk = false;
        out.push(id);
        continue;
      }
      if (this.#byteFallbackIds !== null) {
        const bytes = utf8.encode(symbol);
        const byteIds = Array.from(bytes, (b) => this.#byteFallbackIds?.[b] ?? -1);
        if (byteIds.every((b) => b >= 0)) {
          // A pending unknown stays pending across byte tokens, as in the Rust library.
          out.push(...byteIds);
          continue;
        }
      }
      if (this.#unkId === undefined) continue;
      if (pendingUnk && !this.#fuseUnk) out.push(this.#unkId);
      pendingUnk = true;
    }
    if (pendingUnk && this.#unkId !== undefined) out.push(this.#unkId);
    return out;
  }
}

/** `<0xNN>`: the SentencePiece byte-fallback token for byte b (hex digits upper-case). */
export function byteToken(b: number): string {
  return `<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`;
}

function optionalString(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

function parseMerge(merge: unknown): [string, string] | null {
  if (typeof merge === 'string') {
    const parts = merge.split(' ');
    return parts.length === 2 ? [parts[0] ?? '', parts[1] ?? ''] : null;
  }
  if (Array.isArray(merge) && merge.length === 2) {
    const [left, right] = merge as unknown[];
    if (typeof left === 'string' && typeof right === 'string') return [left, right];
  }
  return null;
}

/** Binary min-heap of (rank, position) pairs, ordered by rank then position. */
class MergeHeap {
  readonly #ranks: number[] = [];
  readonly #positions: number[] = [];

  push(rank: number, pos: number): void {
    const ranks = this.#ranks;
    const positions = this.#positions;
    let i = ranks.length;
    ranks.push(rank);
    positions.push(pos);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.#less(i, parent)) break;
      this.#swap(i, parent);
      i = parent;
    }
  }

  pop(): { rank: number; pos: number } | null {
    const ranks = this.#ranks;
    const positions = this.#positions;
    if (ranks.length === 0) return null;
    const top = { rank: ranks[0] ?? 0, pos: positions[0] ?? 0 };
    const lastRank = ranks.pop() ?? 0;
    const lastPos = positions.pop() ?? 0;
    if (ranks.length > 0) {
      ranks[0] = lastRank;
      positions[0] = lastPos;
      let i = 0;
      for (;;) {
        const left = 2 * i + 1;
        const right = left + 1;
        let smallest = i;
        if (left < ranks.length && this.#less(left, smallest)) smallest = left;
        if (right < ranks.length && this.#less(right, smallest)) smallest = right;
        if (smallest === i) break;
        this.#swap(i, smallest);
        i = smallest;
      }
    }
    return top;
  }

  #less(a: number, b: number): boolean {
    const ra = this.#ranks[a] ?? 0;
    const rb = this.#ranks[b] ?? 0;
    return ra < rb || (ra === rb && (this.#positions[a] ?? 0) < (this.#positions[b] ?? 0));
  }

  #swap(a: number, b: number): void {
    const r = this.#ranks;
    const p = this.#positions;
    [r[a], r[b]] = [r[b] ?? 0, r[a] ?? 0];
    [p[a], p[b]] = [p[b] ?? 0, p[a] ?? 0];
  }
}
