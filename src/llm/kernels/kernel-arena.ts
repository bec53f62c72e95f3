// The WebAssembly SIMD kernels (linear.as.ts → linear.wasm) and the memory they work in.
// A kernel can only read memory of its own instance, so everything a model multiplies —
// its weights once, at load, and its activations per step — lives in one arena: a
// WebAssembly.Memory sized up front (never grown, so views into it stay valid), handed out
// by a bump allocator with a stack discipline for per-step scratch:
//
//   [ reserved | weights (permanent) | step scratch (mark … reset) | free ]
//
// Measured here (docs/llm-engine.md): the SIMD kernel runs y = x·Wᵀ at ~20–25 GFLOP/s on one
// thread against ~2 for scalar JavaScript loops; onnxruntime's GEMM costs ~15–19 µs a call,
// too much for decode-time products of a small model.

import { readFileSync } from 'node:fs';

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
}

const pageBytes = 65536;
/**
 * Bytes left untouched at the start of memory: AssemblyScript places its static data there
 * from offset 1024 (the lookup tables of Mathf.exp, ~2 KB). One page keeps clear of it.
 */
const reservedBytes = pageBytes;

export class KernelArena {
  readonly memory: WebAssembly.Memory;
  private readonly kernels: KernelExports;
  private top = reservedBytes;
  private readonly capacity: number;

  /** An arena able to hold `bytes` (plus alignment). */
  constructor(bytes: number) {
    const pages = Math.ceil((bytes + reservedBytes + 64 * 1024) / pageBytes);
    this.memory = new WebAssembly.Memory({ initial: pages, maximum: pages });
    this.capacity = pages * pageBytes;
    const instance = new WebAssembly.Instance(wasmModule, { env: { memory: this.memory } });
    this.kernels = instance.exports as unknown as KernelExports;
  }

  /** A zeroed float32 view of `count` elements, 16-byte aligned. */
  alloc(count: number): Float32Array {
    const start = (this.top + 15) & ~15;
    const end = start + count * 4;
    if (end > this.capacity)
      throw new RangeError(`kernel arena exhausted: ${end} of ${this.capacity} bytes`);
    this.top = end;
    const view = new Float32Array(this.memory.buffer, start, count);
    view.fill(0);
    return view;
  }

  /** A zeroed int32 view of `count` elements, 16-byte aligned. */
  allocInt32(count: number): Int32Array {
    const floats = this.alloc(count);
    return new Int32Array(floats.buffer, floats.byteOffset, count);
  }

  /** A copy of `data` inside the arena. */
  copyIn(data: Float32Array): Float32Array {
    const view = this.alloc(data.length);
    view.set(data);
    return view;
  }

  /** The allocation point, to `reset` to once a step's scratch is no longer needed. */
  mark(): number {
    return this.top;
  }

  reset(mark: number): void {
    this.top = mark;
  }

  /**
   * Causal attention of one token row over `visible` cached positions, every head (see
   * attendRow in linear.as.ts). `slots[p]` is the byte offset of position p's kv head 0 from
   * the start of `keys` (and of `values`, laid out alike). All views into this arena.
   */
  attendRow(
    q: Float32Array,
    numHeads: number,
    groupSize: number,
    headDim: number,
    keys: Float32Array,
    values: Float32Array,
    slots: Int32Array,
    visible: number,
    scale: number,
    out: Float32Array,
    scores: Float32Array,
  ): void {
    this.kernels.attendRow(
      q.byteOffset,
      numHeads,
      groupSize,
      headDim,
      keys.byteOffset,
      values.byteOffset,
      slots.byteOffset,
      visible,
      scale,
      out.byteOffset,
      scores.byteOffset,
    );
  }

  /** Whether `view` lives in this arena's memory. */
  holds(view: ArrayBufferView): boolean {
    return view.buffer === this.memory.buffer;
  }

  /** y = x·Wᵀ (see linear.as.ts); every array must be a view into this arena. */
  linear(
    x: Float32Array,
    rows: number,
    inFeatures: number,
    weight: Float32Array,
    outFeatures: number,
    y: Float32Array,
  ): void {
    const buffer = this.memory.buffer;
    if (x.buffer !== buffer || weight.buffer !== buffer || y.buffer !== buffer)
      throw new Error('linear: every operand must live in the kernel arena');
    this.kernels.linear(
      x.byteOffset,
      rows,
      inFeatures,
      weight.byteOffset,
      outFeatures,
      y.byteOffset,
    );
  }
}
