// A tree ensemble flattened into typed arrays: the one layout both loaders (XGBoost, LightGBM)
// build and the kernels (traverse-ensemble.ts) read. Nothing here knows which library made
// the trees: each loader rewrites its library's split rule into the single rule below.
//
//   node i           nodes: Int32Array, 4 per node            splits: Float64Array, 2 per node
//   ┌──────────────┬──────────┬──────────┬──────┐          ┌──────┬───────────┐
//   │ feature      │ child 0  │ child 1  │ flip │          │ sign │ threshold │
//   └──────────────┴──────────┴──────────┴──────┘          └──────┴───────────┘
//   internal nodes of tree 0 │ … of tree 1 │ … │ leaves of every tree (leafNodeBase on)
//
//   step:  c = ((sign · x) < threshold) XOR flip;   next = child c    (child 0 is "yes")
//
// One rule covers both libraries' numeric splits and their missing values, with no branch:
//   - XGBoost sends x < t left, NaN to the default child. Default right: sign 1, threshold t,
//     flip 1 (c = !(x < t), so NaN → 1 = right). Default left: c must be (x >= t), and
//     x >= t ⇔ -x <= -t ⇔ -x < nextUp(-t) for every double x: sign -1, threshold
//     nextUp(-t), flip 0, and NaN → 0 = left.
//   - LightGBM sends x <= t left: x <= t ⇔ x < nextUp(t), then the same two cases; with
//     missing type None, NaN goes where 0.0 goes (LightGBM turns NaN into 0).
// (Thresholds of ±Infinity, which neither library writes, would misplace x = ±Infinity.)
//
// Leaves are nodes too: a leaf's children are itself, so a walk of exactly the tree's depth
// ends on the leaf whatever path it took (no "is this a leaf?" branch). Leaf node
// leafNodeBase + k holds leafValues[k].
//
// Splits a comparison cannot express carry a kind (kinds is null when every node is plain
// numeric, so the fast kernel never reads it); for them `flip` is the branch NaN takes:
//   kind 1  LightGBM zero-as-missing: NaN or |x| <= 1e-35 (kZeroThreshold) → branch `flip`;
//           else x < threshold → 0 (threshold already nextUp'd)
//   kind 2  LightGBM categorical: NaN → `flip`; trunc(x) < 0 or x >= 2^31 → 1;
//           category in the bitset → 0, else 1
//   kind 3  XGBoost categorical: NaN → `flip`; x < 0 or x >= 2^24 → 1; trunc(x) in the
//           set → 0, else 1 (the loader puts XGBoost's right child, the listed categories'
//           side, in child 0)
// A categorical node's bitset is catBits[start .. start + words) with start in the
// threshold slot and words in the sign slot; bit c%32 of word c/32 (LightGBM's layout).

export const nodeStride = 4;
export const splitStride = 2;

export const nodeKind = {
  numeric: 0,
  zeroAsMissing: 1,
  lightgbmCategorical: 2,
  xgboostCategorical: 3,
} as const;

/** LightGBM's kZeroThreshold: `const double kZeroThreshold = 1e-35f` (a float literal). */
export const zeroThreshold = Math.fround(1e-35);

export interface TreeEnsemble {
  readonly numFeatures: number;
  /** Margin columns: classes for multiclass models, else 1. */
  readonly numGroups: number;
  readonly numTrees: number;
  /** Per tree: its root node (a leaf node for a single-leaf tree). */
  readonly treeRoot: Int32Array;
  /** Per tree: steps from the root to its deepest leaf. */
  readonly treeDepth: Int32Array;
  /** Per tree: the margin column it adds to. */
  readonly treeGroup: Int32Array;
  /** Per tree: its first leaf id, so predictLeaf can report leaves per tree. */
  readonly treeLeafBase: Int32Array;
  readonly nodes: Int32Array;
  readonly splits: Float64Array;
  readonly kinds: Uint8Array | null;
  readonly catBits: Uint32Array;
  /** Node id of leaf 0. */
  readonly leafNodeBase: number;
  readonly leafValues: Float64Array;
  /** Σ over trees of the deepest leaf's depth: steps the fixed-depth kernel takes per row. */
  readonly sumTreeDepth: number;
  /** Σ over trees of the mean leaf depth: about the steps a row's real paths take. */
  readonly sumMeanLeafDepth: number;
  readonly maxTreeDepth: number;
  /** Internal nodes of the largest tree. */
  readonly maxTreeNodes: number;
}

