// The scheduler's KvAllocator over the real paged KV cache: the model's BlockPool, one
// SequenceKv (block table) per sequence, and the PrefixCache when prefix caching is on. The
// one place where the scheduler's counts meet blocks:
//
//   admit(seq, n)  → cache.lookup(first n tokens) → SequenceKv.fromPrefix: k cached positions
//   computingShared(seq, n, k, running) → a running sequence has seq's next full block's
//                    tokens (and all before): it will cache that block, so seq waits for it
//   append(seq, n) → kv.reserve(n)  (all or nothing; the model writes and commits them)
//   free(seq)      → kv.release()   (cached blocks stay in the pool's LRU, evictable)
//   registerFull(seq) after a step → newly full blocks hashed and cached (prefix-cache.ts)
//
// The engine tells it each sequence's tokens (`track`: the live prompt + output array it
// appends to), since the cache is keyed by token ids and the scheduler only knows counts.

import type { BlockPool } from '../kv-cache/block-pool.ts';
import type { BlockHash, PrefixCache } from '../kv-cache/prefix-cache.ts';
import { SequenceKv } from '../kv-cache/sequence-kv.ts';
import type { KvAllocator } from './kv-allocator.ts';

interface Tracked {
  /** Prompt + output so far (the engine's array: it grows as tokens are sampled). */
  readonly tokens: readonly number[];
  kv: SequenceKv | null;
  /** Chained hashes of the sequence's full blocks, extended as it grows (kept across preemption). */
  readonly hashes: BlockHash[];
  /** Leading full blocks of `kv` already offered to the cache. */
  registered: number;
}

export class BlockPoolAllocator implements KvAllocator {
  readonly blockSize: number;
  readonly numTotalBlocks: number;
  private readonly seqs = new Map<string, Tracked>();

  constructor(
    readonly pool: BlockPool,
    /** null: prefix caching off (every admission computes from position 0). */
    readonly cache: PrefixCache | null,
  ) {
    this.blockSize = pool.blockSize;
    this.numTotalBlocks = pool.numBlocks;
  }

  get numFreeBlocks(): number {
    return this.pool.freeBlocks;
  }

  /** Starts tracking a sequence whose tokens live in `tokens` (appended to by the engine). */
  track(seqId: string, tokens: readonly number[]): void {
    if (this.seqs.has(seqId)) throw new Error(`sequence ${seqId} is already tracked`);
    this.seqs.set(seqId, { tokens, kv: null, hashes: [], registered: 0 });
  }

  /** Frees the sequence's blocks and forgets it. */
  untrack(seqId: string): void {
    this.free(seqId);
    this.seqs.delete(seqId);
  }

  /** The sequence's block table, while it holds blocks. */
  kvOf(seqId: string): SequenceKv | null {
    return this.seqs.get(seqId)?.kv ?? null;
  }

  admit(seqId: string, numTokens: number): number {
    const seq = this.get(seqId);
    this.free(seqId);
    if (this.cache === null) return 0;
    const hit = this.cache.lookup(seq.tokens.slice(0, numTokens));
    seq.kv = SequenceKv.fromPrefix(this.pool, hit);
    seq.registered = hit.blocks.length;
    return hit.numTokens;
  }

  computingShared(
    seqId: string,
    numTokens: number,
    numCached: number,
    computing: readonly string[],
  ): boolean {
    if (this.cache === null) return false;
    const tokens = this.get(seqId).tokens;
    const cachedBlocks = numCached / this.blockSize;
    // A hit covers at most numTokens − 1 positions (the last token must run for its logits).
    if (Math.floor((numTokens - 1) / this.blockSize) <= cachedBlocks) return false;
    const start = cachedBlocks * this.blockSize;
    const end = start + this.blockSize;
    for (const otherId of computing) {
      const other = this.seqs.get(otherId);
      // Not holding blocks (not running), too short, or already past it (then the lookup
      // would have found the block: waiting on it would never end).
      if (other === undefined || other.kv === null || other.tokens.length < end) continue;
      if (other.registered > cachedBlocks) continue;
      if (
        sameTokens(tokens, other.tokens, start, end) &&
        sameTokens(tokens, other.tokens, 0, start)
      )
        return true;
    }
    return false;
  }

  canAppend(seqId: string, numTokens: number): boolean {
    const kv = this.seqs.get(seqId)?.kv ?? null;
    const holding = kv?.blocks.length ?? 0;
    const needed = Math.ceil(((kv?.numTokens ?? 0) + numTokens) / this.blockSize) - holding;
    return needed <= this.pool.freeBlocks;
  }

  append(seqId: string, numTokens: number): boolean {
    const seq = this.get(seqId);
    seq.kv ??= new SequenceKv(this.pool);
    return seq.kv.reserve(numTokens);
  }

  free(seqId: string): void {
    const seq = this.seqs.get(seqId);
    if (seq === undefined || seq.kv === null) return;
    seq.kv.release();
    seq.kv = null;
    seq.registered = 0;
  }

  /**
   * Caches the blocks of `seqId` that are full and computed and not offered yet (after each
   * step that computed positions for it). No-op with prefix caching off.
   */
  registerFull(seqId: string): void {
    const seq = this.seqs.get(seqId);
    if (this.cache === null || seq === undefined || seq.kv === null) return;
    const full = Math.floor(seq.kv.numTokens / this.blockSize);
    if (full <= seq.registered) return;
    if (full > seq.hashes.length)
      this.cache.extendHashes(seq.hashes, seq.tokens.slice(0, full * this.blockSize));
    this.cache.register(seq.kv.blocks, seq.hashes.slice(0, full));
    seq.registered = full;
  }

  /**
   * Token slots of the blocks the live sequences hold (each block once, shared or not) and
   * how many of them hold a position: reserved − filled is the paged cache's waste (the
   * unfilled tail of each sequence's last block). Between steps, where reserved = computed.
   */
  slotUsage(): { readonly reservedSlots: number; readonly filledSlots: number } {
    const filledByBlock = new Map<number, number>();
    for (const seq of this.seqs.values()) {
      const kv = seq.kv;
      if (kv === null) continue;
      kv.blocks.forEach((block, i) => {
        const filled = Math.min(this.blockSize, Math.max(0, kv.numTokens - i * this.blockSize));
        filledByBlock.set(block, Math.max(filledByBlock.get(block) ?? 0, filled));
      });
    }
    let filledSlots = 0;
    for (const filled of filledByBlock.values()) filledSlots += filled;
    return { reservedSlots: filledByBlock.size * this.blockSize, filledSlots };
  }

  private get(seqId: string): Tracked {
    const seq = this.seqs.get(seqId);
    if (seq === undefined) throw new Error(`sequence ${seqId} is not tracked`);
    return seq;
  }
}

/** Whether `a` and `b` hold the same tokens at positions start … end − 1. */
function sameTokens(
  a: readonly number[],
  b: readonly number[],
  start: number,
  end: number,
): boolean {
  for (let i = start; i < end; i++) if (a[i] !== b[i]) return false;
  return true;
}
