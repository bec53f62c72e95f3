// The registry's format check: does the uploaded artifact parse as the format it declares?
// Each format has its own validator file; this dispatches. Bad input is a value
// ({ ok: false, reason }), never an exception; an exception means the storage under the
// ArtifactFile failed. Pickle detection is separate (pickle.ts): run findPickle on every
// artifact too, whatever its format.

import type { ArtifactFile, FormatCheck, ModelFormat } from './artifact-file.ts';
import { validateExternal } from './external.ts';
import { validateHfLlm } from './hf-llm.ts';
import { validateLightgbm } from './lightgbm.ts';
import { validateOnnx } from './onnx.ts';
import { validateXgboost } from './xgboost.ts';

export interface ValidateFormatOptions {
  /** The spec of an 'external' model: { url | image, protocol }. */
  readonly external?: unknown;
}

export async function validateFormat(
  format: ModelFormat,
  files: readonly ArtifactFile[],
  options: ValidateFormatOptions = {},
): Promise<FormatCheck> {
  switch (format) {
    case 'onnx':
      return validateOnnx(files);
    case 'xgboost':
      return validateXgboost(files);
    case 'lightgbm':
      return validateLightgbm(files);
    case 'hf-llm':
      return validateHfLlm(files);
    case 'external':
      return validateExternal(options.external);
  }
  // Reachable only from untyped callers.
  const unknown: never = format;
  return { ok: false, reason: `unknown model format ${JSON.stringify(unknown)}` };
}