export function ensembleBytes(e: TreeEnsemble): number {
  return (
    e.treeRoot.byteLength +
    e.treeDepth.byteLength +
    e.treeGroup.byteLength +
    e.treeLeafBase.byteLength +
    e.nodes.byteLength +
    e.splits.byteLength +
    (e.kinds?.byteLength ?? 0) +
    e.catBits.byteLength +
    e.leafValues.byteLength
  );
}

/** The smallest double greater than x (x itself for +Infinity and NaN). */
export function nextUp(x: number): number {
  if (Number.isNaN(x) || x === Number.POSITIVE_INFINITY) return x;
  if (x === 0) return Number.MIN_VALUE;
  scratch.setFloat64(0, x);
  const bits = scratch.getBigUint64(0);
  scratch.setBigUint64(0, x > 0 ? bits + 1n : bits - 1n);
  return scratch.getFloat64(0);
}
const scratch = new DataView(new ArrayBuffer(8));

/**
 * One internal node as a loader describes it: `yes` is taken when the split's test holds
 * (numeric: x < threshold), `no` otherwise; NaN takes `yes` when nanGoesYes. Children are
 * local to the tree: n >= 0 is the tree's n-th internal node, ~k (negative) its k-th leaf.
 */
export interface NodeSpec {
  readonly feature: number;
  /** Numeric kinds: go `yes` when x < threshold (LightGBM's `<=` already made strict). */
  readonly threshold: number;
  readonly kind: number;
  readonly yes: number;
  readonly no: number;
  readonly nanGoesYes: boolean;
  /** Categorical kinds: the bitset words. */
  readonly catBits?: ArrayLike<number>;
}

interface TreeSpec {
  readonly group: number;
  readonly nodes: readonly NodeSpec[];
  readonly leaves: ArrayLike<number>;
  readonly depth: number;
}

/** Collects trees, then lays them out (internal nodes first, then all leaves). */
export class EnsembleBuilder {
  private readonly trees: TreeSpec[] = [];
  private numInternal = 0;
  private numLeaves = 0;
  private sumTreeDepth = 0;
  private sumMeanLeafDepth = 0;
  private maxTreeNodes = 0;

  constructor(
    readonly numFeatures: number,
    readonly numGroups: number,
  ) {}

  /** Adds one tree (no nodes and one leaf for a constant tree). Returns a problem or null. */
  addTree(group: number, nodes: readonly NodeSpec[], leaves: ArrayLike<number>): string | null {
    if (leaves.length === 0) return 'it has no leaves';
    for (const [index, node] of nodes.entries()) {
      for (const child of [node.yes, node.no]) {
        // Leaf i is written -(i + 1), LightGBM's ~i; plain arithmetic, as ~ would wrap a
        // number past 32 bits onto a real leaf.
        const ok = child >= 0 ? child < nodes.length : -child <= leaves.length;
        if (!Number.isInteger(child) || !ok)
          return `node ${index} points at a child that does not exist`;
      }
      if (!Number.isInteger(node.feature) || node.feature < 0 || node.feature >= this.numFeatures) {
        return `node ${index} splits on feature ${node.feature}, but the model has ${this.numFeatures} features`;
      }
    }
    const shape = treeShape(nodes);
    if (shape === null) return 'its nodes do not form a tree (a cycle, or a node reached twice)';
    this.trees.push({ group, nodes, leaves, depth: shape.depth });
    this.sumTreeDepth += shape.depth;
    this.sumMeanLeafDepth += shape.meanLeafDepth;
    this.maxTreeNodes = Math.max(this.maxTreeNodes, nodes.length);
    this.numInternal += nodes.length;
    this.numLeaves += leaves.length;
    return null;
  }

