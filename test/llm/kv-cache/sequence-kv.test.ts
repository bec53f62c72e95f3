// The paged KV cache's bookkeeping: block allocation, copy-on-write forks, all-or-nothing
// reservations, and every block free again once every sequence has ended (property test with
// random lengths, forks and releases, seeded).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRandom } from '../../../src/core/random.ts';
import { BlockPool, bytesPerBlock } from '../../../src/llm/kv-cache/block-pool.ts';
import { SequenceKv } from '../../../src/llm/kv-cache/sequence-kv.ts';

const shape = { numLayers: 2, numKvHeads: 2, headDim: 4, blockSize: 4 };

/** Writes a marker for (sequence label, position) into every layer's key and value slots. */
function write(kv: SequenceKv, position: number, marker: number): void {
  const offset = kv.slotOffset(position);
  const floats = shape.numKvHeads * shape.headDim;
  for (let layer = 0; layer < shape.numLayers; layer++) {
    kv.pool.keys[layer]!.fill(marker, offset, offset + floats);
    kv.pool.values[layer]!.fill(-marker, offset, offset + floats);
  }
}

function read(kv: SequenceKv, position: number, layer = 1): [number, number] {
  const offset = kv.slotOffset(position);
  return [kv.pool.keys[layer]![offset]!, kv.pool.values[layer]![offset + 3]!];
}

test('a pool sized from a budget; blocks handed out, shared, and freed by reference count', () => {
  assert.equal(bytesPerBlock(shape), 2 * 2 * 4 * 2 * 4 * 4);
  assert.equal(BlockPool.fromBudget(shape, bytesPerBlock(shape) - 1), null);
  const pool = BlockPool.fromBudget(shape, 3.5 * bytesPerBlock(shape))!;
  assert.equal(pool.numBlocks, 3);
  assert.deepEqual(
    [pool.allocate(), pool.allocate(), pool.allocate(), pool.allocate()],
    [0, 1, 2, null],
  );
  pool.retain(1);
  pool.release(1);
  assert.equal(pool.freeBlocks, 0);
  pool.release(1);
  assert.equal(pool.freeBlocks, 1);
  assert.throws(() => pool.release(1), /not allocated/);
  assert.throws(() => pool.retain(7), /not in this pool/);
  assert.deepEqual(pool.stats(), {
    totalBlocks: 3,
    usedBlocks: 2,
    freeBlocks: 1,
    evictableBlocks: 0,
    utilization: 2 / 3,
  });
});

test('reserve is all or nothing: a failed reservation changes nothing', () => {
  const pool = new BlockPool(shape, 3);
  const a = new SequenceKv(pool);
  assert.equal(a.reserve(9), true); // 3 blocks
  a.commit(9);
  const b = new SequenceKv(pool);
  assert.equal(b.reserve(1), false);
  assert.deepEqual(b.blocks, []);
  assert.equal(pool.freeBlocks, 0);
  assert.equal(a.reserve(3), true); // fits in the last block's free slots
  assert.equal(a.reserve(4), false);
  assert.equal(a.blocks.length, 3);
  assert.equal(a.unusedSlots, 3);
  a.release();
  assert.equal(pool.freeBlocks, 3);
  assert.equal(b.reserve(12), true);
});

test('a fork shares the prompt blocks; writing after the fork copies the shared block', () => {
  const pool = new BlockPool(shape, 8);
  const parent = new SequenceKv(pool);
  parent.reserve(6);
  for (let p = 0; p < 6; p++) write(parent, p, 100 + p);
  parent.commit(6);
  const child = parent.fork();
  assert.deepEqual(child.blocks, parent.blocks);
  assert.equal(pool.refCount(parent.blocks[1]!), 2);
  // The child's next position falls in the shared second block: it gets its own copy.
  assert.equal(child.reserve(1), true);
  assert.notEqual(child.blocks[1], parent.blocks[1]);
  assert.equal(child.blocks[0], parent.blocks[0]); // full blocks stay shared
  write(child, 6, 900);
  child.commit(1);
  parent.reserve(1);
  write(parent, 6, 700);
  parent.commit(1);
  assert.deepEqual(read(child, 5), [105, -105]); // copied with the block
  assert.deepEqual(read(child, 6), [900, -900]);
  assert.deepEqual(read(parent, 6), [700, -700]);
  child.release();
  parent.release();
  assert.equal(pool.freeBlocks, 8);
});

