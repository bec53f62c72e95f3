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
}

const pageBytes = 65536;
/** Bytes left untouched at the start of memory (AssemblyScript's static area). */
const reservedBytes = 1024;

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
