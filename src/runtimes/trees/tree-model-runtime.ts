// A loaded tree model behind the runtime SPI: one input tensor [-1, numFeatures], one output
// tensor ([-1] or [-1, numClasses]). Request parameter `output_margin: true` returns raw
// margins ([-1, numGroups]) instead of predictions, as XGBoost's predict(output_margin=True)
// and LightGBM's predict(raw_score=True) do.

import type { Tensor, TensorSpec } from '../../core/tensor.ts';
import {
  runtimeSpecVersion,
  type InferFailure,
  type InferOutcome,
  type InferRequest,
  type ModelRuntime,
} from '../runtime.ts';
import { featureRows } from './feature-rows.ts';
import type { TreePredictor } from './tree-predictor.ts';

const warmupRows = 4;

export interface TreeRuntimeSpecs {
  readonly input: TensorSpec;
  /** Datatype of the output: the library's precision (LightGBM FP64, XGBoost FP32) unless
   * the declared schema says otherwise. */
  readonly output: TensorSpec;
}

export class TreeModelRuntime implements ModelRuntime {
  readonly specVersion = runtimeSpecVersion;
  readonly name: string;
  readonly inputs: readonly TensorSpec[];
  readonly outputs: readonly TensorSpec[];
  readonly featureNames: readonly string[] | null;
  private predictor: TreePredictor | null;

  constructor(
    predictor: TreePredictor,
    private readonly specs: TreeRuntimeSpecs,
  ) {
    this.predictor = predictor;
    this.name = `trees/${predictor.library}`;
    this.inputs = [specs.input];
    this.outputs = [specs.output];
    this.featureNames = predictor.featureNames;
  }

  /** The low-level predictor (null once unloaded). */
  get treePredictor(): TreePredictor | null {
    return this.predictor;
  }

  warmup(): Promise<void> {
    const p = this.predictor;
    if (p !== null) {
      // Zeros and NaNs take every default branch and the usual ones; both kernels get typed,
      // through the same predict (float32 or double answers) that requests will use.
      const rows = new Float32Array(2 * warmupRows * p.numFeatures);
      rows.fill(Number.NaN, warmupRows * p.numFeatures);
      const answer64 = this.specs.output.datatype === 'FP64';
      for (const margin of [false, true]) {
        if (answer64) p.predict64(rows, 2 * warmupRows, margin);
        else p.predict(rows, 2 * warmupRows, margin);
      }
    }
    return Promise.resolve();
  }

  infer(request: InferRequest): Promise<InferOutcome> {
    return Promise.resolve(this.run(request));
  }

  memoryBytes(): number {
    return this.predictor?.memoryBytes() ?? 0;
  }

  unload(): Promise<void> {
    this.predictor = null;
    return Promise.resolve();
  }

  private run(request: InferRequest): InferOutcome {
    const p = this.predictor;
    if (p === null) return { ok: false, kind: 'failed', message: 'the model is unloaded' };
    const inputName = this.specs.input.name;
    const outputName = this.specs.output.name;
    if (request.inputs.length !== 1) {
      return invalid(
        `the model takes one input, '${inputName}' (${this.specs.input.datatype} [-1, ${p.numFeatures}]); got ${request.inputs.length}`,
      );
    }
    const tensor = request.inputs[0] as Tensor;
    if (tensor.name !== inputName) {
      return invalid(
        `input '${tensor.name}': the model has no such input (it takes '${inputName}')`,
      );
    }
    const wanted = request.outputs ?? [];
    const unknown = wanted.find((name) => name !== outputName);
    if (unknown !== undefined) {
      return invalid(
        `output '${unknown}': the model has no such output (it gives '${outputName}')`,
      );
    }
    const margin = outputMargin(request.parameters?.['output_margin']);
    if (margin === null) return invalid('parameter output_margin must be true or false');
    const rows = featureRows(tensor, p.numFeatures, p.library === 'xgboost');
    if (!rows.ok) return invalid(rows.message);

    const columns = p.outputColumns(margin);
    let data: Float32Array | Float64Array;
    try {
      data =
        this.specs.output.datatype === 'FP64'
          ? p.predict64(rows.rows, rows.numRows, margin)
          : p.predict(rows.rows, rows.numRows, margin);
    } catch (error) {
      // Only a bug gets here; the worker stays up and reports the request as failed.
      return {
        ok: false,
        kind: 'failed',
        message: error instanceof Error ? error.message : String(error),
      };
    }
    const shape =
      columns === 1 && this.specs.output.shape.length === 1
        ? [rows.numRows]
        : [rows.numRows, columns];
    const output: Tensor = { name: outputName, datatype: this.specs.output.datatype, shape, data };
    return { ok: true, outputs: [output] };
  }
}

function invalid(message: string): InferFailure {
  return { ok: false, kind: 'invalid_input', message };
}

function outputMargin(value: string | number | boolean | undefined): boolean | null {
  if (value === undefined || value === false || value === 'false' || value === 0) return false;
  if (value === true || value === 'true' || value === 1) return true;
  return null;
}
