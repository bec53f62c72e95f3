// Hugging Face LLM folders: config.json, tokenizer.json and safetensors weights, optionally
// sharded with model.safetensors.index.json. Weights are checked by their headers only
// (safetensors.ts); pickled weights (pytorch_model.bin) are not accepted as weights.

import { posix } from 'node:path';
import type { ArtifactFile, FormatCheck } from './artifact-file.ts';
import { isJsonObject, readJsonObject } from './read-json-object.ts';
import { readSafetensorsHeader, type SafetensorsHeader } from './safetensors.ts';

const maxConfigBytes = 16 << 20;
const maxTokenizerBytes = 256 << 20;
const maxIndexBytes = 64 << 20;
const indexPath = 'model.safetensors.index.json';

export async function validateHfLlm(files: readonly ArtifactFile[]): Promise<FormatCheck> {
  const byPath = new Map(files.map((file) => [file.path, file]));

  const configFile = byPath.get('config.json');
  if (configFile === undefined) {
    return {
      ok: false,
      reason: 'a Hugging Face LLM artifact needs config.json at its root; none was found',
    };
  }
  const config = await readJsonObject(configFile, maxConfigBytes);
  if (!config.ok) return { ...config, path: configFile.path };
  const { architectures, model_type: modelType } = config.value;
  const validArchitectures =
    Array.isArray(architectures) &&
    architectures.length > 0 &&
    architectures.every((a) => typeof a === 'string' && a !== '');
  const validModelType = typeof modelType === 'string' && modelType !== '';
  if (!validArchitectures && !validModelType) {
    return {
      ok: false,
      reason: 'config.json: needs "architectures" (a list of class names) or "model_type"',
      path: configFile.path,
    };
  }

  const tokenizerFile = byPath.get('tokenizer.json');
  if (tokenizerFile === undefined) {
    return {
      ok: false,
      reason:
        'a Hugging Face LLM artifact needs tokenizer.json (a fast tokenizer) at its root; none was found',
    };
  }
  const tokenizer = await readJsonObject(tokenizerFile, maxTokenizerBytes);
  if (!tokenizer.ok) return { ...tokenizer, path: tokenizerFile.path };
  if (!isJsonObject(tokenizer.value['model'])) {
    return {
      ok: false,
      reason: 'tokenizer.json: has no "model" object; is it a tokenizers file?',
      path: tokenizerFile.path,
    };
  }

  const shards = files.filter((file) => file.path.endsWith('.safetensors'));
  if (shards.length === 0) {
    const pickled = files.find((file) => /\.(bin|pt|pth|ckpt)$/.test(file.path));
    const hint =
      pickled === undefined
        ? ''
        : ` (${pickled.path} is a pickle-based checkpoint; convert it to safetensors)`;
    return {
      ok: false,
      reason: `a Hugging Face LLM artifact needs *.safetensors weights; found none${hint}`,
    };
  }
  const headers = new Map<string, SafetensorsHeader>();
  for (const shard of shards) {
    const result = await readSafetensorsHeader(shard);
    if (!result.ok) return { ok: false, reason: result.reason, path: shard.path };
    headers.set(shard.path, result.header);
  }

  const index = byPath.get(indexPath);
  if (index !== undefined) {
    const problem = await checkIndex(index, headers);
    if (problem !== null) return { ok: false, reason: problem, path: index.path };
  }

  let numTensors = 0;
  let numParameters = 0;
  const dtypes = new Set<string>();
  for (const header of headers.values()) {
    for (const tensor of header.tensors) {
      numTensors += 1;
      numParameters += tensor.numElements;
      dtypes.add(tensor.dtype);
    }
  }
  return {
    ok: true,
    info: {
      architectures: validArchitectures ? architectures : null,
      modelType: validModelType ? modelType : null,
      numTensors,
      numParameters,
      dtypes: [...dtypes].sort(),
      shards: shards.length,
    },
  };
}

/** Every weight_map entry must name a shard in the artifact that holds that tensor. */
async function checkIndex(
  index: ArtifactFile,
  headers: ReadonlyMap<string, SafetensorsHeader>,
): Promise<string | null> {
  const parsed = await readJsonObject(index, maxIndexBytes);
  if (!parsed.ok) return parsed.reason;
  const weightMap = parsed.value['weight_map'];
  if (!isJsonObject(weightMap)) return `${index.path}: has no "weight_map" object`;
  const names = new Map<string, Set<string>>();
  for (const [path, header] of headers) names.set(path, new Set(header.tensors.map((t) => t.name)));
  const directory = posix.dirname(index.path);
  for (const [tensor, shard] of Object.entries(weightMap)) {
    if (typeof shard !== 'string')
      return `${index.path}: weight_map['${tensor}'] is not a file name`;
    const shardPath = posix.normalize(posix.join(directory, shard));
    const held = names.get(shardPath);
    if (held === undefined) {
      return `${index.path}: tensor '${tensor}' is mapped to ${shard}, which is not a .safetensors file in the artifact`;
    }
    if (!held.has(tensor))
      return `${index.path}: tensor '${tensor}' is mapped to ${shard}, which does not contain it`;
  }
  return null;
}
