// The paged KV cache's memory: a pool of fixed-size blocks, preallocated once from a memory
// budget, as in vLLM. A block holds the keys and values of `blockSize` consecutive token
// positions of one sequence, for every layer:
//
//   keys[layer]   Float32Array [numBlocks, blockSize, numKvHeads, headDim]
//   values[layer] Float32Array [numBlocks, blockSize, numKvHeads, headDim]
//
//   slot offset of (block b, position-in-block s, kv head h) = ((b·blockSize + s)·numKvHeads + h)·headDim
//
// Blocks are reference-counted so that forked sequences (n > 1) share their prompt's blocks;
// a sequence about to write into a shared block copies it first (copy-on-write, in
// sequence-kv.ts). Running out of blocks is a value (`allocate()` → null) that the scheduler
// handles by preempting, never an exception.
//
//   free stack: [b7, b3, b9, …]  ──allocate──▶ refCount[b] = 1
//   retain(b): refCount[b] += 1      release(b): refCount[b] -= 1; at 0 back on the stack
//
// Prefix caching (prefix-cache.ts) marks full, computed blocks as cached. A cached block whose
// last owner lets go keeps its keys and values and goes to the tail of an LRU list instead of
// the stack; `allocate` takes from the stack first and only then evicts the LRU head (telling
// the evict listener, so the cache forgets its hash). Evictable blocks count as free:
//
//   free stack ∪ LRU evictable = free;  free + used = total
//   LRU: head (least recently released, evicted first) ⇄ … ⇄ tail (just released)

export interface KvCacheShape {
  readonly numLayers: number;
  readonly numKvHeads: number;
  readonly headDim: number;
  /** Token positions per block (vLLM's default is 16). */
  readonly blockSize: number;
}

export interface BlockPoolStats {
  readonly totalBlocks: number;
  readonly usedBlocks: number;
  /** Blocks no sequence holds, evictable cached ones included. */
  readonly freeBlocks: number;
  /** Free blocks that still hold a cached prefix (evicted LRU when the stack runs dry). */
  readonly evictableBlocks: number;
  /** usedBlocks ÷ totalBlocks. */
  readonly utilization: number;
}

/** Bytes one block takes: keys and values, every layer, float32. */
export function bytesPerBlock(shape: KvCacheShape): number {
  return 2 * shape.numLayers * shape.blockSize * shape.numKvHeads * shape.headDim * 4;
}

export class BlockPool {
  readonly numBlocks: number;
  readonly blockSize: number;
  /** Floats per block in one layer's key (or value) array: blockSize · numKvHeads · headDim. */
  readonly floatsPerBlock: number;
  readonly keys: readonly Float32Array[];
  readonly values: readonly Float32Array[];
  private readonly refCounts: Int32Array;
  /** Free block ids; the top of the stack is at freeCount − 1. */
  private readonly freeStack: Int32Array;
  private freeCount: number;
  /** 1 where the block is in the prefix cache (holds a registered full block). */
  private readonly cached: Uint8Array;
  /** The LRU list of cached blocks with no owner, linked through two arrays (−1 = none). */
  private readonly lruPrevious: Int32Array;
  private readonly lruNext: Int32Array;
  private lruHead = -1;
  private lruTail = -1;
  private evictableCount = 0;
  private evictListener: ((block: number) => void) | null = null;

  constructor(
    readonly shape: KvCacheShape,
    numBlocks: number,
    /** Where the key and value arrays live (the model's kernel arena, for its kernels). */
    allocate: (floats: number) => Float32Array = (floats) => new Float32Array(floats),
  ) {
    if (!Number.isInteger(numBlocks) || numBlocks < 1)
      throw new RangeError(`a KV block pool needs at least one block, not ${numBlocks}`);
    this.numBlocks = numBlocks;
    this.blockSize = shape.blockSize;
    this.floatsPerBlock = shape.blockSize * shape.numKvHeads * shape.headDim;
    const floats = numBlocks * this.floatsPerBlock;
    this.keys = Array.from({ length: shape.numLayers }, () => allocate(floats));
    this.values = Array.from({ length: shape.numLayers }, () => allocate(floats));
    this.refCounts = new Int32Array(numBlocks);
    this.freeStack = new Int32Array(numBlocks);
    // Lowest ids on top, so a fresh pool hands out 0, 1, 2, …
    for (let i = 0; i < numBlocks; i++) this.freeStack[i] = numBlocks - 1 - i;
    this.freeCount = numBlocks;
    this.cached = new Uint8Array(numBlocks);
    this.lruPrevious = new Int32Array(numBlocks).fill(-1);
    this.lruNext = new Int32Array(numBlocks).fill(-1);
  }

