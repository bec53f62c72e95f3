// The WebAssembly SIMD kernels against scalar JavaScript on random data of awkward shapes
// (odd widths, one row, rows not a multiple of two, outputs not a multiple of four; attention
// over every group size and head width the kernel's loops branch on, at lengths on and off
// multiples of four, through scrambled slots), and the committed linear.wasm against a fresh
// build of linear.as.ts.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRandom } from '../../../src/core/random.ts';
import { attentionScratchFloats, KernelArena } from '../../../src/llm/kernels/kernel-arena.ts';
import { linear } from '../../../src/llm/model/linear.ts';

const root = new URL('../../../', import.meta.url).pathname;

test('linear in WebAssembly equals the scalar kernel within float32 rounding', () => {
  const random = createRandom(9);
  const shapes: [number, number, number][] = [
    [1, 128, 384],
    [16, 128, 384],
    [3, 7, 5],
    [2, 4, 4],
    [5, 33, 10],
    [1, 1, 1],
    [7, 130, 9],
  ];
  const arena = new KernelArena(4 << 20);
  for (const [rows, inF, outF] of shapes) {
    const mark = arena.mark();
    const x = arena.copyIn(Float32Array.from({ length: rows * inF }, () => random.next() - 0.5));
    const plain = Float32Array.from({ length: outF * inF }, () => random.next() - 0.5);
    const w = arena.copyInPacked(plain, outF, inF);
    const y = arena.alloc(rows * outF);
    arena.linear(x, rows, inF, w, outF, y);
    const expected = new Float32Array(rows * outF);
    linear(x, rows, inF, plain, outF, expected);
    for (let i = 0; i < expected.length; i++) {
      assert.ok(
        Math.abs(y[i]! - expected[i]!) <= 1e-5 * Math.max(1, Math.abs(expected[i]!)),
        `[${rows}, ${inF}] × [${outF}, ${inF}]ᵀ at ${i}: ${y[i]} vs ${expected[i]}`,
      );
    }
    arena.reset(mark);
  }
});

/** Softmax attention of one row in float64, read through `slots` (float offsets). */
function referenceAttention(
  q: Float32Array,
  numHeads: number,
  groupSize: number,
  headDim: number,
  keys: Float32Array,
  values: Float32Array,
  slots: readonly number[],
  scale: number,
): Float64Array {
  const out = new Float64Array(numHeads * headDim);
  for (let h = 0; h < numHeads; h++) {
    const kv = Math.floor(h / groupSize) * headDim;
    const scores = slots.map((slot) => {
      let dot = 0;
      for (let j = 0; j < headDim; j++) dot += q[h * headDim + j]! * keys[slot + kv + j]!;
      return dot * scale;
    });
    const max = Math.max(...scores);
    const weights = scores.map((s) => Math.exp(s - max));
    const sum = weights.reduce((a, b) => a + b, 0);
    for (const [p, slot] of slots.entries())
      for (let j = 0; j < headDim; j++)
        out[h * headDim + j]! += (weights[p]! / sum) * values[slot + kv + j]!;
  }
  return out;
}

