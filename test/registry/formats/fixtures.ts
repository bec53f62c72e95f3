// Shared helpers for the format tests: the registry fixtures (made by
// fixtures/registry/make_fixtures.py), the shared LightGBM models, and a seeded random source.

import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ArtifactFile } from '../../../src/registry/formats/artifact-file.ts';
import { fileArtifact } from '../../../src/registry/formats/file-artifact.ts';

export const registryFixtures = new URL('../../../fixtures/registry/', import.meta.url).pathname;
export {
  lightgbmFixtures,
  haveLightgbmFixtures,
  lightgbmSkip,
} from '../../helpers/shared-fixtures.ts';

/** A fixture file as an ArtifactFile, optionally under another manifest path. */
export function fixture(relativePath: string, manifestPath?: string): Promise<ArtifactFile> {
  const name = manifestPath ?? relativePath.split('/').pop() ?? relativePath;
  return fileArtifact(join(registryFixtures, relativePath), name);
}

export function fixtureBytes(relativePath: string): Buffer {
  return readFileSync(join(registryFixtures, relativePath));
}

/** Every file of a fixture folder, with paths relative to the folder. */
export function fixtureFolder(folder: string): Promise<ArtifactFile[]> {
  const dir = join(registryFixtures, folder);
  return Promise.all(
    readdirSync(dir)
      .sort()
      .map((name) => fileArtifact(join(dir, name), name)),
  );
}

export interface TensorInfo {
  readonly name: string;
  readonly datatype: string;
  readonly shape: readonly number[];
}

export interface Expected {
  readonly xgboost: {
    readonly xgboostVersion: readonly number[];
    readonly booster: string;
    readonly objective: string;
    readonly numFeature: number;
    readonly numClass: number;
    readonly numTrees: number;
    readonly baseScore: number;
    readonly featureNames: readonly string[];
  };
  readonly 'mlp.onnx': OnnxExpected;
  readonly 'helper.onnx': OnnxExpected;
  readonly 'onnx-external': { readonly externalFiles: readonly string[] };
  readonly 'tiny-llm': {
    readonly architectures: readonly string[];
    readonly modelType: string;
    readonly numTensors: number;
    readonly numParameters: number;
    readonly dtypes: readonly string[];
    readonly tensorNames: readonly string[];
  };
  readonly pickles: Readonly<
    Record<string, { readonly protocol?: number; readonly zipEntry?: string }>
  >;
}

export interface OnnxExpected {
  readonly irVersion: number;
  readonly opsets: readonly { readonly domain: string; readonly version: number }[];
  readonly producer: string;
  readonly inputs: readonly TensorInfo[];
  readonly outputs: readonly TensorInfo[];
}

export const expected = JSON.parse(
  readFileSync(join(registryFixtures, 'expected.json'), 'utf8'),
) as Expected;

/** Deterministic bytes (xorshift32), so failures reproduce. */
export function seededBytes(seed: number, length: number): Buffer {
  let state = seed >>> 0 || 1;
  const out = Buffer.alloc(length);
  for (let i = 0; i < length; i += 1) {
    state ^= state << 13;
    state >>>= 0;
    state ^= state >>> 17;
    state ^= state << 5;
    state >>>= 0;
    out[i] = state & 0xff;
  }
  return out;
}

/** A safetensors file from a header object and a data section of `dataBytes` zero bytes. */
export function safetensors(header: Record<string, unknown>, dataBytes: number, padTo = 0): Buffer {
  const json = Buffer.from(JSON.stringify(header).padEnd(padTo, ' '));
  const length = Buffer.alloc(8);
  length.writeBigUInt64LE(BigInt(json.length));
  return Buffer.concat([length, json, Buffer.alloc(dataBytes)]);
}
