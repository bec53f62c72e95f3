// The scheduler's narrow view of KV memory: how many blocks exist and are free, and whether a
// sequence can grow by some token positions. It knows nothing of layers, slots or prefix
// sharing, so the scheduler stays a pure policy that tests drive with a fake, and the real
// block pool (kv-cache/, with prefix caching) is adapted to it in one place later.
//
//   append(seq, n): positions numTokens(seq) … numTokens(seq) + n − 1 get room, all or nothing
//   free(seq):      every block of seq back to the pool (idempotent; unknown seq: no-op)
//   admit(seq, n):  (optional) seq is about to be admitted with n tokens; the allocator may
//                   already hold its first k positions (prefix cache): it takes them for seq
//                   and answers k (block-aligned, ≤ n − 1); free(seq) undoes it
//   computingShared(seq, n, k, computing): (optional) one of `computing` is computing the
//                   next full block of seq's tokens past its k cached positions: seq had
//                   better wait for it to be cached than compute it again

export interface KvAllocator {
  /** Token positions per block. */
  readonly blockSize: number;
  /** Blocks the pool holds in all (the whole KV budget). */
  readonly numTotalBlocks: number;
  readonly numFreeBlocks: number;
  /** Whether `append(seqId, numTokens)` would succeed now (no change). */
  canAppend(seqId: string, numTokens: number): boolean;
  /** Makes room for `numTokens` more positions of `seqId`; false (and no change) when it can't. */
  append(seqId: string, numTokens: number): boolean;
  /** Gives back every block of `seqId` at once. Idempotent. */
  free(seqId: string): void;
  /**
   * Called when `seqId` (holding no blocks) is about to be admitted with `numTokens` tokens
   * (prompt + output so far). Answers how many leading positions the allocator already holds
   * for it (a prefix-cache hit, now owned by `seqId`): a multiple of blockSize, ≤ numTokens −
   * 1. Absent: 0. If the admission then fails, `free(seqId)` gives them back.
   */
  admit?(seqId: string, numTokens: number): number;
  /**
   * Whether one of `computing` (running sequences, each of which will compute all its tokens)
   * has the same tokens as `seqId` up to the end of the full block after its first
   * `numCached` positions (of its first `numTokens` tokens, as at `admit`), a block not cached
   * yet: once that sequence has computed it, admitting `seqId` would find it in the cache.
   * Absent: false (no prefix cache).
   */
  computingShared?(
    seqId: string,
    numTokens: number,
    numCached: number,
    computing: readonly string[],
  ): boolean;
}
