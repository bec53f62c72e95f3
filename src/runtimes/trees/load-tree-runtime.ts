// The tree runtime's entry point: formats 'xgboost' (a .json or .ubj from save_model) and
// 'lightgbm' (a text model). Reads the one model file, builds the predictor, checks it
// against the declared schema, and answers every problem as `{ ok: false, reason }`.

import { open, readFile, stat } from 'node:fs/promises';
import { resolve, sep } from 'node:path';
import type { ModelSchema, TensorSpec } from '../../core/tensor.ts';
import type { LoadOutcome, RuntimeLoadOptions, RuntimeLoader } from '../runtime.ts';
import { featureDatatypes } from './feature-rows.ts';
import { loadLightgbmModel } from './load-lightgbm-model.ts';
import { loadXgboostModel } from './load-xgboost-model.ts';
import { TreeModelRuntime, type TreeRuntimeSpecs } from './tree-model-runtime.ts';
import type { TreeLoadResult, TreePredictor } from './tree-predictor.ts';

/** JSON.parse and the text split need the whole file as one string; V8 caps strings near 512 MiB. */
const maxModelBytes = 256 << 20;

export const loadTreeRuntime: RuntimeLoader = async (options) => {
  try {
    return await load(options);
  } catch (error) {
    // Reading and parsing report their problems as values; this is for the unexpected.
    const message = error instanceof Error ? error.message : String(error);
    return { ok: false, reason: `the tree runtime failed to load the model: ${message}` };
  }
};

async function load(options: RuntimeLoadOptions): Promise<LoadOutcome> {
  const { format } = options;
  if (format !== 'xgboost' && format !== 'lightgbm') {
    return {
      ok: false,
      reason: `the tree runtime serves xgboost and lightgbm models, not ${format}`,
    };
  }
  const picked = await pickModelFile(options);
  if (!picked.ok) return picked;
  const { path, bytes } = picked;
  const loaded: TreeLoadResult =
    format === 'xgboost' ? loadXgboostModel(bytes) : loadLightgbmModel(bytes.toString('utf8'));
  if (!loaded.ok) return { ok: false, reason: `${path}: ${loaded.reason}` };
  const specs = runtimeSpecs(loaded.predictor, options.schema);
  if (typeof specs === 'string') return { ok: false, reason: specs };
  return { ok: true, runtime: new TreeModelRuntime(loaded.predictor, specs) };
}

type Picked = { ok: true; path: string; bytes: Buffer } | { ok: false; reason: string };

async function pickModelFile(options: RuntimeLoadOptions): Promise<Picked> {
  const files = options.files;
  let candidates: readonly string[];
  if (options.format === 'xgboost') {
    candidates = files.filter((file) => /\.(json|ubj)$/i.test(file));
  } else if (files.length <= 1) {
    candidates = files;
  } else {
    const heads = await Promise.all(
      files.map(async (file) => ({ file, head: await head(options.modelDir, file) })),
    );
    candidates = heads.filter(({ head }) => /^tree\r?\n/.test(head)).map(({ file }) => file);
  }
  const file = candidates[0];
  if (file === undefined || candidates.length > 1) {
    const what =
      options.format === 'xgboost'
        ? 'model file (.json or .ubj)'
        : "text model (first line 'tree')";
    const found =
      candidates.length === 0 ? `none among ${files.length} files` : candidates.join(', ');
    return {
      ok: false,
      reason: `a ${options.format} model needs exactly one ${what}; found ${found}`,
    };
  }
  const full = inside(options.modelDir, file);
  if (full === null) return { ok: false, reason: `${file}: the path leaves the model folder` };
  const info = await stat(full).catch(() => null);
  if (info === null || !info.isFile())
    return { ok: false, reason: `${file}: no such file in the model folder` };
  if (info.size > maxModelBytes) {
    return {
      ok: false,
      reason: `${file}: ${info.size} bytes is over the ${maxModelBytes >> 20} MiB a tree model may have`,
    };
  }
  return { ok: true, path: file, bytes: await readFile(full) };
}

