// AssemblyScript source of the tree walk in WebAssembly (compiled by `npm run build:kernels`
// to tree-walk.wasm, committed). The same algorithm as accumulateNumeric in
// traverse-ensemble.ts: blocks of rows × trees, eight rows walked side by side, each exactly
// the tree's depth in branch-free steps:
//   below = (x · sign < threshold) as 0/1;   next = nodes[4i + 1 + (below ^ flip)]
// All offsets are byte offsets into the module's memory. Two entry points: float32 features
// and margins (XGBoost), float64 (LightGBM); the arithmetic is float64 in both, as in JS.

// T is the element type of the features and of the margins: f32 or f64.
@inline
function step<T>(nodes: usize, splits: usize, rows: usize, i: i32, base: i32): i32 {
  const j = (<usize>i) << 4; // 4 i32 a node
  const k = (<usize>i) << 4; // 2 f64 a split
  const x = <f64>load<T>(rows + (<usize>(base + load<i32>(nodes + j))) * sizeof<T>());
  const below = <i32>(x * load<f64>(splits + k) < load<f64>(splits + k + 8));
  return load<i32>(nodes + j + ((<usize>(1 + (below ^ load<i32>(nodes + j + 12)))) << 2));
}

@inline
function add<T>(out: usize, index: i32, value: f64): void {
  const at = out + (<usize>index) * sizeof<T>();
  store<T>(at, <T>(<f64>load<T>(at) + value));
}

@inline
function leaf(leafValues: usize, node: i32, leafBase: i32): f64 {
  return load<f64>(leafValues + ((<usize>(node - leafBase)) << 3));
}

@inline
function accumulate<T>(
  nodes: usize,
  splits: usize,
  roots: usize,
  depths: usize,
  groups: usize,
  numTrees: i32,
  leafValues: usize,
  leafBase: i32,
  numGroups: i32,
  rows: usize,
  numRows: i32,
  numFeatures: i32,
  out: usize,
): void {
  const g = numGroups;
  const f = numFeatures;
  for (let start = 0; start < numRows; start += 128) {
    const end = min(numRows, start + 128);
    for (let t = 0; t < numTrees; t++) {
      const root = load<i32>(roots + ((<usize>t) << 2));
      const depth = load<i32>(depths + ((<usize>t) << 2));
      const group = load<i32>(groups + ((<usize>t) << 2));
      let r = start;
      for (; r + 8 <= end; r += 8) {
        const b = r * f;
        let n0 = root, n1 = root, n2 = root, n3 = root, n4 = root, n5 = root, n6 = root, n7 = root;
        for (let d = 0; d < depth; d++) {
          n0 = step<T>(nodes, splits, rows, n0, b);
          n1 = step<T>(nodes, splits, rows, n1, b + f);
          n2 = step<T>(nodes, splits, rows, n2, b + 2 * f);
          n3 = step<T>(nodes, splits, rows, n3, b + 3 * f);
          n4 = step<T>(nodes, splits, rows, n4, b + 4 * f);
          n5 = step<T>(nodes, splits, rows, n5, b + 5 * f);
          n6 = step<T>(nodes, splits, rows, n6, b + 6 * f);
          n7 = step<T>(nodes, splits, rows, n7, b + 7 * f);
        }
        const o = r * g + group;
        add<T>(out, o, leaf(leafValues, n0, leafBase));
        add<T>(out, o + g, leaf(leafValues, n1, leafBase));
        add<T>(out, o + 2 * g, leaf(leafValues, n2, leafBase));
        add<T>(out, o + 3 * g, leaf(leafValues, n3, leafBase));
        add<T>(out, o + 4 * g, leaf(leafValues, n4, leafBase));
        add<T>(out, o + 5 * g, leaf(leafValues, n5, leafBase));
        add<T>(out, o + 6 * g, leaf(leafValues, n6, leafBase));
        add<T>(out, o + 7 * g, leaf(leafValues, n7, leafBase));
      }
      for (; r < end; r++) {
        let node = root;
        for (let d = 0; d < depth; d++) node = step<T>(nodes, splits, rows, node, r * f);
        add<T>(out, r * g + group, leaf(leafValues, node, leafBase));
      }
    }
  }
}

/** float32 features and margins (XGBoost). */
export function accumulate32(
  nodes: usize, splits: usize, roots: usize, depths: usize, groups: usize, numTrees: i32,
  leafValues: usize, leafBase: i32, numGroups: i32, rows: usize, numRows: i32,
  numFeatures: i32, out: usize,
): void {
  accumulate<f32>(nodes, splits, roots, depths, groups, numTrees, leafValues, leafBase,
    numGroups, rows, numRows, numFeatures, out);
}

/** float64 features and margins (LightGBM). */
export function accumulate64(
  nodes: usize, splits: usize, roots: usize, depths: usize, groups: usize, numTrees: i32,
  leafValues: usize, leafBase: i32, numGroups: i32, rows: usize, numRows: i32,
  numFeatures: i32, out: usize,
): void {
  accumulate<f64>(nodes, splits, roots, depths, groups, numTrees, leafValues, leafBase,
    numGroups, rows, numRows, numFeatures, out);
}
