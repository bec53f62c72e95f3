// Shared helpers for the ONNX runtime tests: the fixtures made by
// fixtures/onnx/make_onnx_fixtures.py (and fixtures/registry/make_fixtures.py), their expected
// outputs as our tensors, and a tolerance-checked comparison.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import type { Tensor, TensorData, TensorDatatype, TensorSpec } from '../../../src/core/tensor.ts';
import { loadOnnxRuntime } from '../../../src/runtimes/onnx/load-onnx-runtime.ts';
import type {
  InferOutcome,
  ModelRuntime,
  RuntimeConfig,
  RuntimeLoadOptions,
} from '../../../src/runtimes/runtime.ts';

export const onnxFixtures = new URL('../../../fixtures/onnx/', import.meta.url).pathname;
export const registryFixtures = new URL('../../../fixtures/registry/', import.meta.url).pathname;

/** Predictions must match the training library within this absolute error (float32 math in
 * onnxruntime against float32/float64 math in torch and scikit-learn). */
export const tolerance = 1e-4;

export interface JsonTensor {
  readonly name: string;
  readonly datatype: TensorDatatype;
  readonly shape: readonly number[];
  /** INT64/UINT64 as decimal strings, FP16 as bit patterns, BOOL as 0/1. */
  readonly data: readonly (number | string)[];
}

export interface ExpectedFile {
  readonly model: string;
  readonly description: string;
  readonly signature: { readonly inputs: TensorSpec[]; readonly outputs: TensorSpec[] };
  readonly inputs: readonly JsonTensor[];
  readonly outputs: readonly JsonTensor[];
}

export function readExpected(name: string): ExpectedFile {
  return JSON.parse(readFileSync(`${onnxFixtures}${name}.expected.json`, 'utf8')) as ExpectedFile;
}

export function loadOptions(
  modelDir: string,
  files: readonly string[],
  extra: { config?: RuntimeConfig; schema?: RuntimeLoadOptions['schema'] } = {},
): RuntimeLoadOptions {
  return {
    modelDir,
    format: 'onnx',
    files,
    schema: extra.schema ?? null,
    config: extra.config ?? {},
  };
}

/** Loads a model, failing the test with the reason when it does not load. */
export async function mustLoad(options: RuntimeLoadOptions): Promise<ModelRuntime> {
  const outcome = await loadOnnxRuntime(options);
  assert.ok(outcome.ok, outcome.ok ? '' : outcome.reason);
  return outcome.runtime;
}

export function toTensor(json: JsonTensor): Tensor {
  const numbers = (): number[] => json.data.map(Number);
  const bigints = (): bigint[] => json.data.map((v) => BigInt(v));
  const data = ((): TensorData => {
    switch (json.datatype) {
      case 'BOOL':
      case 'UINT8':
        return Uint8Array.from(numbers());
      case 'UINT16':
      case 'FP16':
      case 'BF16':
        return Uint16Array.from(numbers());
      case 'UINT32':
        return Uint32Array.from(numbers());
      case 'UINT64':
        return BigUint64Array.from(bigints());
      case 'INT8':
        return Int8Array.from(numbers());
      case 'INT16':
        return Int16Array.from(numbers());
      case 'INT32':
        return Int32Array.from(numbers());
      case 'INT64':
        return BigInt64Array.from(bigints());
      case 'FP32':
        return Float32Array.from(numbers());
      case 'FP64':
        return Float64Array.from(numbers());
      case 'BYTES':
        return json.data.map(String);
    }
  })();
  return { name: json.name, datatype: json.datatype, shape: json.shape, data };
}

export function mustSucceed(outcome: InferOutcome): readonly Tensor[] {
  assert.ok(outcome.ok, outcome.ok ? '' : `${outcome.kind}: ${outcome.message}`);
  return outcome.outputs;
}

/**
 * Asserts an output equals the reference: same name, datatype and shape; floats within
 * `tolerance`, everything else exactly. Returns the largest absolute error (0 for exact types).
 */
export function assertMatches(actual: Tensor, expected: JsonTensor): number {
  assert.equal(actual.name, expected.name);
  assert.equal(actual.datatype, expected.datatype, `${expected.name}: datatype`);
  assert.deepEqual([...actual.shape], [...expected.shape], `${expected.name}: shape`);
  const want = toTensor(expected).data;
  assert.equal(actual.data.length, want.length, `${expected.name}: element count`);
  if (expected.datatype !== 'FP32' && expected.datatype !== 'FP64') {
    assert.deepEqual([...actual.data], [...want], `${expected.name}: values`);
    return 0;
  }
  let maxError = 0;
  for (let i = 0; i < want.length; i += 1) {
    const error = Math.abs(Number(actual.data[i]) - Number(want[i]));
    assert.ok(
      error <= tolerance,
      `${expected.name}[${i}]: got ${String(actual.data[i])}, want ${String(want[i])} (error ${error})`,
    );
    maxError = Math.max(maxError, error);
  }
  return maxError;
}
