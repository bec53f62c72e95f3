// The linear kernel's weight layout (src/llm/kernels/packed-matrix.ts): packing is a
// permutation that unpackRow undoes for every row, on shapes with and without a column tail
// and with and without rows left over after the panels of four; the arena refuses a packed
// matrix whose shape is not the product's.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { createRandom } from '../../../src/core/random.ts';
import { KernelArena } from '../../../src/llm/kernels/kernel-arena.ts';
import { packPanels, unpackRow } from '../../../src/llm/kernels/packed-matrix.ts';

const shapes: [number, number][] = [
  [1, 1],
  [3, 5],
  [4, 4],
  [4, 6],
  [5, 7],
  [8, 3],
  [9, 130],
  [12, 128],
];

test('every row comes back whole from the panel layout, which holds the same floats', () => {
  const random = createRandom(4);
  for (const [rows, cols] of shapes) {
    const source = Float32Array.from({ length: rows * cols }, () => random.next() - 0.5);
    const packed = new Float32Array(rows * cols);
    packPanels(source, rows, cols, packed);
    assert.deepEqual(
      Array.from(packed).sort((a, b) => a - b),
      Array.from(source).sort((a, b) => a - b),
      `[${rows}, ${cols}] is a permutation`,
    );
    const row = new Float32Array(cols + 2);
    for (let r = 0; r < rows; r++) {
      unpackRow({ data: packed, rows, cols }, r, row, 2);
      assert.deepEqual(row.subarray(2), source.subarray(r * cols, (r + 1) * cols), `row ${r}`);
    }
    assert.throws(() => unpackRow({ data: packed, rows, cols }, rows, row, 0), /outside/);
  }
});

test('four rows of a panel are interleaved four floats at a time, their tails after', () => {
  // Rows 0–3 of width 6: chunk 0 of each row, then the two-float tail of each.
  const source = Float32Array.from({ length: 4 * 6 }, (_, i) => i);
  const packed = new Float32Array(24);
  packPanels(source, 4, 6, packed);
  assert.deepEqual(
    Array.from(packed),
    [0, 1, 2, 3, 6, 7, 8, 9, 12, 13, 14, 15, 18, 19, 20, 21, 4, 5, 10, 11, 16, 17, 22, 23],
  );
});

test('the arena refuses a packed weight of another shape than the product', () => {
  const arena = new KernelArena(1 << 16);
  const w = arena.copyInPacked(new Float32Array(8 * 4), 8, 4);
  const x = arena.alloc(4);
  const y = arena.alloc(8);
  assert.throws(() => arena.linear(x, 1, 4, w, 4, y), /a \[8, 4\] weight for \[4, 4\]/);
  assert.throws(() => packPanels(new Float32Array(3), 2, 2, new Float32Array(4)), /needs 4/);
});