  build(): TreeEnsemble {
    const numNodes = this.numInternal + this.numLeaves;
    const leafNodeBase = this.numInternal;
    const nodes = new Int32Array(numNodes * nodeStride);
    const splits = new Float64Array(numNodes * splitStride);
    const kinds = new Uint8Array(numNodes);
    const catBits: number[] = [];
    const leafValues = new Float64Array(this.numLeaves);
    const numTrees = this.trees.length;
    const treeRoot = new Int32Array(numTrees);
    const treeDepthArray = new Int32Array(numTrees);
    const treeGroup = new Int32Array(numTrees);
    const treeLeafBase = new Int32Array(numTrees);
    let anyKind = false;
    let nodeBase = 0;
    let leafBase = 0;
    for (const [t, tree] of this.trees.entries()) {
      const id = (child: number): number =>
        child >= 0 ? nodeBase + child : leafNodeBase + leafBase + ~child;
      for (const [k, node] of tree.nodes.entries()) {
        const i = nodeBase + k;
        const numeric = node.kind === nodeKind.numeric;
        nodes[i * nodeStride] = node.feature;
        nodes[i * nodeStride + 1] = id(node.yes);
        nodes[i * nodeStride + 2] = id(node.no);
        kinds[i] = node.kind;
        if (!numeric) anyKind = true;
        if (numeric && node.nanGoesYes) {
          splits[i * splitStride] = -1;
          splits[i * splitStride + 1] = nextUp(-node.threshold);
          nodes[i * nodeStride + 3] = 0;
        } else if (numeric) {
          splits[i * splitStride] = 1;
          splits[i * splitStride + 1] = node.threshold;
          nodes[i * nodeStride + 3] = 1;
        } else {
          nodes[i * nodeStride + 3] = node.nanGoesYes ? 0 : 1;
          const bits = node.catBits ?? [];
          splits[i * splitStride] = node.kind === nodeKind.zeroAsMissing ? 1 : bits.length;
          splits[i * splitStride + 1] =
            node.kind === nodeKind.zeroAsMissing ? node.threshold : catBits.length;
          for (let w = 0; w < bits.length; w += 1) catBits.push((bits[w] ?? 0) >>> 0);
        }
      }
      for (let k = 0; k < tree.leaves.length; k += 1) {
        const i = leafNodeBase + leafBase + k;
        nodes[i * nodeStride + 1] = i;
        nodes[i * nodeStride + 2] = i;
        splits[i * splitStride] = 1;
        leafValues[leafBase + k] = tree.leaves[k] ?? 0;
      }
      treeRoot[t] = tree.nodes.length === 0 ? leafNodeBase + leafBase : nodeBase;
      treeDepthArray[t] = tree.depth;
      treeGroup[t] = tree.group;
      treeLeafBase[t] = leafBase;
      nodeBase += tree.nodes.length;
      leafBase += tree.leaves.length;
    }
    return {
      numFeatures: this.numFeatures,
      numGroups: this.numGroups,
      numTrees,
      treeRoot,
      treeDepth: treeDepthArray,
      treeGroup,
      treeLeafBase,
      nodes,
      splits,
      kinds: anyKind ? kinds : null,
      catBits: Uint32Array.from(catBits),
      leafNodeBase,
      leafValues,
      sumTreeDepth: this.sumTreeDepth,
      sumMeanLeafDepth: this.sumMeanLeafDepth,
      maxTreeDepth: treeDepthArray.reduce((a, b) => Math.max(a, b), 0),
      maxTreeNodes: this.maxTreeNodes,
    };
  }
}

/**
 * Steps from node 0 to the deepest leaf (0 for a single leaf) and the mean over leaves, or
 * null when a node is reached twice (a cycle or a shared child): every walk must end on a
 * leaf.
 */
function treeShape(nodes: readonly NodeSpec[]): { depth: number; meanLeafDepth: number } | null {
  if (nodes.length === 0) return { depth: 0, meanLeafDepth: 0 };
  const seen = new Uint8Array(nodes.length);
  const stack: number[] = [0, 1]; // pairs of (node, steps to reach its children)
  let deepest = 0;
  let leafDepths = 0;
  let leaves = 0;
  while (stack.length > 0) {
    const depth = stack.pop() ?? 0;
    const index = stack.pop() ?? 0;
    if (seen[index] === 1) return null;
    seen[index] = 1;
    deepest = Math.max(deepest, depth);
    const node = nodes[index];
    if (node === undefined) return null;
    for (const child of [node.yes, node.no]) {
      if (child >= 0) {
        stack.push(child, depth + 1);
      } else {
        leafDepths += depth;
        leaves += 1;
      }
    }
  }
  return { depth: deepest, meanLeafDepth: leafDepths / leaves };
}
