// The array walk over tree-ensemble.ts's layout. Batch-major and blocked: for each block of
// rows, for each tree, for each row of the block. A block (blockRows × numFeatures values)
// stays in cache while every tree passes over it, and each tree's nodes stay hot while it
// runs over the block. Nothing is allocated per row.
//
// The numeric kernel walks eight rows through a tree side by side, each exactly the tree's
// depth in steps (leaves point at themselves), with no data-dependent branch: a step is
// six loads, a multiply, a compare and an index. Eight independent walks keep the CPU
// busy while each waits on its loads; with no branches there is nothing to mispredict. On
// balanced trees that beats generated if/else code by about 2× (docs/trees.md); on deep,
// lopsided trees the full-depth walk loses, and tree-predictor.ts picks generated code.
// Models with categorical or zero-as-missing splits take a branchy per-row walk here
// (predictLeaf, and any model the code generator declines).

import {
  nodeKind,
  nodeStride,
  splitStride,
  zeroThreshold,
  type TreeEnsemble,
} from './tree-ensemble.ts';

// Module-local copies: read through an import binding on every step, these cost the numeric
// kernel 7× (measured under tsx); local constants fold into the compiled code.
const nodeWidth = 4;
const splitWidth = 2;
const numericKind = 0;
const zeroAsMissingKind = 1;
const lightgbmCategoricalKind = 2;
const zeroLimit = 1.0000000180025095e-35;
if (
  nodeWidth !== nodeStride ||
  splitWidth !== splitStride ||
  numericKind !== nodeKind.numeric ||
  zeroAsMissingKind !== nodeKind.zeroAsMissing ||
  lightgbmCategoricalKind !== nodeKind.lightgbmCategorical ||
  zeroLimit !== zeroThreshold
) {
  throw new Error('traverse-ensemble.ts: constants out of step with tree-ensemble.ts');
}

export type FeatureRows = Float32Array | Float64Array;
export type MarginBuffer = Float32Array | Float64Array;

/** Rows per block: 128 rows × 30 features × 8 bytes = 30 KB, about an L1 data cache. */
export const blockRows = 128;
/** Rows walked side by side. */
const lanes = 8;

/**
 * Adds every tree's leaf value to `out` (numRows × numGroups, row-major), which the caller
 * has filled with the base margins.
 */
export function accumulateMargins(
  e: TreeEnsemble,
  rows: FeatureRows,
  numRows: number,
  out: MarginBuffer,
): void {
  if (e.kinds === null) accumulateNumeric(e, rows, numRows, out);
  else accumulateAny(e, rows, numRows, out);
}

/** The leaf (within its tree) each row reaches in each tree: numRows × numTrees. */
export function predictLeaves(e: TreeEnsemble, rows: FeatureRows, numRows: number): Int32Array {
  const out = new Int32Array(numRows * e.numTrees);
  for (let t = 0; t < e.numTrees; t += 1) {
    const root = e.treeRoot[t]!;
    const depth = e.treeDepth[t]!;
    const firstLeafNode = e.leafNodeBase + e.treeLeafBase[t]!;
    for (let r = 0; r < numRows; r += 1) {
      let node = root;
      for (let d = 0; d < depth; d += 1) node = stepAny(e, rows, node, r * e.numFeatures);
      out[r * e.numTrees + t] = node - firstLeafNode;
    }
  }
  return out;
}

