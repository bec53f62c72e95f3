// The array walk of traverse-ensemble.ts (accumulateNumeric) in WebAssembly
// (wasm/tree-walk.as.ts → tree-walk.wasm, committed; `npm run build:kernels` remakes it).
// Same steps, same float64 arithmetic, same float32 or float64 sums, so the margins are
// bit-identical to the JavaScript walk's (tested); measured here on the bench model (200
// trees of depth 6): 1.5 µs a row against 3.4 µs at 16 rows, 1.5 against 2.5 at 10,000.
//
// The module reads only its own memory (a WasmArena, src/core/wasm-arena.ts): the ensemble's
// arrays are copied in once, and each call copies its rows and margins through a scratch
// area, in chunks of up to 1,024 rows — fewer for wide models, so the scratch stays within
// 8 MiB however many features the model has.

import { readFileSync } from 'node:fs';
import { WasmArena } from '../../core/wasm-arena.ts';
import type { MarginKernel } from './compile-ensemble.ts';
import type { TreeEnsemble } from './tree-ensemble.ts';

const wasmModule = new WebAssembly.Module(
  readFileSync(new URL('./wasm/tree-walk.wasm', import.meta.url)),
);

interface TreeWalkExports {
  readonly accumulate32: (...args: number[]) => void;
  readonly accumulate64: (...args: number[]) => void;
}

const maxChunkRows = 1024;
const scratchBudgetBytes = 8 * 1024 * 1024;
/** The ensemble's arrays must leave room under wasm32's 4 GiB (less the arena's own pages). */
const maxArenaBytes = 4 * 2 ** 30 - 2 ** 20;

export interface WasmTreeKernel {
  readonly kernel: MarginKernel;
  /** Bytes of WebAssembly memory it holds (the ensemble's copy and the scratch). */
  readonly memoryBytes: number;
}

/**
 * A margin kernel for a numeric-only ensemble (no categorical or zero-as-missing splits),
 * or null for one it cannot walk (or that does not fit in wasm32 memory: the JavaScript walk
 * serves it). `float32`: XGBoost's float32 features and sums.
 */
export function createWasmTreeKernel(e: TreeEnsemble, float32: boolean): WasmTreeKernel | null {
  if (e.kinds !== null) return null;
  const element = float32 ? 4 : 8;
  const arrays = [e.nodes, e.splits, e.treeRoot, e.treeDepth, e.treeGroup, e.leafValues];
  const rowBytes = (e.numFeatures + e.numGroups) * element;
  const chunkRows = Math.max(1, Math.min(maxChunkRows, Math.floor(scratchBudgetBytes / rowBytes)));
  const bytes = arrays.reduce((sum, a) => sum + a.byteLength + 16, 0) + chunkRows * rowBytes + 64;
  if (bytes > maxArenaBytes) return null;
  const arena = new WasmArena<TreeWalkExports>(wasmModule, bytes);
  const nodes = arena.place(e.nodes);
  const splits = arena.place(e.splits);
  const roots = arena.place(e.treeRoot);
  const depths = arena.place(e.treeDepth);
  const groups = arena.place(e.treeGroup);
  const leafValues = arena.place(e.leafValues);
  const Elements = float32 ? Float32Array : Float64Array;
  const buffer = arena.memory.buffer;
  const rowsCount = chunkRows * e.numFeatures;
  const rowsView = new Elements(buffer, arena.reserve(rowsCount * element), rowsCount);
  const marginsCount = chunkRows * e.numGroups;
  const marginsView = new Elements(buffer, arena.reserve(marginsCount * element), marginsCount);
  const kernels = arena.exports;
  const accumulate = float32 ? kernels.accumulate32 : kernels.accumulate64;
  const f = e.numFeatures;
  const g = e.numGroups;
  const kernel: MarginKernel = (rows, numRows, out) => {
    for (let start = 0; start < numRows; start += chunkRows) {
      const n = Math.min(chunkRows, numRows - start);
      rowsView.set(rows.subarray(start * f, (start + n) * f));
      marginsView.set(out.subarray(start * g, (start + n) * g));
      accumulate(
        nodes,
        splits,
        roots,
        depths,
        groups,
        e.numTrees,
        leafValues,
        e.leafNodeBase,
        g,
        rowsView.byteOffset,
        n,
        f,
        marginsView.byteOffset,
      );
      out.set(marginsView.subarray(0, n * g), start * g);
    }
  };
  return { kernel, memoryBytes: arena.memory.buffer.byteLength };
}
