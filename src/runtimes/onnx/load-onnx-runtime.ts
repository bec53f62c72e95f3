// The ONNX runtime: one onnxruntime-node InferenceSession per replica, on the CPU.
//
// Loading, in order (each step's failure is a LoadOutcome reason, never an exception):
//   1. session options from the serving config (onnx-session-options.ts: threads and why)
//   2. the one `.onnx` file among the version's files; the others may be its external data
//   3. InferenceSession.create(path): by PATH, so onnxruntime resolves external-data
//      locations relative to the model file (a buffer would leave it nowhere to look)
//   4. the registry's ONNX reader over the same files: the signature (onnx-signature.ts)
//      and which external-data files the initializers use (for memoryBytes)
//   5. non-tensor values (ZipMap's sequence of maps, ...) and datatypes onnxruntime-node
//      cannot carry (BF16, ...) are refused; a declared schema is checked against the model
//
// Inference: check the request (check-infer-request.ts), run with only the outputs asked for,
// wrap ORT's outputs as our tensors. Typed arrays are wrapped, not copied, both ways.

import { stat } from 'node:fs/promises';
import { isAbsolute, join, relative, resolve } from 'node:path';
import { InferenceSession } from 'onnxruntime-node';
import type { Tensor, TensorSpec } from '../../core/tensor.ts';
import { fileArtifact } from '../../registry/formats/file-artifact.ts';
import { validateOnnx, type OnnxTensorInfo } from '../../registry/formats/onnx.ts';
import type {
  InferOutcome,
  InferRequest,
  LoadOutcome,
  ModelRuntime,
  RuntimeLoader,
  RuntimeLoadOptions,
} from '../runtime.ts';
import { runtimeSpecVersion } from '../runtime.ts';
import { checkDeclaredSchema } from './check-declared-schema.ts';
import { checkInferRequest } from './check-infer-request.ts';
import { cleanOrtMessage } from './clean-ort-message.ts';
import { onnxSessionOptions } from './onnx-session-options.ts';
import { readOnnxSignature, type OnnxSignature, type OnnxValueSpec } from './onnx-signature.ts';
import { fromOrtTensor, zerosTensor } from './onnx-tensors.ts';

export const loadOnnxRuntime: RuntimeLoader = async (options) => {
  try {
    return await load(options);
  } catch (error) {
    // Only filesystem surprises get here (a file vanishing between steps): still a value.
    return {
      ok: false,
      reason: `could not load the ONNX model: ${cleanOrtMessage(error, options.modelDir)}`,
    };
  }
};

async function load(options: RuntimeLoadOptions): Promise<LoadOutcome> {
  if (options.format !== 'onnx') {
    return { ok: false, reason: `the onnx runtime cannot serve a '${options.format}' model` };
  }
  const sessionOptions = onnxSessionOptions(options.config);
  if (!sessionOptions.ok) return sessionOptions;

  const models = options.files.filter((file) => file.toLowerCase().endsWith('.onnx'));
  const modelFile = models[0];
  if (modelFile === undefined || models.length > 1) {
    const found = models.length === 0 ? 'none' : models.join(', ');
    return { ok: false, reason: `an ONNX model needs exactly one .onnx file; found ${found}` };
  }
  const paths = new Map<string, string>();
  for (const file of options.files) {
    const path = resolve(options.modelDir, file);
    const inside = relative(resolve(options.modelDir), path);
    if (inside === '' || inside.startsWith('..') || isAbsolute(inside)) {
      return { ok: false, reason: `'${file}' is not a path inside the model folder` };
    }
    paths.set(file, path);
  }
  const modelPath = paths.get(modelFile) ?? modelFile;

  let session: InferenceSession;
  try {
    session = await InferenceSession.create(modelPath, sessionOptions.options);
  } catch (error) {
    const message = cleanOrtMessage(error, options.modelDir);
    const why = await explainLoadFailure(paths);
    return {
      ok: false,
      reason: `onnxruntime could not load ${modelFile}: ${message}${why === null ? '' : ` (${why})`}`,
    };
  }

  const ready = await describeModel(options, modelFile, paths, session);
  if (!ready.ok) {
    await session.release();
    return ready;
  }
  return {
    ok: true,
    runtime: new OnnxRuntime(session, ready.signature, ready.modelBytes, options.modelDir),
  };
}

/** The fields of the registry's ONNX formatInfo this runtime uses. */
type ModelInfo = {
  readonly inputs: readonly OnnxTensorInfo[];
  readonly outputs: readonly OnnxTensorInfo[];
  readonly externalData?: readonly string[];
};

/** The registry's reading of the model (src/registry/formats/onnx.ts) over the same files. */
async function readModelInfo(
  paths: ReadonlyMap<string, string>,
): Promise<{ ok: true; info: ModelInfo } | { ok: false; reason: string }> {
  const artifacts = await Promise.all([...paths].map(([file, path]) => fileArtifact(path, file)));
  const check = await validateOnnx(artifacts);
  return check.ok ? { ok: true, info: check.info as ModelInfo } : check;
}