function accumulateNumeric(
  e: TreeEnsemble,
  rows: FeatureRows,
  numRows: number,
  out: MarginBuffer,
): void {
  const { numTrees, numGroups: g, numFeatures: f, nodes, splits, leafValues } = e;
  const leafBase = e.leafNodeBase;
  for (let start = 0; start < numRows; start += blockRows) {
    const end = Math.min(numRows, start + blockRows);
    for (let t = 0; t < numTrees; t += 1) {
      const root = e.treeRoot[t]!;
      const depth = e.treeDepth[t]!;
      const group = e.treeGroup[t]!;
      let r = start;
      for (; r + lanes <= end; r += lanes) {
        const b = r * f;
        let n0 = root, n1 = root, n2 = root, n3 = root, n4 = root, n5 = root, n6 = root, n7 = root; // prettier-ignore
        for (let d = 0; d < depth; d += 1) {
          n0 = step(nodes, splits, rows, n0, b);
          n1 = step(nodes, splits, rows, n1, b + f);
          n2 = step(nodes, splits, rows, n2, b + 2 * f);
          n3 = step(nodes, splits, rows, n3, b + 3 * f);
          n4 = step(nodes, splits, rows, n4, b + 4 * f);
          n5 = step(nodes, splits, rows, n5, b + 5 * f);
          n6 = step(nodes, splits, rows, n6, b + 6 * f);
          n7 = step(nodes, splits, rows, n7, b + 7 * f);
        }
        const o = r * g + group;
        out[o]! += leafValues[n0 - leafBase]!;
        out[o + g]! += leafValues[n1 - leafBase]!;
        out[o + 2 * g]! += leafValues[n2 - leafBase]!;
        out[o + 3 * g]! += leafValues[n3 - leafBase]!;
        out[o + 4 * g]! += leafValues[n4 - leafBase]!;
        out[o + 5 * g]! += leafValues[n5 - leafBase]!;
        out[o + 6 * g]! += leafValues[n6 - leafBase]!;
        out[o + 7 * g]! += leafValues[n7 - leafBase]!;
      }
      for (; r < end; r += 1) {
        let node = root;
        for (let d = 0; d < depth; d += 1) node = step(nodes, splits, rows, node, r * f);
        out[r * g + group]! += leafValues[node - leafBase]!;
      }
    }
  }
}

function accumulateAny(
  e: TreeEnsemble,
  rows: FeatureRows,
  numRows: number,
  out: MarginBuffer,
): void {
  const { numTrees, numGroups: g, numFeatures: f, leafValues } = e;
  for (let start = 0; start < numRows; start += blockRows) {
    const end = Math.min(numRows, start + blockRows);
    for (let t = 0; t < numTrees; t += 1) {
      const root = e.treeRoot[t]!;
      const depth = e.treeDepth[t]!;
      const group = e.treeGroup[t]!;
      for (let r = start; r < end; r += 1) {
        let node = root;
        for (let d = 0; d < depth; d += 1) node = stepAny(e, rows, node, r * f);
        out[r * g + group]! += leafValues[node - e.leafNodeBase]!;
      }
    }
  }
}

/** One numeric step from node i for the row at `base`: c = (sign·x < threshold) ^ flip. */
function step(
  nodes: Int32Array,
  splits: Float64Array,
  rows: FeatureRows,
  i: number,
  base: number,
): number {
  const j = i * nodeWidth;
  const k = i * splitWidth;
  const below = (rows[base + nodes[j]!]! * splits[k]! < splits[k + 1]!) as unknown as number;
  return nodes[j + 1 + (below ^ nodes[j + 3]!)]!;
}

/** One step of any kind (see the kinds in tree-ensemble.ts). */
function stepAny(e: TreeEnsemble, rows: FeatureRows, i: number, base: number): number {
  const kind = e.kinds?.[i] ?? numericKind;
  if (kind === numericKind) return step(e.nodes, e.splits, rows, i, base);
  const j = i * nodeWidth;
  const k = i * splitWidth;
  const x = rows[base + e.nodes[j]!]!;
  let c: number;
  if (x !== x) {
    c = e.nodes[j + 3]!;
  } else if (kind === zeroAsMissingKind) {
    c = x >= -zeroLimit && x <= zeroLimit ? e.nodes[j + 3]! : x < e.splits[k + 1]! ? 0 : 1;
  } else {
    const invalid =
      kind === lightgbmCategoricalKind ? x <= -1 || x >= 2147483648 : x < 0 || x >= 16777216;
    if (invalid) {
      c = 1;
    } else {
      const category = x | 0; // truncation toward zero, like static_cast<int>
      const word = category >>> 5;
      const inSet =
        word < e.splits[k]! &&
        ((e.catBits[e.splits[k + 1]! + word]! >>> (category & 31)) & 1) === 1;
      c = inSet ? 0 : 1;
    }
  }
  return e.nodes[j + 1 + c]!;
}
