// Prefix caching: chained block hashes, sharing cached blocks by reference count, LRU
// eviction of unowned cached blocks when allocation needs room, hit-rate counters, and a
// seeded property test over random prompts, lookups, computations and releases.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRandom } from '../../../src/core/random.ts';
import { BlockPool } from '../../../src/llm/kv-cache/block-pool.ts';
import { PrefixCache } from '../../../src/llm/kv-cache/prefix-cache.ts';
import { SequenceKv } from '../../../src/llm/kv-cache/sequence-kv.ts';

const shape = { numLayers: 1, numKvHeads: 1, headDim: 2, blockSize: 4 };
const range = (from: number, count: number): number[] =>
  Array.from({ length: count }, (_, i) => from + i);

/**
 * What a forward pass would do, as far as the cache can tell: writes each token id at its
 * position's key slot, commits, and registers the blocks that are full.
 */
function compute(cache: PrefixCache, kv: SequenceKv, tokens: readonly number[]): void {
  const from = kv.numTokens;
  assert.ok(kv.reserve(tokens.length - from));
  for (let p = from; p < tokens.length; p++) kv.pool.keys[0]![kv.slotOffset(p)] = tokens[p]!;
  kv.commit(tokens.length - from);
  cache.register(kv.blocks, cache.hashes(tokens));
}

/** A prompt's sequence: its cached prefix, then the rest computed and registered. */
function run(cache: PrefixCache, tokens: readonly number[]): SequenceKv {
  const kv = SequenceKv.fromPrefix(cache.pool, cache.lookup(tokens));
  compute(cache, kv, tokens);
  return kv;
}

test('hashes chain: the same prefix gives the same hashes; one token changed in block k changes blocks k… only', () => {
  const cache = new PrefixCache(new BlockPool(shape, 4));
  const tokens = range(100, 18); // 4 full blocks and 2 tokens
  const hashes = cache.hashes(tokens);
  assert.equal(hashes.length, 4);
  assert.equal(new Set(hashes).size, 4);
  assert.ok(hashes.every((h) => /^[0-9a-f]{64}$/.test(h)));
  assert.deepEqual(cache.hashes(tokens.slice(0, 9)), hashes.slice(0, 2));
  assert.deepEqual(
    cache.hashes([...tokens.slice(0, 8), 1, 2, 3, 4]).slice(0, 2),
    hashes.slice(0, 2),
  );
  for (let k = 0; k < 4; k++) {
    const changed = [...tokens];
    changed[k * 4 + 2] = 7;
    const other = cache.hashes(changed);
    assert.deepEqual(other.slice(0, k), hashes.slice(0, k), `block ${k}: before it`);
    for (let j = k; j < 4; j++) assert.notEqual(other[j], hashes[j], `block ${k}: block ${j}`);
  }
  // Same tokens, different parent: a block is named by its whole prefix, not its contents.
  const repeated = [1, 2, 3, 4, 1, 2, 3, 4];
  const [first, second] = cache.hashes(repeated);
  assert.notEqual(first, second);
  // Extending a sequence's list hashes only the blocks that became full.
  const grown = cache.hashes(tokens.slice(0, 6));
  assert.equal(grown.length, 1);
  assert.deepEqual(cache.extendHashes(grown, tokens), hashes);
});

test('identical prefixes share blocks by reference count; the last token is always computed', () => {
  const pool = new BlockPool(shape, 8);
  const cache = new PrefixCache(pool);
  const a = run(cache, range(0, 10)); // blocks 0 1 2, blocks 0 and 1 full and cached
  assert.deepEqual(a.blocks, [0, 1, 2]);
  assert.equal(cache.stats().cachedBlocks, 2);
  const b = run(cache, [...range(0, 8), 50, 51, 52]);
  assert.deepEqual(b.blocks.slice(0, 2), [0, 1]);
  assert.equal(pool.refCount(0), 2);
  assert.equal(pool.refCount(1), 2);
  assert.equal(pool.refCount(b.blocks[2]!), 1);
  // A prompt of exactly two cached blocks reuses only the first: its last token must run.
  const c = SequenceKv.fromPrefix(pool, cache.lookup(range(0, 8)));
  assert.deepEqual(c.blocks, [0]);
  assert.equal(c.numTokens, 4);
  c.release();
  a.release();
  b.release();
  assert.equal(pool.refCount(0), 0);
  // Freed but cached: still free for allocation, still found by lookup.
  assert.deepEqual(pool.stats(), {
    totalBlocks: 8,
    usedBlocks: 0,
    freeBlocks: 8,
    evictableBlocks: 2,
    utilization: 0,
  });
  const d = cache.lookup(range(0, 12));
  assert.deepEqual(d.blocks, [0, 1]);
  assert.equal(pool.stats().evictableBlocks, 0);
  assert.equal(pool.stats().usedBlocks, 2);
});