test('a fork is only between steps: positions reserved and not yet written refuse it', () => {
  const pool = new BlockPool(shape, 8);
  const parent = new SequenceKv(pool);
  assert.ok(parent.reserve(8)); // room for positions 0‥7: blocks 0 and 1
  for (let p = 0; p < 2; p++) write(parent, p, 100 + p);
  parent.commit(2);
  // Block 1 holds no position yet; shared, the parent's writes to positions 4‥7 would land
  // in the child's cache with no copy. The fork is refused, and nothing changes.
  assert.throws(() => parent.fork(), /6 reserved positions are not written yet/);
  assert.equal(pool.freeBlocks, 6);
  for (let p = 2; p < 8; p++) write(parent, p, 100 + p);
  parent.commit(6);
  const child = parent.fork();
  assert.deepEqual(child.blocks, parent.blocks);
  assert.ok(child.reserve(1));
  write(child, 8, 900);
  child.commit(1);
  assert.deepEqual(read(parent, 7), [107, -107]);
  assert.deepEqual(read(child, 8), [900, -900]);
  child.release();
  parent.release();
  assert.equal(pool.freeBlocks, 8);
});

test('property: random sequences, forks and releases never mix positions and free every block', () => {
  for (let seed = 1; seed <= 30; seed++) {
    const random = createRandom(seed);
    const pool = new BlockPool(shape, 24);
    type Live = { kv: SequenceKv; markers: number[] };
    const live: Live[] = [];
    let nextMarker = 1;
    for (let step = 0; step < 300; step++) {
      const action = random.int(10);
      if (action < 2 || live.length === 0) {
        live.push({ kv: new SequenceKv(pool), markers: [] });
      } else if (action < 7) {
        const s = live[random.int(live.length)]!;
        const count = 1 + random.int(6);
        const before = { blocks: [...s.kv.blocks], free: pool.freeBlocks };
        if (s.kv.reserve(count)) {
          for (let i = 0; i < count; i++) {
            const marker = nextMarker++;
            write(s.kv, s.kv.numTokens + i, marker);
            s.markers.push(marker);
          }
          s.kv.commit(count);
        } else {
          assert.deepEqual([...s.kv.blocks], before.blocks, `seed ${seed}: failed reserve`);
          assert.equal(pool.freeBlocks, before.free);
        }
      } else if (action < 8) {
        const s = live[random.int(live.length)]!;
        live.push({ kv: s.kv.fork(), markers: [...s.markers] });
      } else {
        const [s] = live.splice(random.int(live.length), 1);
        s!.kv.release();
      }
      // Every live sequence reads back exactly what it wrote, at every position.
      for (const s of live) {
        assert.equal(s.kv.numTokens, s.markers.length);
        s.markers.forEach((marker, position) =>
          assert.deepEqual(read(s.kv, position), [marker, -marker], `seed ${seed} step ${step}`),
        );
      }
      // Accounting: a block is used exactly as often as block tables name it.
      const owners = new Map<number, number>();
      for (const s of live) for (const b of s.kv.blocks) owners.set(b, (owners.get(b) ?? 0) + 1);
      for (const [block, count] of owners) assert.equal(pool.refCount(block), count);
      assert.equal(pool.freeBlocks, pool.numBlocks - owners.size);
    }
    for (const s of live) s.kv.release();
    assert.equal(pool.freeBlocks, pool.numBlocks, `seed ${seed}: blocks leaked`);
  }
});