test('attention in WebAssembly equals float64 softmax attention over scrambled slots', () => {
  const random = createRandom(21);
  const arena = new KernelArena(8 << 20);
  // [numHeads, numKvHeads, headDim]: group sizes 1–4 (odd ones take the single-head loop),
  // head widths 4–24 (8-float chunks and a 4-float remainder).
  const shapes: [number, number, number][] = [
    [8, 2, 16],
    [6, 2, 4],
    [3, 1, 8],
    [4, 4, 12],
    [6, 3, 24],
    [1, 1, 4],
  ];
  for (const [numHeads, numKvHeads, headDim] of shapes) {
    const groupSize = numHeads / numKvHeads;
    const kvWidth = numKvHeads * headDim;
    for (const visible of [1, 3, 4, 5, 17, 64, 131]) {
      const mark = arena.mark();
      const capacity = 2 * visible + 7;
      // Keys spread widely enough that softmax is far from uniform.
      const keys = arena.copyIn(
        Float32Array.from({ length: capacity * kvWidth }, () => 4 * (random.next() - 0.5)),
      );
      const values = arena.copyIn(
        Float32Array.from({ length: capacity * kvWidth }, () => random.next() - 0.5),
      );
      const q = arena.copyIn(
        Float32Array.from({ length: numHeads * headDim }, () => 4 * (random.next() - 0.5)),
      );
      const order = Array.from({ length: capacity }, (_, i) => i);
      for (let i = order.length - 1; i > 0; i--) {
        const j = random.int(i + 1);
        [order[i], order[j]] = [order[j]!, order[i]!];
      }
      const slots = order.slice(0, visible).map((position) => position * kvWidth);
      const byteSlots = arena.allocInt32(visible);
      byteSlots.set(slots.map((slot) => slot * 4));
      // The row is the second of two: the kernel reads and writes at the offsets it is given.
      const width = numHeads * headDim;
      const queries = arena.alloc(2 * width);
      queries.set(q, width);
      const out = arena.alloc(2 * width);
      const scores = arena.alloc(attentionScratchFloats(groupSize, visible));
      const scale = 1 / Math.sqrt(headDim);
      arena.attendRow(
        queries,
        width,
        numHeads,
        groupSize,
        headDim,
        keys,
        values,
        byteSlots,
        visible,
        scale,
        out,
        width,
        scores,
      );
      assert.ok(
        out.subarray(0, width).every((value) => value === 0),
        'the first row untouched',
      );
      const expected = referenceAttention(
        q,
        numHeads,
        groupSize,
        headDim,
        keys,
        values,
        slots,
        scale,
      );
      for (let i = 0; i < expected.length; i++)
        assert.ok(
          Math.abs(out[width + i]! - expected[i]!) <= 2e-6,
          `heads ${numHeads}/${numKvHeads}×${headDim}, ${visible} positions, at ${i}: ${out[width + i]} vs ${expected[i]}`,
        );
      arena.reset(mark);
    }
  }
});

test('silu·up and the in-place add in WebAssembly equal float64 arithmetic', () => {
  const random = createRandom(5);
  const arena = new KernelArena(1 << 20);
  for (const n of [1, 3, 4, 7, 384, 1001]) {
    const mark = arena.mark();
    // Gates over the whole useful range, and the extremes where e^-g under- or overflows.
    const gateValues = Float32Array.from({ length: n }, () => 24 * (random.next() - 0.5));
    if (n > 4) gateValues.set([0, -100, 100, -88.5], 0);
    const upValues = Float32Array.from({ length: n }, () => random.next() - 0.5);
    const gate = arena.copyIn(gateValues);
    const up = arena.copyIn(upValues);
    arena.siluMul(gate, up, n);
    for (let i = 0; i < n; i++) {
      const g = gateValues[i]!;
      const expected = (g / (1 + Math.exp(-g))) * upValues[i]!;
      assert.ok(
        Math.abs(gate[i]! - expected) <= 1e-6 * Math.max(1, Math.abs(expected)),
        `silu(${g}) · ${upValues[i]} at ${i} of ${n}: ${gate[i]} vs ${expected}`,
      );
    }
    const x = arena.copyIn(upValues);
    arena.addInPlace(x, gate, n);
    for (let i = 0; i < n; i++) assert.equal(x[i], Math.fround(upValues[i]! + gate[i]!));
    arena.reset(mark);
  }
});

