// The layout the WebAssembly linear kernel reads its weights in: panels of four rows,
// interleaved four floats at a time, so that the kernel, which computes four outputs together,
// reads the weights as ONE sequential stream instead of four streams a row apart. Measured on
// this machine (AMD EPYC Zen 5, one thread, a [32000, 768] matrix from DRAM): four interleaved
// rows read at ~11 GB/s, one sequential stream at ~25 GB/s, the machine's read bandwidth. A
// decode step of a large model is a stream of weights, so this is the step's speed.
//
// W [rows, cols] row-major becomes, with vecEnd = cols & ~3 and tail = cols − vecEnd:
//   panel p (rows 4p … 4p+3), at float p · 4 · cols:
//     for each chunk c < vecEnd / 4:   W[4p+0][4c…4c+3], W[4p+1][4c…4c+3], W[4p+2][…], W[4p+3][…]
//     then the tails:                  W[4p+0][vecEnd…cols), W[4p+1][…], W[4p+2][…], W[4p+3][…]
//   the last rows % 4 rows, as they are, after the panels.
// Row o's data starts at float o · cols either way (a panel holds exactly its four rows), and
// the kernel adds the products of every output in the same order as before: the layout
// changes where the weights are read from, not one bit of any result.

/** A weight matrix in the kernel's panel layout (see above). */
export interface PackedMatrix {
  readonly data: Float32Array;
  readonly rows: number;
  readonly cols: number;
}

/** Writes `source` ([rows, cols], row-major) into `target` in the panel layout. */
export function packPanels(
  source: Float32Array,
  rows: number,
  cols: number,
  target: Float32Array,
): void {
  if (source.length !== rows * cols || target.length !== rows * cols)
    throw new RangeError(
      `packPanels: [${rows}, ${cols}] needs ${rows * cols} floats, got ${source.length} in and ${target.length} out`,
    );
  const vecEnd = cols & ~3;
  const tail = cols - vecEnd;
  const panels = rows >> 2;
  for (let p = 0; p < panels; p++) {
    const base = p * 4 * cols;
    for (let r = 0; r < 4; r++) {
      const row = (4 * p + r) * cols;
      for (let c = 0; c < vecEnd; c += 4) {
        const at = base + c * 4 + r * 4;
        target[at] = source[row + c]!;
        target[at + 1] = source[row + c + 1]!;
        target[at + 2] = source[row + c + 2]!;
        target[at + 3] = source[row + c + 3]!;
      }
      const tailAt = base + 4 * vecEnd + r * tail;
      for (let j = 0; j < tail; j++) target[tailAt + j] = source[row + vecEnd + j]!;
    }
  }
  const rest = panels * 4 * cols;
  target.set(source.subarray(rest), rest);
}

/** Row `row` of a packed matrix, written to `into` at float `at` (an embedding lookup). */
export function unpackRow(matrix: PackedMatrix, row: number, into: Float32Array, at: number): void {
  const { data, rows, cols } = matrix;
  if (!Number.isInteger(row) || row < 0 || row >= rows)
    throw new RangeError(`row ${row} is outside [0, ${rows})`);
  const start = row * cols;
  if (row >= (rows & ~3)) {
    into.set(data.subarray(start, start + cols), at);
    return;
  }
  const vecEnd = cols & ~3;
  const tail = cols - vecEnd;
  const r = row & 3;
  const base = (row - r) * cols;
  for (let c = 0; c < vecEnd; c += 4) {
    const from = base + c * 4 + r * 4;
    into[at + c] = data[from]!;
    into[at + c + 1] = data[from + 1]!;
    into[at + c + 2] = data[from + 2]!;
    into[at + c + 3] = data[from + 3]!;
  }
  const tailAt = base + 4 * vecEnd + r * tail;
  for (let j = 0; j < tail; j++) into[at + vecEnd + j] = data[tailAt + j]!;
}
