// What a deploy's serving config may hold for the version's format, and an hf-llm endpoint's
// `llm` settings (llm-serving-config.ts), checked before anything is stored:
//
//   1. fields of the other kind: `llm` on an ONNX or tree version; the ONNX runtime's and the
//      dynamic batcher's fields (intraOpThreads, interOpThreads, graphOptimizationLevel,
//      batching) on an hf-llm one — whose engine batches continuously by itself
//      (`batching: null`, "off", is let through: it is what an LLM endpoint does anyway)
//   2. ranges, each field alone (llmServingLimits), then the one rule between two fields
//      (a step's token budget holds at least one token per running sequence, as vLLM asks)
//   3. against the model itself, from its config.json (a few KiB, read from the store): the
//      KV budget must hold at least one block of this model, and weights plus KV cache must
//      fit the engine's WebAssembly memory (4 GiB). The exact fit (with working memory) is
//      the worker's to find at load; what is refused here would fail there for sure.
//
// Every refusal names the field (`config.llm.blockSize`) in the message and in
// `details.field`, as KILN_VALIDATION_FAILED (400): the request, not the platform, is wrong.

import { availableParallelism } from 'node:os';
import { kilnError, type KilnError } from '../core/errors.ts';
import type { ArtifactFile, ModelFormat } from '../registry/formats/artifact-file.ts';
import { bytesPerBlock } from '../llm/kv-cache/block-pool.ts';
import {
  readLlamaConfig,
  type LlamaConfig,
  type LlamaConfigResult,
} from '../llm/loader/llama-config.ts';
import {
  resolveLlmServingConfig,
  type LlmServingConfig,
  type ResolvedLlmServingConfig,
} from '../llm/serving/llm-serving-config.ts';
import type { EndpointConfigInput } from './serving-defaults.ts';

export interface ConfigProblem {
  /** Path of the field in the deploy body, e.g. `config.llm.blockSize`. */
  readonly field: string;
  readonly reason: string;
}

/** The engine's memory: wasm32, 4 GiB (src/llm/engine/create-model.ts). */
const engineMemoryBytes = 4 * 2 ** 30;

type IntegerField = Exclude<keyof LlmServingConfig, 'prefixCaching'>;

/** Inclusive bounds of each integer field (threads' upper bound depends on the machine). */
export const llmServingLimits: Readonly<Record<IntegerField, readonly [number, number]>> = {
  kvCacheBytes: [1, engineMemoryBytes],
  blockSize: [1, 256], // and a power of two
  maxNumSeqs: [1, 4096],
  maxNumBatchedTokens: [1, 65_536],
  maxWaiting: [1, 100_000],
  threads: [1, 256], // and at most twice this machine's cores
  maxN: [1, 128],
  streamBufferBytes: [1, 2 ** 30],
  slowReaderTimeoutMs: [1, 3_600_000],
  maxPausedBlocks: [0, 10_000_000],
};

/** Most engine threads one replica may ask for: twice the cores, so a typo is no fork bomb. */
export function maxLlmThreads(cores: number = availableParallelism()): number {
  return Math.min(llmServingLimits.threads[1], Math.max(1, 2 * cores));
}

/** Fields of the ONNX runtime and of the dynamic batcher, which an hf-llm worker has not. */
const notForLlm = ['intraOpThreads', 'interOpThreads', 'graphOptimizationLevel'] as const;

/** Step 1: a field of the other kind of model, or null. */
export function checkFieldsForFormat(
  format: ModelFormat,
  config: EndpointConfigInput,
  what: string,
): ConfigProblem | null {
  if (format !== 'hf-llm') {
    if (config.llm === undefined) return null;
    return {
      field: 'config.llm',
      reason: `applies only to hf-llm versions; ${what} is ${format}`,
    };
  }
  if (config.batching !== undefined && config.batching !== null) {
    return {
      field: 'config.batching',
      reason: `does not apply to hf-llm versions (${what}): the LLM engine batches continuously; size it with config.llm (maxNumSeqs, maxNumBatchedTokens, maxWaiting)`,
    };
  }
  for (const field of notForLlm) {
    if (config[field] !== undefined) {
      return {
        field: `config.${field}`,
        reason: `is an ONNX runtime setting and does not apply to hf-llm versions (${what}); engine threads are config.llm.threads`,
      };
    }
  }
  return null;
}