async function head(modelDir: string, file: string): Promise<string> {
  const full = inside(modelDir, file);
  if (full === null) return '';
  const handle = await open(full, 'r').catch(() => null);
  if (handle === null) return '';
  try {
    const { buffer, bytesRead } = await handle.read(Buffer.alloc(6), 0, 6, 0);
    return buffer.toString('latin1', 0, bytesRead);
  } finally {
    await handle.close();
  }
}

function inside(modelDir: string, file: string): string | null {
  const root = resolve(modelDir);
  const full = resolve(root, file);
  return full.startsWith(root + sep) ? full : null;
}

/** Tensor specs from the model, named (and checked) by the declared schema when there is one. */
function runtimeSpecs(p: TreePredictor, schema: ModelSchema | null): TreeRuntimeSpecs | string {
  const f = p.numFeatures;
  const k = p.numOutputs;
  const declaredInput = schema?.inputs[0];
  const declaredOutput = schema?.outputs[0];
  // One value a row is [N] unless the schema declares a column ([-1, 1]): the answers then
  // have the shape the model's metadata promises.
  const outputShape = k !== 1 ? [-1, k] : declaredOutput?.shape.length === 2 ? [-1, 1] : [-1];
  if (schema !== null && (schema.inputs.length > 1 || schema.outputs.length > 1)) {
    return `a ${p.library} model takes one input and gives one output; the declared schema has ${schema.inputs.length} inputs and ${schema.outputs.length} outputs`;
  }
  if (declaredInput !== undefined) {
    const problem = inputProblem(declaredInput, f);
    if (problem !== null) return problem;
  }
  if (declaredOutput !== undefined) {
    const problem = outputProblem(declaredOutput, k);
    if (problem !== null) return problem;
  }
  // Undeclared datatypes are the library's own precision, so a client that sends what the
  // metadata says gets LightGBM's answers to the last bit (double) and XGBoost's (float32).
  const precision = libraryDatatype(p);
  return {
    input: {
      name: declaredInput?.name ?? 'input',
      datatype: declaredInput?.datatype ?? precision,
      shape: [-1, f],
    },
    output: {
      name: declaredOutput?.name ?? 'output',
      datatype: declaredOutput?.datatype ?? precision,
      shape: outputShape,
    },
  };
}

/** The precision the library reads features and gives predictions in. */
export function libraryDatatype(p: TreePredictor): 'FP32' | 'FP64' {
  return p.library === 'lightgbm' ? 'FP64' : 'FP32';
}

function inputProblem(spec: TensorSpec, numFeatures: number): string | null {
  const where = `declared input '${spec.name}'`;
  if (!featureDatatypes.includes(spec.datatype)) {
    return `${where}: datatype ${spec.datatype} cannot carry tree features (declare a numeric one: FP64, FP32, an integer type or BOOL)`;
  }
  const last = spec.shape[1];
  if (spec.shape.length !== 2 || (last !== -1 && last !== numFeatures)) {
    return `${where}: shape [${spec.shape.join(', ')}] does not fit the model, which takes [-1, ${numFeatures}] (${numFeatures} features)`;
  }
  return null;
}

function outputProblem(spec: TensorSpec, numOutputs: number): string | null {
  const where = `declared output '${spec.name}'`;
  if (spec.datatype !== 'FP32' && spec.datatype !== 'FP64') {
    return `${where}: datatype ${spec.datatype} is not what a tree model gives (FP32 or FP64)`;
  }
  const fits =
    numOutputs === 1
      ? spec.shape.length === 1 ||
        (spec.shape.length === 2 && (spec.shape[1] === 1 || spec.shape[1] === -1))
      : spec.shape.length === 2 && (spec.shape[1] === -1 || spec.shape[1] === numOutputs);
  if (!fits) {
    const shape = numOutputs === 1 ? '[-1]' : `[-1, ${numOutputs}]`;
    return `${where}: shape [${spec.shape.join(', ')}] does not fit the model, which gives ${shape}`;
  }
  return null;
}
