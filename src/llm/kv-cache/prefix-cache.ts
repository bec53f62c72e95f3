// Prefix caching over the block pool, as in vLLM v1: a full block whose keys and values are
// computed is identified by a hash chained over its parent block's hash and its own token
// ids, so one hash names the whole prefix up to the block's end (same tokens at the same
// positions ⇒ same keys and values). A map hash → block id lets a new prompt start from the
// blocks of its longest cached prefix and compute only the rest.
//
//   tokens:  [t0 … t15][t16 … t31][t32 … t40]        (blockSize 16; the last block not full)
//   hashes:   h0 = H(root, t0‥t15)   h1 = H(h0, t16‥t31)   — no hash for a partial block
//   cache:    h0 → b4, h1 → b9      lookup finds b4, b9 and retains them
//
// Ownership: blocks are reference-counted by the pool. A cached block whose last owner lets go
// keeps its contents on the pool's LRU list (free, evictable); `allocate` evicts it only when
// no never-cached block is left, and the evict listener below forgets its hash.
//
// The hash is SHA-256 over the parent's 32-byte digest and the block's token ids as int32
// little-endian. A collision would silently hand one prompt another's keys and values, so
// the hash must be collision-resistant, not merely well-spread: with 256-bit digests the
// birthday bound puts a collision among even 2⁶⁴ blocks near 2⁻¹²⁸. Fixed-size fields (a
// 32-byte parent, blockSize token ids of 4 bytes) keep the encoding unambiguous.

import { createHash } from 'node:crypto';
import type { BlockPool } from './block-pool.ts';

/** A block's chained hash: SHA-256 hex of (parent digest ‖ token ids). */
export type BlockHash = string;

/** The parent of a sequence's first block: 32 zero bytes. */
const rootDigest = Buffer.alloc(32);

export interface PrefixHit {
  /** The cached blocks of the prompt's prefix, in order, each retained for the caller. */
  readonly blocks: readonly number[];
  /** Positions those blocks hold: blocks.length · blockSize. */
  readonly numTokens: number;
}

export interface PrefixCacheStats {
  /** lookup calls. */
  readonly queries: number;
  /** Prompt tokens looked up, all queries together. */
  readonly queriedTokens: number;
  /** Prompt tokens found in cached blocks (not recomputed). */
  readonly hitTokens: number;
  readonly hitBlocks: number;
  /** hitTokens ÷ queriedTokens (0 before any query). */
  readonly hitRate: number;
  /** Blocks with a hash in the cache now, owned or evictable. */
  readonly cachedBlocks: number;
  /** Cached blocks evicted so far to make room for an allocation. */
  readonly evictedBlocks: number;
}

export class PrefixCache {
  readonly blockSize: number;
  private readonly blockByHash = new Map<BlockHash, number>();
  /** The hash each cached block is registered under (undefined when not cached). */
  private readonly hashByBlock: (BlockHash | undefined)[];
  private queries = 0;
  private queriedTokens = 0;
  private hitTokens = 0;
  private hitBlocks = 0;
  private evictedBlocks = 0;

  constructor(readonly pool: BlockPool) {
    this.blockSize = pool.blockSize;
    this.hashByBlock = new Array<BlockHash | undefined>(pool.numBlocks).fill(undefined);
    pool.onEvict((block) => {
      const hash = this.hashByBlock[block];
      if (hash !== undefined && this.blockByHash.get(hash) === block) this.blockByHash.delete(hash);
      this.hashByBlock[block] = undefined;
      this.evictedBlocks += 1;
    });
  }

  /**
   * Appends to `hashes` the hash of every block of `tokens` that is full but not hashed yet
   * (a sequence keeps its list and extends it as it grows); returns it.
   */
  extendHashes(hashes: BlockHash[], tokens: readonly number[]): BlockHash[] {
    const full = Math.floor(tokens.length / this.blockSize);
    const ids = new Int32Array(this.blockSize);
    const idBytes = new Uint8Array(ids.buffer);
    for (let index = hashes.length; index < full; index++) {
      const parent = index === 0 ? rootDigest : Buffer.from(hashes[index - 1]!, 'hex');
      for (let i = 0; i < this.blockSize; i++) ids[i] = tokens[index * this.blockSize + i]!;
      // Int32Array is platform-endian; every Node platform Kiln runs on is little-endian.
      hashes.push(createHash('sha256').update(parent).update(idBytes).digest('hex'));
    }
    return hashes;
  }

  /** The chained hashes of the full blocks of `tokens`. */
  hashes(tokens: readonly number[]): BlockHash[] {
    return this.extendHashes([], tokens);
  }

  /**
   * The longest run of cached full blocks that begins the prompt, each retained (the caller
   * owns them: hand them to a SequenceKv, or release them). At most tokens.length − 1
   * positions match: the prompt's last token must still run through the model to give the
   * logits of the first new token.
   */
  lookup(tokens: readonly number[]): PrefixHit {
    const hashes = this.hashes(tokens.slice(0, Math.max(0, tokens.length - 1)));
    const blocks: number[] = [];
    for (const hash of hashes) {
      const block = this.blockByHash.get(hash);
      if (block === undefined) break;
      blocks.push(block);
    }
    for (const block of blocks) this.pool.retainCached(block);
    const numTokens = blocks.length * this.blockSize;
    this.queries += 1;
    this.queriedTokens += tokens.length;
    this.hitTokens += numTokens;
    this.hitBlocks += blocks.length;
    return { blocks, numTokens };
  }

  /**
   * Registers blocks[i] under hashes[i] for every i < hashes.length: each must be full and
   * computed, and owned by the caller. A block already cached stays as it is; a hash already
   * cached in another block keeps that block (this one stays uncached and is freed normally
   * when released). Returns how many blocks were newly cached.
   */
  register(blocks: readonly number[], hashes: readonly BlockHash[]): number {
    if (hashes.length > blocks.length)
      throw new RangeError(`${hashes.length} hashes for ${blocks.length} blocks`);
    let added = 0;
    for (const [index, hash] of hashes.entries()) {
      const block = blocks[index]!;
      const current = this.hashByBlock[block];
      if (current !== undefined) {
        if (current !== hash)
          throw new Error(`block ${block} is cached under another hash: its tokens changed`);
        continue;
      }
      if (this.blockByHash.has(hash)) continue;
      this.pool.markCached(block);
      this.blockByHash.set(hash, block);
      this.hashByBlock[block] = hash;
      added += 1;
    }
    return added;
  }

  /** The block cached under `hash`, if any. */
  blockFor(hash: BlockHash): number | undefined {
    return this.blockByHash.get(hash);
  }

  /** The hash `block` is cached under, if it is. */
  hashOf(block: number): BlockHash | undefined {
    return this.hashByBlock[block];
  }

  /** Every (hash, block) pair cached now (for invariant checks). */
  entries(): IterableIterator<[BlockHash, number]> {
    return this.blockByHash.entries();
  }

  stats(): PrefixCacheStats {
    return {
      queries: this.queries,
      queriedTokens: this.queriedTokens,
      hitTokens: this.hitTokens,
      hitBlocks: this.hitBlocks,
      hitRate: this.queriedTokens === 0 ? 0 : this.hitTokens / this.queriedTokens,
      cachedBlocks: this.blockByHash.size,
      evictedBlocks: this.evictedBlocks,
    };
  }
}
