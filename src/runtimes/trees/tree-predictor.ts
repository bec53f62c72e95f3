// The low-level predictor both loaders return: a flattened ensemble, how its margins start
// (base scores), how they are summed (float32 like XGBoost, or double like LightGBM), and
// how they become predictions. The runtime, the benchmark and the tests all go through here.
//
//   rows (numRows × numFeatures, row-major)
//     → margins = base + Σ leaf values     (numRows × numGroups)
//     → predictions = transform(margins)   (numRows × outputColumns; LightGBM forests divide
//                                           the margins by the iterations first)

import { compileEnsemble, type MarginKernel } from './compile-ensemble.ts';
import { createWasmTreeKernel } from './wasm-tree-kernel.ts';
import { applyTransform, outputColumns, type OutputTransform } from './output-transform.ts';
import {
  accumulateMargins,
  predictLeaves,
  type FeatureRows,
  type MarginBuffer,
} from './traverse-ensemble.ts';
import { ensembleBytes, type TreeEnsemble } from './tree-ensemble.ts';

export type TreeLibrary = 'xgboost' | 'lightgbm';

/** What a loader learned from a model file. */
export interface TreeModel {
  readonly library: TreeLibrary;
  readonly ensemble: TreeEnsemble;
  /** The objective as the file names it, e.g. `binary:logistic` or `binary sigmoid:1`. */
  readonly objective: string;
  readonly transform: OutputTransform;
  /** Starting margin per group (XGBoost's base_score in margin space; 0 for LightGBM). */
  readonly baseMargins: readonly number[];
  /** LightGBM forests (average_output): predictions divide the summed margins by this
   * (the iterations); raw margins stay sums, as LightGBM's PredictRaw leaves them. */
  readonly averageOver: number | null;
  /** LightGBM before 2.2.3 stored forest leaves already transformed: average, no transform. */
  readonly transformAfterAverage: boolean;
  readonly featureNames: readonly string[] | null;
  /** Library version as the file states it, e.g. `1.7.4` or `v3`. */
  readonly formatVersion: string;
}

export type TreeLoadResult =
  | { readonly ok: true; readonly predictor: TreePredictor }
  | { readonly ok: false; readonly reason: string };

export type KernelKind = 'wasm' | 'interpreter' | 'compiled';

export interface PredictorOptions {
  /** 'auto' (default) picks per model (see chooseKernel); the others force one kernel. */
  readonly kernel?: 'auto' | KernelKind;
}

/**
 * Which kernel suits a model. The branchless interpreter walks every row the full depth of
 * each tree (about 2.4 ns a step); generated code walks the row's real path but pays for
 * mispredicted branches (about 3.6 ns a level on random rows). So balanced numeric trees
 * (XGBoost's depth-wise growth) go to the interpreter, and deep lopsided trees (LightGBM's
 * leaf-wise growth) and categorical or zero-as-missing splits, which the interpreter only
 * handles on a slow branchy path, to generated code. docs/trees.md has the numbers.
 */
export function chooseKernel(e: TreeEnsemble): KernelKind {
  if (e.kinds !== null) return 'compiled';
  // The array walk, in WebAssembly (the same walk, bit-identical, ~2× faster than in JS).
  return e.sumTreeDepth <= 1.5 * e.sumMeanLeafDepth ? 'wasm' : 'compiled';
}

export class TreePredictor {
  readonly library: TreeLibrary;
  readonly numFeatures: number;
  readonly numTrees: number;
  /** Margin columns per row (classes for multiclass models, else 1). */
  readonly numGroups: number;
  /** Prediction columns per row (1 for argmax outputs). */
  readonly numOutputs: number;
  readonly objective: string;
  readonly featureNames: readonly string[] | null;
  /** Which kernel sums the trees: generated JavaScript or the array interpreter. */
  readonly kernelKind: KernelKind;
  private readonly kernel: MarginKernel;
  /** Bytes of WebAssembly memory the kernel holds (0 for the JavaScript ones). */
  private readonly kernelBytes: number;
  /** XGBoost sums in float32 and reads float32 features; LightGBM uses double for both. */
  private readonly float32: boolean;