test('register keeps the first block for a hash and refuses a block whose tokens changed', () => {
  const pool = new BlockPool(shape, 4);
  const cache = new PrefixCache(pool);
  const tokens = range(0, 5);
  const x = pool.allocate()!;
  const y = pool.allocate()!;
  const hashes = cache.hashes(tokens);
  assert.equal(cache.register([x], hashes), 1);
  assert.equal(cache.register([x], hashes), 0);
  assert.equal(cache.register([y], hashes), 0); // computed twice at once: the first one stays
  assert.equal(cache.blockFor(hashes[0]!), x);
  assert.equal(pool.isCached(y), false);
  assert.throws(() => cache.register([x], cache.hashes(range(9, 4))), /another hash/);
  assert.throws(() => cache.register([], hashes), /1 hashes for 0 blocks/);
  pool.release(y);
  assert.equal(pool.stats().evictableBlocks, 0); // an uncached block goes back to the stack
});

test('unowned cached blocks are evicted least recently released first, and only when needed', () => {
  const pool = new BlockPool(shape, 6);
  const cache = new PrefixCache(pool);
  const a = run(cache, range(0, 9)); // blocks 0 1 cached, 2 partial
  const b = run(cache, range(100, 9)); // blocks 3 4 cached, 5 partial
  a.release(); // last block first: 2 to the stack, then 1, 0 onto the LRU list
  b.release(); // 5 to the stack, then 4, 3
  assert.deepEqual(pool.evictionOrder(), [1, 0, 4, 3]);
  // Never-cached blocks go first.
  const fresh = [pool.allocate(), pool.allocate()];
  assert.deepEqual(fresh, [5, 2]);
  assert.equal(cache.stats().cachedBlocks, 4);
  // A lookup revives blocks 3, 4: no longer evictable.
  const hit = cache.lookup(range(100, 9));
  assert.deepEqual(hit.blocks, [3, 4]);
  assert.deepEqual(pool.evictionOrder(), [1, 0]);
  // Now eviction: block 1 (a's deeper block) goes first, then block 0.
  assert.equal(pool.allocate(), 1);
  assert.equal(cache.stats().cachedBlocks, 3);
  assert.deepEqual(cache.lookup(range(0, 9)).blocks, [0]);
  for (const block of [0, 3, 4]) pool.release(block);
  assert.deepEqual(pool.evictionOrder(), [0, 3, 4]);
  assert.equal(pool.allocate(), 0);
  assert.equal(pool.allocate(), 3);
  assert.equal(pool.allocate(), 4);
  assert.equal(pool.allocate(), null); // allocation failure is still a value
  assert.equal(cache.stats().cachedBlocks, 0);
  assert.equal(cache.stats().evictedBlocks, 4);
  assert.deepEqual(cache.lookup(range(100, 9)).blocks, []);
});

test('hit counters: queries, hit blocks and tokens, hit rate over prompt tokens', () => {
  const pool = new BlockPool(shape, 16);
  const cache = new PrefixCache(pool);
  assert.equal(cache.stats().hitRate, 0);
  const system = range(0, 8);
  const a = run(cache, [...system, 20, 21]); // 10 tokens, miss
  const b = run(cache, [...system, 30, 31, 32, 33, 34, 35]); // 14 tokens, 8 hit
  const c = run(cache, [...system, 30, 31, 32, 33, 40, 41]); // 14 tokens, 12 hit
  assert.deepEqual(cache.stats(), {
    queries: 3,
    queriedTokens: 38,
    hitTokens: 20,
    hitBlocks: 5,
    hitRate: 20 / 38,
    cachedBlocks: 3, // the system prompt's two blocks and [30 31 32 33]
    evictedBlocks: 0,
  });
  for (const kv of [a, b, c]) kv.release();
});

