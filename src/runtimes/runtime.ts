// The runtime SPI: what a worker needs from any model runtime. One folder per runtime
// (trees/, onnx/, later llm/ and external/) implements it; the worker only sees this file
// and load-runtime.ts. Versioned like a provider interface: a breaking change bumps
// `runtimeSpecVersion` and every runtime says which version it implements.

import type { ModelSchema, Tensor, TensorSpec } from '../core/tensor.ts';
import type { ModelFormat } from '../registry/formats/artifact-file.ts';

export const runtimeSpecVersion = 1;

/** Per-runtime settings from the serving config (all optional, runtimes pick defaults). */
export interface RuntimeConfig {
  /** onnx: intra-op thread count (0 = onnxruntime's default). */
  readonly intraOpThreads?: number;
  /** onnx: inter-op thread count. */
  readonly interOpThreads?: number;
  /** onnx: graph optimization level. */
  readonly graphOptimizationLevel?: 'disabled' | 'basic' | 'extended' | 'all';
}

export interface RuntimeLoadOptions {
  /** Folder holding the version's files, already verified against their digests. */
  readonly modelDir: string;
  readonly format: ModelFormat;
  /** Paths inside modelDir, as in the version's manifest. */
  readonly files: readonly string[];
  /** The version's declared schema, if the user gave one. */
  readonly schema: ModelSchema | null;
  readonly config: RuntimeConfig;
}

export interface InferRequest {
  readonly inputs: readonly Tensor[];
  /** Names of the outputs wanted; all outputs when absent. */
  readonly outputs?: readonly string[];
  /** Request-level parameters, e.g. `output_margin: true` for trees. */
  readonly parameters?: Readonly<Record<string, string | number | boolean>>;
}

export interface InferResult {
  readonly outputs: readonly Tensor[];
}

/**
 * Why a request could not run. `invalid_input` is the caller's fault (400); `failed` is the
 * model's (500). Runtimes return these as values; they throw only for bugs.
 */
export type InferFailure = {
  readonly ok: false;
  readonly kind: 'invalid_input' | 'failed';
  readonly message: string;
};

export type InferOutcome = ({ readonly ok: true } & InferResult) | InferFailure;

export interface ModelRuntime {
  readonly specVersion: typeof runtimeSpecVersion;
  /** Name for logs and metadata, e.g. `trees/xgboost`, `onnx`. */
  readonly name: string;
  /** The tensors the model takes and gives, as the runtime read them from the model. */
  readonly inputs: readonly TensorSpec[];
  readonly outputs: readonly TensorSpec[];
  /**
   * The names of the columns of the model's one input, in order, when the model file has them
   * (tree models' feature names): requests may then send one input a feature.
   */
  readonly featureNames?: readonly string[] | null;
  /** Runs a few representative inferences so the first real request is not slow. */
  warmup(): Promise<void>;
  /** Runs one batch (the first dimension of every input is the batch). */
  infer(request: InferRequest): Promise<InferOutcome>;
  /** Bytes the loaded model holds (approximate: weights, trees, session). */
  memoryBytes(): number;
  unload(): Promise<void>;
}

/** Loading failures are values too: the worker reports `reason` and never becomes ready. */
export type LoadOutcome =
  | { readonly ok: true; readonly runtime: ModelRuntime }
  | { readonly ok: false; readonly reason: string };

export type RuntimeLoader = (options: RuntimeLoadOptions) => Promise<LoadOutcome>;
