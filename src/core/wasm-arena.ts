// One instance of a WebAssembly kernel module and the memory it works in. A kernel reads only
// its own instance's memory, so what it computes on is copied in: data that lives as long as
// the instance (weights, a tree ensemble) once, per-call data as scratch. The memory is sized
// up front and never grown, so views into it stay valid; a bump allocator hands it out, with
// a stack discipline (mark … reset) for scratch:
//
//   [ reserved (the module's static data) | long-lived data | scratch | free ]

const pageBytes = 65536;
/**
 * Bytes left untouched at the start of memory: AssemblyScript places its static data there
 * from offset 1024 (Mathf.exp's tables, ~2 KB, for one). One page keeps clear of it.
 */
const reservedBytes = pageBytes;

export class WasmArena<Exports> {
  readonly memory: WebAssembly.Memory;
  readonly exports: Exports;
  private top = reservedBytes;
  private readonly capacity: number;

  /** An instance of `module` (which imports `env.memory`) with room for `bytes` of data. */
  constructor(module: WebAssembly.Module, bytes: number) {
    const pages = Math.ceil((bytes + reservedBytes + 64 * 1024) / pageBytes);
    this.memory = new WebAssembly.Memory({ initial: pages, maximum: pages });
    this.capacity = pages * pageBytes;
    this.exports = new WebAssembly.Instance(module, { env: { memory: this.memory } })
      .exports as unknown as Exports;
  }

  /** The byte offset of `bytes` zeroed bytes, 16-byte aligned. */
  reserve(bytes: number): number {
    const start = Math.ceil(this.top / 16) * 16; // not `& ~15`: offsets pass 2³¹
    const end = start + bytes;
    if (end > this.capacity)
      throw new RangeError(`kernel arena exhausted: ${end} of ${this.capacity} bytes`);
    this.top = end;
    new Uint8Array(this.memory.buffer, start, bytes).fill(0);
    return start;
  }

  /** The byte offset of a copy of `data`. */
  place(data: ArrayBufferView): number {
    const at = this.reserve(data.byteLength);
    new Uint8Array(this.memory.buffer, at, data.byteLength).set(
      new Uint8Array(data.buffer, data.byteOffset, data.byteLength),
    );
    return at;
  }

  /** The allocation point, to `reset` to once scratch is no longer needed. */
  mark(): number {
    return this.top;
  }

  reset(mark: number): void {
    this.top = mark;
  }

  /** Whether `view` lives in this arena's memory. */
  holds(view: ArrayBufferView): boolean {
    return view.buffer === this.memory.buffer;
  }
}
