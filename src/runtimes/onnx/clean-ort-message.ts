// onnxruntime's error messages, made fit for a user: no absolute paths of our staging folders,
// no C++ source locations or status prefixes, no terminal colours, one line.
//
//   "Load model from /srv/kiln/v/3/model.onnx failed:Protobuf parsing failed."
//     -> "Protobuf parsing failed."
//   "External data path validation failed for initializer: bias. Error: tensorprotoutils.cc:461
//    ValidateExternalDataPathFromDir External data path does not exist: \"/srv/.../w.bin\""
//     -> "External data path validation failed for initializer: bias. Error: External data
//        path does not exist: \"w.bin\""
//   "... Status Message: /onnxruntime_src/.../reshape_helper.h:91 onnxruntime::ReshapeHelper::
//    ReshapeHelper(const onnxruntime::TensorShape&, ...) input_shape_size == ..."
//     -> "... Status Message: input_shape_size == ..."

const ansiColour = new RegExp(String.raw`\u001b\[[0-9;]*m`, 'g');
const loadPrefix = /^Load model from .*? failed:\s*/;
const statusPrefix = /\[ONNXRuntimeError\]\s*:\s*\d+\s*:\s*[A-Z_]+\s*:\s*/g;
// "[/path/]file.cc:123 Namespace::Function(args) ": where in ORT's C++ the error was raised.
const sourceLocation = /(?:[\w.-]*\/)*[\w.-]+\.(?:cc|cpp|h):\d+\s+(?:[\w:~]+(?:\([^)]*\))?\s+)?/g;

export function cleanOrtMessage(error: unknown, modelDir: string): string {
  const raw = error instanceof Error ? error.message : String(error);
  const dir = modelDir.endsWith('/') ? modelDir : `${modelDir}/`;
  const cleaned = raw
    .replace(ansiColour, '')
    .replace(loadPrefix, '')
    .replace(statusPrefix, '')
    .replace(sourceLocation, '')
    .split(modelDir === '' ? '\u0000' : dir)
    .join('')
    .replace(/\s+/g, ' ')
    .trim();
  return cleaned === '' ? 'onnxruntime gave no message' : cleaned;
}
