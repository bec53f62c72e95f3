// The safetensors weights of a Hugging Face folder: `model.safetensors`, or else several
// shards listed by `model.safetensors.index.json`:
//
//   { "metadata": {...}, "weight_map": { "model.norm.weight": "model-00002-of-00002.safetensors", ... } }
//
// Opening reads only headers (and the index), so every name, dtype and shape can be checked
// before a single weight byte is read. Reading then goes one file at a time, one tensor at a
// time, through a file handle: memory holds the tensors being returned plus a 2 MiB scratch,
// never a whole file, let alone a file twice.

import { open, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { SafetensorsTensor } from '../../registry/formats/safetensors.ts';
import { isJsonObject } from '../../registry/formats/read-json-object.ts';
import { readJsonFile } from './read-json-file.ts';
import { readFloat32Tensor, scratchElements } from './read-float32-tensor.ts';
import { openSafetensorsFile, type SafetensorsFile } from './safetensors-file.ts';

export const singleFileName = 'model.safetensors';
export const indexFileName = 'model.safetensors.index.json';
const maxIndexBytes = 64 << 20;

export interface LocatedTensor {
  readonly file: SafetensorsFile;
  readonly tensor: SafetensorsTensor;
}

export interface SafetensorsCheckpoint {
  readonly directory: string;
  /** One entry per file, in shard-name order. */
  readonly files: readonly SafetensorsFile[];
  /** Every tensor of the checkpoint by name, with the file that holds it. */
  readonly tensors: ReadonlyMap<string, LocatedTensor>;
}

export type CheckpointResult =
  | { readonly ok: true; readonly checkpoint: SafetensorsCheckpoint }
  | { readonly ok: false; readonly message: string };

export async function openSafetensorsCheckpoint(directory: string): Promise<CheckpointResult> {
  // transformers looks for the single file first and falls back to the index; so do we.
  const single = await openSafetensorsFile(join(directory, singleFileName));
  if (single.ok) {
    const tensors = new Map<string, LocatedTensor>();
    for (const tensor of single.file.header.tensors) {
      tensors.set(tensor.name, { file: single.file, tensor });
    }
    return { ok: true, checkpoint: { directory, files: [single.file], tensors } };
  }
  if (!single.missing) return { ok: false, message: single.message };

  const index = await readJsonFile(directory, indexFileName, maxIndexBytes);
  if (index.ok) return openSharded(directory, index.value['weight_map']);
  if (!index.missing) return { ok: false, message: index.message };
  return { ok: false, message: await describeMissingWeights(directory) };
}

async function openSharded(directory: string, weightMap: unknown): Promise<CheckpointResult> {
  const indexPath = join(directory, indexFileName);
  const fail = (why: string): CheckpointResult => ({ ok: false, message: `${indexPath}: ${why}` });
  if (!isJsonObject(weightMap)) return fail('has no "weight_map" object');
  const entries = Object.entries(weightMap);
  if (entries.length === 0) return fail('"weight_map" lists no tensors');
  const shardNames = new Set<string>();
  for (const [name, shard] of entries) {
    // Shards sit next to the index; anything else could read files outside the model.
    if (
      typeof shard !== 'string' ||
      !/^[^/\\]+\.safetensors$/.test(shard) ||
      shard.startsWith('.')
    ) {
      return fail(
        `weight_map['${name}'] must be a *.safetensors file name in the same folder, got ${JSON.stringify(shard)}`,
      );
    }
    shardNames.add(shard);
  }
  const files = new Map<string, SafetensorsFile>();
  for (const shard of [...shardNames].sort()) {
    const opened = await openSafetensorsFile(join(directory, shard));
    if (!opened.ok) {
      if (opened.missing) {
        const user = entries.find(([, s]) => s === shard)?.[0] ?? '';
        return fail(`shard ${shard} (holding tensor '${user}') is missing from the folder`);
      }
      return { ok: false, message: opened.message };
    }
    files.set(shard, opened.file);
  }
  const tensors = new Map<string, LocatedTensor>();
  for (const [name, shard] of entries) {
    const file = files.get(shard as string);
    const tensor = file?.tensorsByName.get(name);
    if (file === undefined || tensor === undefined) {
      return fail(`maps tensor '${name}' to ${String(shard)}, which does not contain it`);
    }
    tensors.set(name, { file, tensor });
  }
  // A shard tensor the index does not list: the index and the shards disagree about the model.
  for (const [shard, file] of files) {
    for (const tensor of file.header.tensors) {
      if (tensors.get(tensor.name)?.file !== file) {
        return fail(`does not map tensor '${tensor.name}', which ${shard} contains`);
      }
    }
  }
  return { ok: true, checkpoint: { directory, files: [...files.values()], tensors } };
}

async function describeMissingWeights(directory: string): Promise<string> {
  let names: string[];
  try {
    names = await readdir(directory);
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error);
    return `${directory}: cannot list the model folder (${detail})`;
  }
  const base = `${directory}: no weights: needs ${singleFileName} or ${indexFileName}`;
  const others = names.filter((n) => n.endsWith('.safetensors')).sort();
  if (others.length > 0) return `${base} (found ${others.join(', ')} but no index naming them)`;
  const pickled = names.filter((n) => /\.(bin|pt|pth|ckpt)$/.test(n)).sort();
  if (pickled.length > 0) {
    return `${base} (${pickled.join(', ')} is a pickle checkpoint, which is not loaded; convert it to safetensors)`;
  }
  return base;
}

export type ReadTensorsResult =
  | { readonly ok: true; readonly tensors: ReadonlyMap<string, Float32Array> }
  | { readonly ok: false; readonly message: string };

/**
 * Reads the named tensors as float32, one file at a time and in file order within each file
 * (sequential reads). The caller has checked the names exist; an unknown name is an error.
 */
export async function readCheckpointTensors(
  checkpoint: SafetensorsCheckpoint,
  names: readonly string[],
): Promise<ReadTensorsResult> {
  const byFile = new Map<SafetensorsFile, SafetensorsTensor[]>();
  for (const name of names) {
    const located = checkpoint.tensors.get(name);
    if (located === undefined) {
      return {
        ok: false,
        message: `${checkpoint.directory}: no tensor '${name}' in the checkpoint`,
      };
    }
    const list = byFile.get(located.file) ?? [];
    list.push(located.tensor);
    byFile.set(located.file, list);
  }
  const out = new Map<string, Float32Array>();
  const scratch = new Uint16Array(scratchElements);
  for (const file of checkpoint.files) {
    const wanted = byFile.get(file);
    if (wanted === undefined) continue;
    wanted.sort((a, b) => a.dataOffsets[0] - b.dataOffsets[0]);
    let handle;
    try {
      handle = await open(file.path, 'r');
    } catch (error) {
      return { ok: false, message: `${file.path}: cannot be opened (${describeError(error)})` };
    }
    try {
      const source = { handle, path: file.path, dataStart: file.header.dataStart };
      for (const tensor of wanted) {
        const read = await readFloat32Tensor(source, tensor, scratch);
        if (!read.ok) return read;
        out.set(tensor.name, read.data);
      }
    } catch (error) {
      return { ok: false, message: `${file.path}: read failed (${describeError(error)})` };
    } finally {
      await handle.close();
    }
  }
  return { ok: true, tensors: out };
}

function describeError(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