test('property: random prompts, lookups, computations, forks and releases keep every invariant', () => {
  for (const seed of [1, 2, 3, 4, 5]) {
    const random = createRandom(seed);
    const pool = new BlockPool(shape, 24);
    const cache = new PrefixCache(pool);
    // A few shared prefixes so that lookups hit, and a tiny vocabulary so that blocks repeat.
    const prefixes = Array.from({ length: 4 }, () =>
      Array.from({ length: 4 + random.int(12) }, () => random.int(3)),
    );
    const live: { kv: SequenceKv; tokens: number[] }[] = [];
    let hits = 0;
    for (let step = 0; step < 400; step++) {
      const action = random.int(10);
      if (action < 5) {
        const tokens = [
          ...prefixes[random.int(prefixes.length)]!,
          ...Array.from({ length: 1 + random.int(10) }, () => random.int(3)),
        ];
        const hit = cache.lookup(tokens);
        hits += hit.blocks.length;
        const kv = SequenceKv.fromPrefix(pool, hit);
        // The cached blocks hold exactly this prompt's tokens.
        for (let p = 0; p < hit.numTokens; p++)
          assert.equal(pool.keys[0]![kv.slotOffset(p)], tokens[p], `seed ${seed}: position ${p}`);
        if (kv.reserve(tokens.length - kv.numTokens)) {
          kv.release(); // undo the trial reservation; compute() reserves again
          const again = SequenceKv.fromPrefix(pool, cache.lookup(tokens));
          compute(cache, again, tokens);
          live.push({ kv: again, tokens });
        } else {
          kv.release(); // no room: everything it held goes back
        }
      } else if (action < 7 && live.length > 0) {
        const index = random.int(live.length);
        live[index]!.kv.release();
        live.splice(index, 1);
      } else if (action < 8 && live.length > 0) {
        const parent = live[random.int(live.length)]!;
        const child = parent.kv.fork();
        const tokens = [...parent.tokens, random.int(3)];
        if (child.reserve(1)) {
          pool.keys[0]![child.slotOffset(tokens.length - 1)] = tokens.at(-1)!;
          child.commit(1);
          cache.register(child.blocks, cache.hashes(tokens));
          live.push({ kv: child, tokens });
        } else child.release();
      } else if (live.length > 0) {
        // Decode one token on a live sequence, registering the block it fills.
        const entry = live[random.int(live.length)]!;
        const tokens = [...entry.tokens, random.int(3)];
        if (entry.kv.reserve(1)) {
          pool.keys[0]![entry.kv.slotOffset(tokens.length - 1)] = tokens.at(-1)!;
          entry.kv.commit(1);
          cache.register(entry.kv.blocks, cache.hashes(tokens));
          entry.tokens = tokens;
        }
      }
      // Invariants after every step.
      const stats = pool.stats();
      assert.equal(stats.freeBlocks + stats.usedBlocks, stats.totalBlocks);
      const owners = new Map<number, number>();
      for (const { kv } of live)
        for (const block of kv.blocks) owners.set(block, (owners.get(block) ?? 0) + 1);
      for (let block = 0; block < pool.numBlocks; block++) {
        assert.ok(pool.refCount(block) >= 0);
        assert.equal(pool.refCount(block), owners.get(block) ?? 0, `seed ${seed}: block ${block}`);
      }
      assert.equal(stats.usedBlocks, owners.size);
      assert.equal(stats.evictableBlocks, pool.evictionOrder().length);
      for (const block of pool.evictionOrder()) assert.ok(pool.isCached(block));
      for (const [hash, block] of cache.entries()) {
        assert.equal(cache.hashOf(block), hash);
        assert.ok(pool.isCached(block));
      }
      // Every live sequence's full blocks: a cached one holds exactly the hash of its prefix.
      for (const { kv, tokens } of live) {
        const hashes = cache.hashes(tokens.slice(0, kv.numTokens));
        hashes.forEach((hash, i) => {
          const block = kv.blocks[i]!;
          if (pool.isCached(block)) assert.equal(cache.hashOf(block), hash);
          for (let p = 0; p < shape.blockSize; p++)
            assert.equal(
              pool.keys[0]![kv.slotOffset(i * shape.blockSize + p)],
              tokens[i * shape.blockSize + p],
            );
        });
      }
    }
    assert.ok(hits > 20, `seed ${seed}: only ${hits} block hits`);
    assert.ok(cache.stats().evictedBlocks > 10, `seed ${seed}: evictions not exercised`);
    for (const { kv } of live) kv.release();
    assert.equal(pool.stats().usedBlocks, 0);
    assert.equal(pool.freeBlocks, pool.numBlocks);
  }
});