test('RMSNorm and RoPE in WebAssembly equal float64 arithmetic rounded to float32', () => {
  const random = createRandom(17);
  const arena = new KernelArena(1 << 20);
  for (const [rows, width] of [
    [1, 128],
    [3, 7],
    [5, 24],
    [2, 1],
  ] as const) {
    const mark = arena.mark();
    const xValues = Float32Array.from({ length: rows * width }, () => 6 * (random.next() - 0.5));
    const weightValues = Float32Array.from({ length: width }, () => random.next() + 0.5);
    const x = arena.copyIn(xValues);
    const weight = arena.copyIn(weightValues);
    const out = arena.alloc(rows * width);
    arena.rmsNorm(x, weight, out, rows, width, 1e-5);
    for (let r = 0; r < rows; r++) {
      let squares = 0;
      for (let i = 0; i < width; i++) squares += xValues[r * width + i]! ** 2;
      const inverse = Math.fround(1 / Math.sqrt(Math.fround(squares / width) + 1e-5));
      for (let i = 0; i < width; i++) {
        const expected = Math.fround(
          weightValues[i]! * Math.fround(xValues[r * width + i]! * inverse),
        );
        assert.equal(out[r * width + i], expected, `rmsNorm [${rows}, ${width}] at ${r}, ${i}`);
      }
    }
    arena.reset(mark);
  }
  for (const [rows, heads, headDim] of [
    [1, 8, 16],
    [3, 2, 4],
    [2, 3, 6],
    [4, 1, 128],
  ] as const) {
    const mark = arena.mark();
    const half = headDim / 2;
    const dataValues = Float32Array.from(
      { length: rows * heads * headDim },
      () => random.next() - 0.5,
    );
    const angles = Array.from({ length: rows * half }, () => 10 * random.next());
    const cos = arena.copyIn(Float32Array.from(angles, Math.cos));
    const sin = arena.copyIn(Float32Array.from(angles, Math.sin));
    const data = arena.copyIn(dataValues);
    arena.rope(data, rows, heads, headDim, cos, sin);
    for (let r = 0; r < rows; r++)
      for (let h = 0; h < heads; h++)
        for (let i = 0; i < half; i++) {
          const at = (r * heads + h) * headDim + i;
          const [a, b] = [dataValues[at]!, dataValues[at + half]!];
          const [c, s] = [cos[r * half + i]!, sin[r * half + i]!];
          // float32 arithmetic, as PyTorch's q·cos + rotate_half(q)·sin
          const f = Math.fround;
          assert.equal(data[at], f(f(a * c) - f(b * s)), `rope a at ${r}, ${h}, ${i}`);
          assert.equal(data[at + half], f(f(b * c) + f(a * s)), `rope b at ${r}, ${h}, ${i}`);
        }
    arena.reset(mark);
  }
});

test('operands outside the arena are refused; an exhausted arena says so', () => {
  const arena = new KernelArena(1024);
  const inside = arena.alloc(4);
  assert.throws(
    () => arena.linear(new Float32Array(4), 1, 4, { data: inside, rows: 1, cols: 4 }, 1, inside),
    /must live in the kernel arena/,
  );
  assert.throws(() => arena.alloc(1 << 20), /arena exhausted/);
});

for (const [source, wasm, simd] of [
  ['src/llm/kernels/linear.as.ts', 'src/llm/kernels/linear.wasm', true],
  ['src/runtimes/trees/wasm/tree-walk.as.ts', 'src/runtimes/trees/wasm/tree-walk.wasm', false],
] as const) {
  test(`the committed ${wasm} is what its source compiles to`, () => {
    const dir = mkdtempSync(join(tmpdir(), 'kiln-asc-'));
    try {
      const out = join(dir, 'out.wasm');
      const build = spawnSync(
        process.execPath,
        [
          join(root, 'node_modules/assemblyscript/bin/asc.js'),
          join(root, source),
          ...(simd ? ['--enable', 'simd'] : []),
          '-O3',
          '--runtime',
          'stub',
          '--importMemory',
          '--noAssert',
          '--use',
          'abort=',
          '-o',
          out,
        ],
        { encoding: 'utf8' },
      );
      assert.equal(build.status, 0, build.stderr);
      assert.ok(
        readFileSync(out).equals(readFileSync(join(root, wasm))),
        `run \`npm run build:kernels\` and commit ${wasm}`,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
}