  /** As many blocks as `budgetBytes` holds (at least one), or null when not even one fits. */
  static fromBudget(shape: KvCacheShape, budgetBytes: number): BlockPool | null {
    const blocks = Math.floor(budgetBytes / bytesPerBlock(shape));
    return blocks >= 1 ? new BlockPool(shape, blocks) : null;
  }

  /**
   * A free block with reference count 1, or null when none is left. Never-cached blocks go
   * first; then the least recently released cached block is evicted (its hash forgotten).
   */
  allocate(): number | null {
    if (this.freeCount > 0) {
      this.freeCount -= 1;
      const block = this.freeStack[this.freeCount]!;
      this.refCounts[block] = 1;
      return block;
    }
    const block = this.lruHead;
    if (block === -1) return null;
    this.unlink(block);
    this.cached[block] = 0;
    this.refCounts[block] = 1;
    this.evictListener?.(block);
    return block;
  }

  /** Called with each cached block `allocate` evicts (one listener: the prefix cache). */
  onEvict(listener: (block: number) => void): void {
    if (this.evictListener !== null) throw new Error('this pool already has a prefix cache');
    this.evictListener = listener;
  }

  /** Marks an owned block as cached: at reference count 0 it stays evictable, not cleared. */
  markCached(block: number): void {
    this.check(block);
    this.cached[block] = 1;
  }

  isCached(block: number): boolean {
    return this.cached[block] === 1;
  }

  /** Another owner for a cached block, taking it off the LRU list if it had none. */
  retainCached(block: number): void {
    if (this.cached[block] !== 1) throw new Error(`block ${block} is not cached`);
    if (this.refCounts[block] === 0) this.unlink(block);
    this.refCounts[block]! += 1;
  }

  /** Another owner for `block` (a forked sequence shares it). */
  retain(block: number): void {
    this.check(block);
    this.refCounts[block]! += 1;
  }

  /** One owner fewer; the block is free again when none is left. */
  release(block: number): void {
    this.check(block);
    const count = this.refCounts[block]! - 1;
    this.refCounts[block] = count;
    if (count > 0) return;
    if (this.cached[block] === 1) {
      // Most recently used at the tail: evicted last.
      this.lruPrevious[block] = this.lruTail;
      this.lruNext[block] = -1;
      if (this.lruTail === -1) this.lruHead = block;
      else this.lruNext[this.lruTail] = block;
      this.lruTail = block;
      this.evictableCount += 1;
    } else {
      this.freeStack[this.freeCount] = block;
      this.freeCount += 1;
    }
  }

  /** The evictable blocks, least recently released first (for tests and stats). */
  evictionOrder(): number[] {
    const order: number[] = [];
    for (let block = this.lruHead; block !== -1; block = this.lruNext[block]!) order.push(block);
    return order;
  }

  private unlink(block: number): void {
    const previous = this.lruPrevious[block]!;
    const next = this.lruNext[block]!;
    if (previous === -1) this.lruHead = next;
    else this.lruNext[previous] = next;
    if (next === -1) this.lruTail = previous;
    else this.lruPrevious[next] = previous;
    this.lruPrevious[block] = -1;
    this.lruNext[block] = -1;
    this.evictableCount -= 1;
  }

  refCount(block: number): number {
    return this.refCounts[block] ?? 0;
  }

  /** Copies every layer's keys and values of `from` into `to` (copy-on-write). */
  copyBlock(from: number, to: number): void {
    const n = this.floatsPerBlock;
    for (let layer = 0; layer < this.shape.numLayers; layer++) {
      const keys = this.keys[layer]!;
      const values = this.values[layer]!;
      keys.copyWithin(to * n, from * n, (from + 1) * n);
      values.copyWithin(to * n, from * n, (from + 1) * n);
    }
  }

  /** Blocks `allocate` can still hand out, evictable cached ones included. */
  get freeBlocks(): number {
    return this.freeCount + this.evictableCount;
  }

  stats(): BlockPoolStats {
    const free = this.freeCount + this.evictableCount;
    const used = this.numBlocks - free;
    return {
      totalBlocks: this.numBlocks,
      usedBlocks: used,
      freeBlocks: free,
      evictableBlocks: this.evictableCount,
      utilization: used / this.numBlocks,
    };
  }

  private check(block: number): void {
    if (!Number.isInteger(block) || block < 0 || block >= this.numBlocks)
      throw new RangeError(`block ${block} is not in this pool`);
    if (this.refCounts[block] === 0) throw new Error(`block ${block} is not allocated`);
  }
}
