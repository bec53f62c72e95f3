// The LLM engine's WebAssembly SIMD kernels (linear.as.ts → linear.wasm) in a WasmArena
// (src/core/wasm-arena.ts): everything a model multiplies — its weights once, at load, its KV
// cache, and its activations per step as scratch — lives in the kernels' own memory.
//
// Measured here (docs/llm-engine.md): the SIMD kernel runs y = x·Wᵀ at ~20–25 GFLOP/s on one
// thread against ~2 for scalar JavaScript loops; onnxruntime's GEMM costs ~15–19 µs a call,
// too much for decode-time products of a small model.

import { readFileSync } from 'node:fs';
import { WasmArena } from '../../core/wasm-arena.ts';
import { packPanels, type PackedMatrix } from './packed-matrix.ts';

const wasmModule = new WebAssembly.Module(readFileSync(new URL('./linear.wasm', import.meta.url)));

interface KernelExports {
  linear(x: number, rows: number, inF: number, w: number, outF: number, y: number): void;
  attendRow(
    q: number,
    numHeads: number,
    groupSize: number,
    headDim: number,
    keys: number,
    values: number,
    slots: number,
    visible: number,
    scale: number,
    out: number,
    scores: number,
  ): void;
  siluMul(gate: number, up: number, n: number): void;
  addInPlace(x: number, y: number, n: number): void;
  rmsNorm(x: number, weight: number, out: number, rows: number, width: number, eps: number): void;
  rope(data: number, rows: number, heads: number, headDim: number, cos: number, sin: number): void;
}

/** Scratch floats attendRow needs: a score row per head of a group, padded to 4 floats. */
export function attentionScratchFloats(groupSize: number, visible: number): number {
  return groupSize * ((visible + 3) & ~3);
}

export class KernelArena {
  private readonly arena: WasmArena<KernelExports>;
  private readonly kernels: KernelExports;
  /** The whole memory as floats (the memory never grows, so this view stays valid). */
  private readonly floats: Float32Array;

  /** An arena able to hold `bytes` (plus alignment). */
  constructor(bytes: number) {
    this.arena = new WasmArena<KernelExports>(wasmModule, bytes);
    this.kernels = this.arena.exports;
    this.floats = new Float32Array(this.arena.memory.buffer);
  }

  get memory(): WebAssembly.Memory {
    return this.arena.memory;
  }

  /** A zeroed float32 view of `count` elements, 16-byte aligned. */
  alloc(count: number): Float32Array {
    return new Float32Array(this.memory.buffer, this.arena.reserve(count * 4), count);
  }

  /** A zeroed int32 view of `count` elements, 16-byte aligned. */
  allocInt32(count: number): Int32Array {
    return new Int32Array(this.memory.buffer, this.arena.reserve(count * 4), count);
  }

  /** A copy of `data` inside the arena. */
  copyIn(data: Float32Array): Float32Array {
    const view = this.alloc(data.length);
    view.set(data);
    return view;
  }

  /** A weight matrix [rows, cols] copied in, in the layout `linear` reads (packed-matrix.ts). */
  copyInPacked(data: Float32Array, rows: number, cols: number): PackedMatrix {
    const view = this.alloc(rows * cols);
    packPanels(data, rows, cols, view);
    return { data: view, rows, cols };
  }

  /** The allocation point, to `reset` to once a step's scratch is no longer needed. */
  mark(): number {
    return this.arena.mark();
  }

  reset(mark: number): void {
    this.arena.reset(mark);
  }

  /**
   * Causal attention of one token row over `visible` cached positions, every head (see
   * attendRow in linear.as.ts). `slots[p]` is the byte offset of position p's kv head 0 from
   * the start of `keys` (and of `values`, laid out alike); `headDim` a multiple of 4;
   * `scores` scratch of `attentionScratchFloats(groupSize, visible)`. The row's query starts
   * at float `qAt` of `q`, its output at float `outAt` of `out`. All views into this arena.
   */
  attendRow(
    q: Float32Array,
    qAt: number,
    numHeads: number,
    groupSize: number,
    headDim: number,
    keys: Float32Array,
    values: Float32Array,
    slots: Int32Array,
    visible: number,
    scale: number,
    out: Float32Array,
    outAt: number,
    scores: Float32Array,
  ): void {
    this.kernels.attendRow(
      q.byteOffset + qAt * 4,
      numHeads,
      groupSize,
      headDim,
      keys.byteOffset,
      values.byteOffset,
      slots.byteOffset,
      visible,
      scale,
      out.byteOffset + outAt * 4,
      scores.byteOffset,
    );
  }

  /** gate[i] = silu(gate[i]) · up[i] over the first `n` floats (views into this arena). */
  siluMul(gate: Float32Array, up: Float32Array, n: number): void {
    this.kernels.siluMul(gate.byteOffset, up.byteOffset, n);
  }

  /** x[i] += y[i] over the first `n` floats (views into this arena). */
  addInPlace(x: Float32Array, y: Float32Array, n: number): void {
    this.kernels.addInPlace(x.byteOffset, y.byteOffset, n);
  }

  /** out[r] = x[r] / √(mean(x[r]²) + eps) ⊙ weight for `rows` rows of `width` (see linear.as.ts). */
  rmsNorm(
    x: Float32Array,
    weight: Float32Array,
    out: Float32Array,
    rows: number,
    width: number,
    eps: number,
  ): void {
    this.kernels.rmsNorm(x.byteOffset, weight.byteOffset, out.byteOffset, rows, width, eps);
  }

  /**
   * Rotates each head's (i, i + headDim/2) pairs of `rows` rows of `data` [rows, heads,
   * headDim] by the row's angles: `cos`, `sin` [rows, headDim/2].
   */
  rope(
    data: Float32Array,
    rows: number,
    heads: number,
    headDim: number,
    cos: Float32Array,
    sin: Float32Array,
  ): void {
    this.kernels.rope(data.byteOffset, rows, heads, headDim, cos.byteOffset, sin.byteOffset);
  }

  /**
   * Copies `count` floats from float `fromAt` of `from` to float `toAt` of `to`, both views
   * into this arena (one memmove, no views made).
   */
  copyFloats(
    to: Float32Array,
    toAt: number,
    from: Float32Array,
    fromAt: number,
    count: number,
  ): void {
    const target = to.byteOffset / 4 + toAt;
    const source = from.byteOffset / 4 + fromAt;
    this.floats.copyWithin(target, source, source + count);
  }

  /** Whether `view` lives in this arena's memory. */
  holds(view: ArrayBufferView): boolean {
    return this.arena.holds(view);
  }

  /**
   * y = x·Wᵀ (see linear.as.ts): W [outFeatures, inFeatures] packed by copyInPacked; every
   * array must be a view into this arena.
   */
  linear(
    x: Float32Array,
    rows: number,
    inFeatures: number,
    weight: PackedMatrix,
    outFeatures: number,
    y: Float32Array,
  ): void {
    const buffer = this.memory.buffer;
    if (x.buffer !== buffer || weight.data.buffer !== buffer || y.buffer !== buffer)
      throw new Error('linear: every operand must live in the kernel arena');
    if (weight.rows !== outFeatures || weight.cols !== inFeatures)
      throw new RangeError(
        `linear: a [${weight.rows}, ${weight.cols}] weight for [${outFeatures}, ${inFeatures}]`,
      );
    this.kernels.linear(
      x.byteOffset,
      rows,
      inFeatures,
      weight.data.byteOffset,
      outFeatures,
      y.byteOffset,
    );
  }
}