/** Step 2: ranges, then the rule between fields; `cores` bounds threads. */
export function checkLlmServingConfig(
  llm: LlmServingConfig,
  cores: number = availableParallelism(),
): ConfigProblem | null {
  for (const [name, [min, limit]] of Object.entries(llmServingLimits) as [
    IntegerField,
    readonly [number, number],
  ][]) {
    const value = llm[name];
    if (value === undefined) continue;
    const max = name === 'threads' ? maxLlmThreads(cores) : limit;
    const field = `config.llm.${name}`;
    if (!Number.isSafeInteger(value) || value < min || value > max) {
      const why = name === 'threads' ? ` (twice this machine's ${cores} cores)` : '';
      return { field, reason: `must be a whole number from ${min} to ${max}${why}, got ${value}` };
    }
    if (name === 'blockSize' && (value & (value - 1)) !== 0) {
      return { field, reason: `must be a power of two (1, 2, 4, … 256), got ${value}` };
    }
  }
  const resolved = resolveLlmServingConfig(llm);
  if (resolved.maxNumBatchedTokens < resolved.maxNumSeqs) {
    const given = (name: keyof LlmServingConfig): string =>
      llm[name] === undefined ? ' (the default)' : '';
    return {
      field: 'config.llm.maxNumBatchedTokens',
      reason: `(${resolved.maxNumBatchedTokens}${given('maxNumBatchedTokens')}) must be at least maxNumSeqs (${resolved.maxNumSeqs}${given('maxNumSeqs')}): every running sequence computes a token each step`,
    };
  }
  return null;
}

/** Step 3: the settings against the model's own sizes. */
export function checkLlmAgainstModel(
  llm: ResolvedLlmServingConfig,
  model: LlamaConfig,
  numParameters: number | null,
  what: string,
): ConfigProblem | null {
  const perBlock = bytesPerBlock({
    numLayers: model.numHiddenLayers,
    numKvHeads: model.numKeyValueHeads,
    headDim: model.headDim,
    blockSize: llm.blockSize,
  });
  if (llm.kvCacheBytes < perBlock) {
    return {
      field: 'config.llm.kvCacheBytes',
      reason: `(${llm.kvCacheBytes}) holds no KV block of ${what}: one block of ${llm.blockSize} positions takes ${perBlock} bytes (${model.numHiddenLayers} layers × ${model.numKeyValueHeads} KV heads × ${model.headDim} dims × keys and values × 4-byte floats × ${llm.blockSize})`,
    };
  }
  const weightBytes = numParameters === null ? 0 : 4 * numParameters;
  if (weightBytes + llm.kvCacheBytes > engineMemoryBytes) {
    const gib = (bytes: number): string => (bytes / 2 ** 30).toFixed(2);
    return {
      field: 'config.llm.kvCacheBytes',
      reason: `(${gib(llm.kvCacheBytes)} GiB) and the float32 weights of ${what} (${gib(weightBytes)} GiB) exceed the engine's ${gib(engineMemoryBytes)} GiB of memory per thread`,
    };
  }
  return null;
}

/** The API's refusal for a problem: 400 KILN_VALIDATION_FAILED naming the field. */
export function configProblemError(problem: ConfigProblem): KilnError {
  return kilnError(
    'KILN_VALIDATION_FAILED',
    { reason: `${problem.field} ${problem.reason}` },
    { field: problem.field },
  );
}

const maxConfigBytes = 16 * 2 ** 20;

/**
 * The model's config.json as the engine reads it (readLlamaConfig: ok, or why the engine
 * cannot run it); null when the file cannot be read here (a missing or quarantined blob: the
 * worker reports that with its own code).
 */
export async function readModelConfig(
  file: ArtifactFile | null,
): Promise<LlamaConfigResult | null> {
  if (file === null || file.size > maxConfigBytes) return null;
  let text: string;
  try {
    text = (await file.read(0, file.size)).toString('utf8');
  } catch {
    return null;
  }
  try {
    return readLlamaConfig(JSON.parse(text) as unknown);
  } catch (error) {
    return { ok: false, message: `config.json: not JSON (${(error as Error).message})` };
  }
}
