// The worker's streaming sketches of what it serves, for drift and skew (issue 15; the report
// it answers is protocol/drift/sketch-report.ts). One DataProfile-to-be per slice value plus
// one overall, each holding a sketcher per feature and output (B's NumericSketcher /
// CategoricalSketcher: moments, a DDSketch histogram, category counts). No request is kept:
// each value is folded into its sketch and let go.
//
//   ServingSketches ─ overall ─────────▶ ProfileSketcher ─ features: name → sketcher
//                   └ slices: value ──▶ ProfileSketcher   outputs:  name → sketcher
//
// Memory is bounded: features and outputs by what the model takes and gives (tensors wider
// than maxSketchColumns are skipped), slices by maxSketchSlices (later values share
// otherSlice), a numeric sketch by its buckets (~115 per decade of magnitude at 1 %),
// a categorical one by its maxCategories. `take` hands everything over and starts afresh.

import type { Tensor } from '../../core/tensor.ts';
import { numberFromBf16Bits, numberFromFp16Bits } from '../../protocol/v2/datatypes.ts';
import {
  maxSketchColumns,
  maxSketchSlices,
  type WorkerSketchReport,
} from '../../protocol/drift/sketch-report.ts';
import { otherSlice } from '../../protocol/traffic/traffic-report.ts';
import { CategoricalSketcher } from '../../observability/profile/categorical-sketcher.ts';
import { NumericSketcher } from '../../observability/profile/numeric-sketcher.ts';
import {
  profileFormatVersion,
  type DataProfile,
  type FeatureSketch,
} from '../../observability/profile/data-profile.ts';

type Sketcher = NumericSketcher | CategoricalSketcher;

/** A tensor's column sketchers for one layout (width, kind); null: not sketched. */
interface TensorPlan {
  readonly width: number;
  readonly categorical: boolean;
  readonly sketchers: readonly Sketcher[] | null;
}

class ProfileSketcher {
  rows = 0;
  readonly features = new Map<string, Sketcher>();
  readonly outputs = new Map<string, Sketcher>();
  /** By tensor name: the sketchers its columns go to (plans, see addTensor). */
  readonly inputPlans = new Map<string, TensorPlan>();
  readonly outputPlans = new Map<string, TensorPlan>();

  snapshot(createdAt: string): DataProfile {
    return {
      formatVersion: profileFormatVersion,
      rows: this.rows,
      features: snapshotOf(this.features),
      outputs: snapshotOf(this.outputs),
      createdAt,
    };
  }
}

function snapshotOf(sketchers: ReadonlyMap<string, Sketcher>): Record<string, FeatureSketch> {
  // fromEntries: a feature called __proto__ stays a feature.
  return Object.fromEntries([...sketchers].map(([name, sketcher]) => [name, sketcher.snapshot()]));
}

/** What the worker knows of its model for naming columns. */
export interface SketchNaming {
  /** The model's feature names in column order (tree models), or null. */
  readonly featureNames: readonly string[] | null;
}

export class ServingSketches {
  private overall = new ProfileSketcher();
  private slices = new Map<string, ProfileSketcher>();
  private windowStartMs: number;

  constructor(
    private readonly identity: Pick<
      WorkerSketchReport,
      'replicaId' | 'endpoint' | 'model' | 'version'
    >,
    private readonly naming: () => SketchNaming,
    private readonly nowMs: () => number = Date.now,
  ) {
    this.windowStartMs = nowMs();
  }

  /**
   * One answered request: its inputs as the worker decoded them (before feature columns are
   * joined), its outputs, and its slice value ('' or null: none).
   */
  record(slice: string | null, inputs: readonly Tensor[], outputs: readonly Tensor[]): void {
    const rows = rowsOf(inputs);
    this.add(this.overall, rows, inputs, outputs);
    if (slice === null || slice === '') return;
    let sketcher = this.slices.get(slice);
    if (sketcher === undefined) {
      const key = this.slices.size < maxSketchSlices ? slice : otherSlice;
      sketcher = this.slices.get(key);
      if (sketcher === undefined) {
        sketcher = new ProfileSketcher();
        this.slices.set(key, sketcher);
      }
    }
    this.add(sketcher, rows, inputs, outputs);
  }

  /** Requests' rows sketched since the last take (overall). */
  get rows(): number {
    return this.overall.rows;
  }

  /** Everything sketched since the last take, as a report; the sketches start afresh. */
  take(): WorkerSketchReport {
    const endMs = this.nowMs();
    const windowEnd = new Date(endMs).toISOString();
    const overall = this.overall.rows === 0 ? null : this.overall.snapshot(windowEnd);
    const slices: Record<string, DataProfile> = {};
    for (const [value, sketcher] of this.slices) slices[value] = sketcher.snapshot(windowEnd);
    const report: WorkerSketchReport = {
      ...this.identity,
      windowStart: new Date(this.windowStartMs).toISOString(),
      windowEnd,
      overall,
      slices,
    };
    this.overall = new ProfileSketcher();
    this.slices = new Map();
    this.windowStartMs = endMs;
    return report;
  }

