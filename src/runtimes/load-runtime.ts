// Picks the runtime for a model format. Runtimes are imported lazily so a worker loads only
// the one it needs (onnxruntime's native binding is large).

import type { LoadOutcome, RuntimeLoadOptions } from './runtime.ts';
import type { ModelFormat } from '../registry/formats/artifact-file.ts';

/** Formats a worker can serve today. */
export const servableFormats: readonly ModelFormat[] = ['xgboost', 'lightgbm', 'onnx', 'hf-llm'];

export async function loadRuntime(options: RuntimeLoadOptions): Promise<LoadOutcome> {
  switch (options.format) {
    case 'xgboost':
    case 'lightgbm': {
      const { loadTreeRuntime } = await import('./trees/load-tree-runtime.ts');
      return loadTreeRuntime(options);
    }
    case 'onnx': {
      const { loadOnnxRuntime } = await import('./onnx/load-onnx-runtime.ts');
      return loadOnnxRuntime(options);
    }
    case 'hf-llm':
      // Served by the worker's LLM engine (src/worker/llm/), not through this SPI.
      return { ok: false, reason: 'an hf-llm model is served by the LLM engine, not a runtime' };
    case 'external':
      return {
        ok: false,
        reason: `format ${options.format} cannot be served by a Kiln worker yet`,
      };
  }
}
