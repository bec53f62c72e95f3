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

/** Column names of a tensor of one shape: computed once per (name, width), then reused. */
type ColumnNames = readonly string[] | null;

class ProfileSketcher {
  rows = 0;
  readonly features = new Map<string, Sketcher>();
  readonly outputs = new Map<string, Sketcher>();

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
  private readonly names = new Map<string, ColumnNames>();

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
    for (const tensor of inputs) this.addTensor(into.features, tensor, featureNames);
    for (const tensor of outputs) this.addTensor(into.outputs, tensor, null);
  }

  private addTensor(
    into: Map<string, Sketcher>,
    tensor: Tensor,
    featureNames: readonly string[] | null,
  ): void {
    const shape = tensor.shape;
    if (shape.length > 2) return;
    const rows = shape.length === 0 ? 1 : shape[0]!;
    const width = shape.length === 2 ? shape[1]! : 1;
    if (width > maxSketchColumns || width === 0) return;
    const names = this.columnNames(tensor.name, width, featureNames);
    if (names === null) return;
    const data = tensor.data;
    const categorical = tensor.datatype === 'BYTES';
    const read = categorical ? null : readerOf(tensor);
    for (let column = 0; column < width; column++) {
      const name = names[column]!;
      let sketcher = into.get(name);
      if (sketcher === undefined) {
        sketcher = categorical ? new CategoricalSketcher() : new NumericSketcher();
        into.set(name, sketcher);
      }
      if (sketcher instanceof CategoricalSketcher) {
        for (let r = 0; r < rows; r++) sketcher.add(textAt(data, r * width + column));
      } else if (read !== null) {
        for (let r = 0; r < rows; r++) sketcher.add(read(r * width + column));
      }
    }
  }

  private columnNames(
    name: string,
    width: number,
    featureNames: readonly string[] | null,
  ): ColumnNames {
    const key = `${width} ${name}`;
    let names = this.names.get(key);
    if (names === undefined) {
      names =
        width === 1
          ? [name]
          : featureNames !== null && featureNames.length === width
            ? featureNames
            : Array.from({ length: width }, (_, j) => `${name}[${j}]`);
      this.names.set(key, names);
    }
    return names;
  }
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