  private add(
    into: ProfileSketcher,
    rows: number,
    inputs: readonly Tensor[],
    outputs: readonly Tensor[],
  ): void {
    into.rows += rows;
    const featureNames = this.naming().featureNames;
    for (const tensor of inputs)
      this.addTensor(into.features, into.inputPlans, tensor, featureNames);
    for (const tensor of outputs) this.addTensor(into.outputs, into.outputPlans, tensor, null);
  }

  private addTensor(
    into: Map<string, Sketcher>,
    plans: Map<string, TensorPlan>,
    tensor: Tensor,
    featureNames: readonly string[] | null,
  ): void {
    const shape = tensor.shape;
    if (shape.length > 2) return;
    const rows = shape.length === 0 ? 1 : shape[0]!;
    const width = shape.length === 2 ? shape[1]! : 1;
    const categorical = tensor.datatype === 'BYTES';
    // The sketchers of this tensor's columns, looked up by name once per layout, not per
    // request: the hot path then only adds values.
    let plan = plans.get(tensor.name);
    if (plan === undefined || plan.width !== width || plan.categorical !== categorical) {
      plan = this.planOf(into, tensor.name, width, categorical, featureNames);
      plans.set(tensor.name, plan);
    }
    const sketchers = plan.sketchers;
    if (sketchers === null) return;
    const data = tensor.data;
    if (categorical) {
      for (let r = 0; r < rows; r++) {
        for (let c = 0; c < width; c++) {
          (sketchers[c] as CategoricalSketcher).add(textAt(data, r * width + c));
        }
      }
      return;
    }
    const numeric = sketchers as NumericSketcher[];
    if (isPlainNumeric(tensor)) {
      const values = data as ArrayLike<number>;
      for (let r = 0, i = 0; r < rows; r++) {
        for (let c = 0; c < width; c++, i++) numeric[c]!.add(values[i]);
      }
      return;
    }
    const read = readerOf(tensor);
    for (let r = 0, i = 0; r < rows; r++) {
      for (let c = 0; c < width; c++, i++) numeric[c]!.add(read(i));
    }
  }

  /** The sketchers of a tensor's columns (made on first use); null: not sketched. */
  private planOf(
    into: Map<string, Sketcher>,
    name: string,
    width: number,
    categorical: boolean,
    featureNames: readonly string[] | null,
  ): TensorPlan {
    if (width > maxSketchColumns || width === 0) return { width, categorical, sketchers: null };
    const names =
      width === 1
        ? [name]
        : featureNames !== null && featureNames.length === width
          ? featureNames
          : Array.from({ length: width }, (_, j) => `${name}[${j}]`);
    const sketchers: Sketcher[] = [];
    for (const column of names) {
      let sketcher = into.get(column);
      if (sketcher === undefined) {
        sketcher = categorical ? new CategoricalSketcher() : new NumericSketcher();
        into.set(column, sketcher);
      }
      // A name seen before with the other kind: this tensor is not sketched (first kind wins).
      if (sketcher instanceof CategoricalSketcher !== categorical)
        return { width, categorical, sketchers: null };
      sketchers.push(sketcher);
    }
    return { width, categorical, sketchers };
  }
}

/** Typed arrays whose elements are the values themselves (not half-float bits, not bigints). */
function isPlainNumeric(tensor: Tensor): boolean {
  const datatype = tensor.datatype;
  return (
    datatype !== 'FP16' &&
    datatype !== 'BF16' &&
    datatype !== 'INT64' &&
    datatype !== 'UINT64' &&
    datatype !== 'BYTES'
  );
}

function rowsOf(inputs: readonly Tensor[]): number {
  const first = inputs[0];
  if (first === undefined) return 0;
  return first.shape.length === 0 ? 1 : first.shape[0]!;
}

function textAt(data: Tensor['data'], index: number): string | null {
  const value = (data as readonly unknown[])[index];
  if (typeof value === 'string') return value;
  if (value instanceof Uint8Array) return Buffer.from(value).toString('utf8');
  return null;
}

/** Element `i` of a numeric tensor as a double (half floats from their bits, 64-bit ints cast). */
function readerOf(tensor: Tensor): (index: number) => number {
  const data = tensor.data as ArrayLike<number | bigint>;
  if (tensor.datatype === 'FP16') return (i) => numberFromFp16Bits(data[i] as number);
  if (tensor.datatype === 'BF16') return (i) => numberFromBf16Bits(data[i] as number);
  if (data instanceof BigInt64Array || data instanceof BigUint64Array) {
    return (i) => Number(data[i]!);
  }
  return (i) => data[i] as number;
}
