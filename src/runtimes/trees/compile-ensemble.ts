// Compiles an ensemble to JavaScript, as Treelite and m2cgen compile trees to C or Java: one
// function per tree whose body is the tree as nested if/else with the thresholds and leaf
// values as literals, looping over a block of rows. A row then takes only its own path's
// branches, where the array walk (traverse-ensemble.ts) always takes a tree's full depth;
// that wins for deep, lopsided trees (LightGBM grows leaf-wise) and for categorical and
// zero-as-missing splits, and loses to the branch-free walk on balanced trees
// (tree-predictor.ts chooses; docs/trees.md has the measurements). Each tree is its own
// function so V8 optimizes each one (a function over ~60 KB of bytecode is never optimized).
//
// Safety: the source holds only numbers this file formats (feature indices, thresholds, leaf
// values, bitset offsets) and fixed text; nothing from the model file is pasted as text.
//
// Shape of the generated code (one block of rows at a time, as the array walk does); a
// split whose NaN goes to child 0 is written so that NaN fails the negated test:
//
//   function (rows, start, end, out) {
//     for (let r = start, o = start * 8; r < end; r += 1, o += 8) {
//       let x, v;
//       x = rows[o + 3];
//       if (x < 0.5) { x = rows[o + 1]; if (!(-x < 1.25)) { v = 0.1; } else { v = -0.2; } }
//       else { v = 0.3; }
//       out[r * 1 + 0] += v;
//     }
//   }

import { blockRows, type FeatureRows, type MarginBuffer } from './traverse-ensemble.ts';
import {
  nodeKind,
  nodeStride,
  splitStride,
  zeroThreshold,
  type TreeEnsemble,
} from './tree-ensemble.ts';

/** Adds every tree's leaf values to `out` (numRows × numGroups), like accumulateMargins. */
export type MarginKernel = (rows: FeatureRows, numRows: number, out: MarginBuffer) => void;

/** Trees deeper than this nest too many blocks for a parser's comfort: use the interpreter. */
const maxCompiledDepth = 200;
/** A larger tree's function would pass the ~60 KB of bytecode V8 still optimizes. */
const maxCompiledTreeNodes = 2000;
/** Source cap (characters, about 250,000 nodes): past it, parsing would take seconds. */
const maxSourceChars = 16 << 20;

type TreeFunction = (rows: FeatureRows, start: number, end: number, out: MarginBuffer) => void;

/** The generated kernel, or null when the model is too deep or too large to compile. */
export function compileEnsemble(e: TreeEnsemble): MarginKernel | null {
  if (e.maxTreeDepth > maxCompiledDepth || e.maxTreeNodes > maxCompiledTreeNodes) return null;
  const parts: string[] = ['"use strict";', categoricalHelpers, 'return ['];
  let chars = 0;
  for (let t = 0; t < e.numTrees; t += 1) {
    const source = treeSource(e, t);
    chars += source.length;
    if (chars > maxSourceChars) return null;
    parts.push(source, ',');
  }
  parts.push('];');
  // eslint-disable-next-line @typescript-eslint/no-implied-eval -- generated from numbers only (see above)
  const factory = new Function('catBits', parts.join('\n')) as (
    bits: Uint32Array,
  ) => TreeFunction[];
  const trees = factory(e.catBits);
  return (rows, numRows, out) => {
    for (let start = 0; start < numRows; start += blockRows) {
      const end = Math.min(numRows, start + blockRows);
      for (const tree of trees) tree(rows, start, end, out);
    }
  };
}

// Bitset membership for categorical splits; `x` is known not to be NaN.
const categoricalHelpers = `
function lightgbmCat(x, start, words) {
  if (x <= -1 || x >= 2147483648) return false;
  const c = x | 0, w = c >>> 5;
  return w < words && ((catBits[start + w] >>> (c & 31)) & 1) === 1;
}
function xgboostCat(x, start, words) {
  if (x < 0 || x >= 16777216) return false;
  const c = x | 0, w = c >>> 5;
  return w < words && ((catBits[start + w] >>> (c & 31)) & 1) === 1;
}`;

function treeSource(e: TreeEnsemble, t: number): string {
  const root = e.treeRoot[t] ?? 0;
  const group = e.treeGroup[t] ?? 0;
  const f = e.numFeatures;
  const body: string[] = [];
  emitNode(e, root, body);
  return (
    `function (rows, start, end, out) {\n` +
    `for (let r = start, o = start * ${f}; r < end; r += 1, o += ${f}) {\n` +
    `let x, v;\n${body.join('\n')}\nout[r * ${e.numGroups} + ${group}] += v;\n}\n}`
  );
}

/** Appends the statements that set `v` for the subtree at `node`. */
function emitNode(e: TreeEnsemble, node: number, out: string[]): void {
  if (node >= e.leafNodeBase) {
    out.push(`v = ${literal(e.leafValues[node - e.leafNodeBase] ?? 0)};`);
    return;
  }
  const i = node * nodeStride;
  const k = node * splitStride;
  const feature = e.nodes[i] ?? 0;
  const yes = e.nodes[i + 1] ?? 0;
  const no = e.nodes[i + 2] ?? 0;
  const nanGoesYes = e.nodes[i + 3] === 0;
  const sign = e.splits[k] ?? 1;
  const t = literal(e.splits[k + 1] ?? 0);
  const kind = e.kinds?.[node] ?? nodeKind.numeric;
  out.push(`x = rows[o + ${feature}];`);
  let test: string;
  if (kind === nodeKind.numeric) {
    // One comparison; its form decides where NaN lands (every comparison with NaN is false).
    test = sign > 0 ? `x < ${t}` : `!(-x < ${t})`;
  } else if (kind === nodeKind.zeroAsMissing) {
    const z = literal(zeroThreshold);
    test = `(x !== x || (x >= -${z} && x <= ${z})) ? ${nanGoesYes} : x < ${t}`;
  } else {
    const helper = kind === nodeKind.lightgbmCategorical ? 'lightgbmCat' : 'xgboostCat';
    test = `x !== x ? ${nanGoesYes} : ${helper}(x, ${t}, ${literal(sign)})`;
  }
  out.push(`if (${test}) {`);
  emitNode(e, yes, out);
  out.push('} else {');
  emitNode(e, no, out);
  out.push('}');
}

/** A number as JavaScript source that reads back as exactly the same double. */
function literal(value: number): string {
  if (Object.is(value, -0)) return '-0';
  return String(value);
}