  constructor(
    readonly model: TreeModel,
    options: PredictorOptions = {},
  ) {
    const e = model.ensemble;
    this.library = model.library;
    this.numFeatures = e.numFeatures;
    this.numTrees = e.numTrees;
    this.numGroups = e.numGroups;
    this.numOutputs = outputColumns(model.transform, e.numGroups);
    this.objective = model.objective;
    this.featureNames = model.featureNames;
    this.float32 = model.library === 'xgboost';
    const wanted =
      options.kernel === undefined || options.kernel === 'auto' ? chooseKernel(e) : options.kernel;
    // compileEnsemble declines trees too deep or too large to compile well; the WebAssembly
    // walk declines categorical and zero-as-missing splits, and ensembles past wasm32's
    // memory. Either way: the JS walk.
    const compiled = wanted === 'compiled' ? compileEnsemble(e) : null;
    const wasm = wanted === 'wasm' ? createWasmTreeKernel(e, model.library === 'xgboost') : null;
    this.kernelKind = compiled !== null ? 'compiled' : wasm !== null ? 'wasm' : 'interpreter';
    this.kernelBytes = wasm?.memoryBytes ?? 0;
    this.kernel =
      compiled ??
      wasm?.kernel ??
      ((rows, numRows, out) => accumulateMargins(e, rows, numRows, out));
  }

  /** Columns of `predict`'s result per row. */
  outputColumns(outputMargin: boolean): number {
    return outputMargin ? this.numGroups : this.numOutputs;
  }

  /** Predictions (or raw margins) as float32, numRows × outputColumns(outputMargin). */
  predict(rows: FeatureRows, numRows: number, outputMargin = false): Float32Array {
    const margins = this.margins(rows, numRows);
    const out = new Float32Array(numRows * this.outputColumns(outputMargin));
    this.finish(margins, numRows, outputMargin, out);
    return out;
  }

  /** As predict, in double: LightGBM's own precision (XGBoost's float32 results, widened). */
  predict64(rows: FeatureRows, numRows: number, outputMargin = false): Float64Array {
    if (this.float32) return Float64Array.from(this.predict(rows, numRows, outputMargin));
    const margins = this.margins(rows, numRows);
    const out = new Float64Array(numRows * this.outputColumns(outputMargin));
    this.finish(margins, numRows, outputMargin, out);
    return out;
  }

  /** The leaf each row reaches in each tree: numRows × numTrees (LightGBM's pred_leaf; for
   * XGBoost the leaf's node id, like its pred_leaf). */
  predictLeaf(rows: FeatureRows, numRows: number): Int32Array {
    this.checkRows(rows, numRows);
    return predictLeaves(this.model.ensemble, this.featureRows(rows), numRows);
  }

  /** Bytes of the flattened arrays, and of the WebAssembly kernel's memory when it has one. */
  memoryBytes(): number {
    return ensembleBytes(this.model.ensemble) + this.kernelBytes;
  }

  private margins(rows: FeatureRows, numRows: number): MarginBuffer {
    this.checkRows(rows, numRows);
    const groups = this.numGroups;
    const margins = this.float32
      ? new Float32Array(numRows * groups)
      : new Float64Array(numRows * groups);
    const base = this.model.baseMargins;
    if (base.some((b) => b !== 0)) {
      for (let r = 0; r < numRows; r += 1) {
        for (let k = 0; k < groups; k += 1) margins[r * groups + k] = base[k] ?? 0;
      }
    }
    this.kernel(this.featureRows(rows), numRows, margins);
    return margins;
  }

  private finish(
    margins: MarginBuffer,
    numRows: number,
    outputMargin: boolean,
    out: Float32Array | Float64Array,
  ): void {
    if (outputMargin) {
      out.set(margins);
      return;
    }
    // LightGBM forests: raw scores are the trees' sum, predictions use their mean.
    const divisor = this.model.averageOver;
    if (divisor !== null) for (let i = 0; i < margins.length; i += 1) margins[i]! /= divisor;
    if (this.model.transformAfterAverage) {
      applyTransform(this.model.transform, margins, numRows, this.numGroups, out);
    } else {
      out.set(margins);
    }
  }

  /** XGBoost compares float32 features; LightGBM doubles. One copy per batch, if any. */
  private featureRows(rows: FeatureRows): FeatureRows {
    if (this.float32) return rows instanceof Float32Array ? rows : Float32Array.from(rows);
    return rows instanceof Float64Array ? rows : Float64Array.from(rows);
  }

  private checkRows(rows: FeatureRows, numRows: number): void {
    if (
      !Number.isSafeInteger(numRows) ||
      numRows < 0 ||
      rows.length !== numRows * this.numFeatures
    ) {
      throw new RangeError(
        `rows holds ${rows.length} values, not ${numRows} rows × ${this.numFeatures} features`,
      );
    }
  }
}
