// The WebAssembly SIMD kernel against the scalar JavaScript one on random data of awkward
// shapes (odd widths, one row, rows not a multiple of two, outputs not a multiple of four),
// and the committed linear.wasm against a fresh build of linear.as.ts.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRandom } from '../../../src/core/random.ts';
import { KernelArena } from '../../../src/llm/kernels/kernel-arena.ts';
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
    const w = arena.copyIn(Float32Array.from({ length: outF * inF }, () => random.next() - 0.5));
    const y = arena.alloc(rows * outF);
    arena.linear(x, rows, inF, w, outF, y);
    const expected = new Float32Array(rows * outF);
    linear(x, rows, inF, w, outF, expected);
    for (let i = 0; i < expected.length; i++) {
      assert.ok(
        Math.abs(y[i]! - expected[i]!) <= 1e-5 * Math.max(1, Math.abs(expected[i]!)),
        `[${rows}, ${inF}] × [${outF}, ${inF}]ᵀ at ${i}: ${y[i]} vs ${expected[i]}`,
      );
    }
    arena.reset(mark);
  }
});

test('operands outside the arena are refused; an exhausted arena says so', () => {
  const arena = new KernelArena(1024);
  const inside = arena.alloc(4);
  assert.throws(
    () => arena.linear(new Float32Array(4), 1, 4, inside, 1, inside),
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