/**
 * Our own words for why onnxruntime refused a model it can parse, where we have them: its
 * "Unsupported data type: 16" means a BF16 input or output, for instance.
 */
async function explainLoadFailure(paths: ReadonlyMap<string, string>): Promise<string | null> {
  try {
    const model = await readModelInfo(paths);
    if (!model.ok) return null;
    const signature = readOnnxSignature(model.info, null);
    return signature.ok ? null : signature.reason;
  } catch {
    return null; // only an explanation: onnxruntime's message stands on its own
  }
}

type Description =
  | { readonly ok: true; readonly signature: OnnxSignature; readonly modelBytes: number }
  | { readonly ok: false; readonly reason: string };

async function describeModel(
  options: RuntimeLoadOptions,
  modelFile: string,
  paths: ReadonlyMap<string, string>,
  session: InferenceSession,
): Promise<Description> {
  const model = await readModelInfo(paths);
  if (!model.ok) return model;
  const { info } = model;
  const signature = readOnnxSignature(info, {
    inputs: session.inputNames,
    outputs: session.outputNames,
  });
  if (!signature.ok) return signature;
  if (options.schema !== null) {
    const schema = checkDeclaredSchema(options.schema, info);
    if (!schema.ok)
      return { ok: false, reason: `declared schema does not match the model: ${schema.reason}` };
  }
  // onnxruntime reports no memory figures: count the bytes the weights occupy on disk (the
  // model file and its external data), which the session holds in memory at least once.
  const weighed = [modelFile, ...(info.externalData ?? [])];
  const sizes = await Promise.all(
    weighed.map(async (file) => (await stat(paths.get(file) ?? join(options.modelDir, file))).size),
  );
  return { ok: true, signature: signature.signature, modelBytes: sizes.reduce((a, b) => a + b, 0) };
}

class OnnxRuntime implements ModelRuntime {
  readonly specVersion = runtimeSpecVersion;
  readonly name = 'onnx';
  readonly inputs: readonly TensorSpec[];
  readonly outputs: readonly TensorSpec[];
  #released = false;
  /** Runs in progress: unload waits for them, since releasing a session mid-run is unsafe. */
  readonly #running = new Set<Promise<unknown>>();

  constructor(
    private readonly session: InferenceSession,
    private readonly signature: OnnxSignature,
    private readonly modelBytes: number,
    private readonly modelDir: string,
  ) {
    // An open rank shows as shape [] marked anyRank (see docs/onnx.md).
    const spec = (value: OnnxValueSpec): TensorSpec =>
      value.shape === null
        ? { name: value.name, datatype: value.datatype, shape: [], anyRank: true }
        : { name: value.name, datatype: value.datatype, shape: value.shape };
    this.inputs = signature.inputs.map(spec);
    this.outputs = signature.outputs.map(spec);
  }

  /** One batch of 1 of zeros ('' for BYTES); variable dimensions become 1. Outputs, and a
   * failure (some models reject all-zero or 1-sized inputs), are ignored: warmup only primes. */
  async warmup(): Promise<void> {
    const inputs = this.signature.inputs.map((spec) =>
      zerosTensor(
        spec.name,
        spec.datatype,
        (spec.shape ?? [1]).map((dim) => (dim === -1 ? 1 : dim)),
      ),
    );
    await this.infer({ inputs });
  }

  async infer(request: InferRequest): Promise<InferOutcome> {
    if (this.#released)
      return { ok: false, kind: 'failed', message: 'the model has been unloaded' };
    const prepared = checkInferRequest(this.signature, request);
    if (!prepared.ok) return prepared;
    let results: InferenceSession.ReturnType;
    const run = this.session.run(prepared.feeds, prepared.fetches);
    this.#running.add(run);
    try {
      results = await run;
    } catch (error) {
      return {
        ok: false,
        kind: 'failed',
        message: `onnxruntime: ${cleanOrtMessage(error, this.modelDir)}`,
      };
    } finally {
      this.#running.delete(run);
    }
    const outputs: Tensor[] = [];
    for (const name of prepared.fetches) {
      const value = results[name];
      if (value === undefined) {
        return { ok: false, kind: 'failed', message: `onnxruntime returned no output '${name}'` };
      }
      const tensor = fromOrtTensor(name, value);
      if (typeof tensor === 'string') return { ok: false, kind: 'failed', message: tensor };
      outputs.push(tensor);
    }
    return { ok: true, outputs };
  }

  memoryBytes(): number {
    return this.modelBytes;
  }

  async unload(): Promise<void> {
    if (this.#released) return;
    this.#released = true;
    await Promise.allSettled(this.#running);
    await this.session.release();
  }
}
