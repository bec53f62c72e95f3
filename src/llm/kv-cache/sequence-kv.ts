// One sequence's view of the paged KV cache: its block table (logical block i of the sequence
// → a block id in the pool) and how many token positions it holds.
//
//   positions 0‥15 → blocks[0], 16‥31 → blocks[1], …   (blockSize 16)
//   slot of position p: block blocks[⌊p / blockSize⌋], position-in-block p mod blockSize
//
// `reserve(n)` makes room for n more positions before the model writes them: it allocates
// the blocks that are missing and, when the block the next position falls in is shared with
// a fork, copies it first (copy-on-write). It either succeeds whole or changes nothing and
// returns false, so the scheduler can preempt and retry.

import type { BlockPool } from './block-pool.ts';

export class SequenceKv {
  private readonly table: number[] = [];
  private tokens = 0;
  /** End of the positions the last reserve made room for (≥ tokens). */
  private reservedEnd = 0;
  private released = false;

  constructor(readonly pool: BlockPool) {}

  /**
   * A sequence that starts from cached prefix blocks (`PrefixCache.lookup`), taking over the
   * references the lookup retained: it holds `numTokens` positions already and the model
   * computes only the rest of the prompt.
   */
  static fromPrefix(
    pool: BlockPool,
    prefix: { readonly blocks: readonly number[]; readonly numTokens: number },
  ): SequenceKv {
    if (prefix.numTokens !== prefix.blocks.length * pool.blockSize)
      throw new RangeError(
        `a cached prefix is whole blocks: ${prefix.numTokens} positions in ${prefix.blocks.length}`,
      );
    const sequence = new SequenceKv(pool);
    sequence.table.push(...prefix.blocks);
    sequence.tokens = prefix.numTokens;
    sequence.reservedEnd = prefix.numTokens;
    return sequence;
  }

  /** Token positions whose keys and values are in the cache. */
  get numTokens(): number {
    return this.tokens;
  }

  /** The block table (read-only view). */
  get blocks(): readonly number[] {
    return this.table;
  }

  /** Block slots allocated but not holding a position yet (internal fragmentation). */
  get unusedSlots(): number {
    return this.table.length * this.pool.blockSize - this.tokens;
  }

  /**
   * Makes room for `count` more positions (numTokens … numTokens + count − 1): allocates the
   * missing blocks, and copies a shared partly-filled last block before it is written.
   * All or nothing: false (and no change) when the pool cannot supply the blocks.
   */
  reserve(count: number): boolean {
    if (this.released) throw new Error('this sequence has released its KV blocks');
    const blockSize = this.pool.blockSize;
    const needed = Math.ceil((this.tokens + count) / blockSize) - this.table.length;
    // The block the next position goes into, if it exists and is shared, must be copied.
    const writeIndex = Math.floor(this.tokens / blockSize);
    const shared =
      count > 0 &&
      writeIndex < this.table.length &&
      this.pool.refCount(this.table[writeIndex]!) > 1;
    const fresh: number[] = [];
    for (let i = 0; i < needed + (shared ? 1 : 0); i++) {
      const block = this.pool.allocate();
      if (block === null) {
        for (const b of fresh) this.pool.release(b);
        return false;
      }
      fresh.push(block);
    }
    if (shared) {
      const copy = fresh.pop()!;
      const original = this.table[writeIndex]!;
      this.pool.copyBlock(original, copy);
      this.pool.release(original);
      this.table[writeIndex] = copy;
    }
    for (const block of fresh) this.table.push(block);
    this.reservedEnd = Math.max(this.reservedEnd, this.tokens + count);
    return true;
  }

  /** Records that `count` reserved positions now hold keys and values. */
  commit(count: number): void {
    if (this.tokens + count > this.table.length * this.pool.blockSize)
      throw new RangeError(`commit of ${count} positions past the reserved blocks`);
    this.tokens += count;
  }

  /** Offset of `position`'s slot (kv head 0) in a layer's key/value array. */
  slotOffset(position: number): number {
    const blockSize = this.pool.blockSize;
    const block = this.table[Math.floor(position / blockSize)];
    if (block === undefined || position < 0)
      throw new RangeError(`position ${position} has no block`);
    return (block * blockSize + (position % blockSize)) * (this.pool.floatsPerBlock / blockSize);
  }

  /**
   * A sequence sharing the blocks that hold this one's positions (n > 1 sampling);
   * copy-on-write after. Only between steps: positions reserved but not written yet would
   * leave both sequences writing one shared block without a copy.
   */
  fork(): SequenceKv {
    if (this.released) throw new Error('this sequence has released its KV blocks');
    if (this.reservedEnd > this.tokens)
      throw new Error(
        `fork between steps only: ${this.reservedEnd - this.tokens} reserved positions are not written yet`,
      );
    const child = new SequenceKv(this.pool);
    const holding = Math.ceil(this.tokens / this.pool.blockSize);
    for (const block of this.table.slice(0, holding)) {
      this.pool.retain(block);
      child.table.push(block);
    }
    child.tokens = this.tokens;
    child.reservedEnd = this.tokens;
    return child;
  }

  /**
   * Gives every block back (shared ones only lose an owner). Idempotent. Last block first, so
   * that cached blocks reach the pool's LRU list tail-first and a prefix's deeper blocks are
   * evicted before its first ones (a lookup stops at the first missing block).
   */
  release(): void {
    if (this.released) return;
    this.released = true;
    for (let i = this.table.length - 1; i >= 0; i--) this.pool.release(this.table[i]!);
    this.table.length = 0;
    this.tokens = 0;
    this.reservedEnd = 0;
  }
}
