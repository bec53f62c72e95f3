// The registry's domain types, as the store keeps them and the API returns them.

import type { ModelFormat, FormatInfo } from './formats/artifact-file.ts';
import type { ManifestFile } from './manifest.ts';
import type { ManifestSignature } from './signing.ts';

export type { ModelFormat, ManifestFile, ManifestSignature };

export { tensorDatatypes } from '../core/tensor.ts';
export type { TensorDatatype, TensorSpec, ModelSchema } from '../core/tensor.ts';
import type { ModelSchema } from '../core/tensor.ts';

export interface HardwareNeeds {
  readonly cpus?: number;
  readonly memoryBytes?: number;
  readonly gpus?: number;
  readonly gpuMemoryBytes?: number;
  readonly accelerator?: string;
}

export interface VersionMetadata {
  readonly trainingJobId?: string;
  readonly datasetVersion?: string;
  readonly metrics?: Readonly<Record<string, number>>;
  readonly hardware?: HardwareNeeds;
  readonly dependencies?: Readonly<Record<string, string>>;
  readonly extra?: Readonly<Record<string, string>>;
}

export interface Lineage {
  readonly run?: string;
  readonly datasetUri?: string;
  readonly datasetVersion?: string;
  readonly experiment?: string;
}

export interface ExternalSpec {
  readonly url?: string;
  readonly image?: string;
  readonly protocol: 'v2' | 'openai';
}

export interface Model {
  readonly name: string;
  readonly team: string;
  readonly description: string;
  readonly createdAt: string;
  readonly latestVersion: number | null;
  /** Live (not deleted) versions. */
  readonly versionCount: number;
  readonly aliases: Readonly<Record<string, number>>;
}

export interface ModelVersion {
  readonly model: string;
  readonly version: number;
  readonly format: ModelFormat;
  readonly files: readonly ManifestFile[];
  readonly sizeBytes: number;
  readonly manifestDigest: string;
  readonly schema: ModelSchema | null;
  readonly metadata: VersionMetadata;
  readonly lineage: Lineage;
  readonly tags: Readonly<Record<string, string>>;
  readonly formatInfo: FormatInfo;
  readonly external: ExternalSpec | null;
  readonly signature: ManifestSignature | null;
  readonly aliases: readonly string[];
  readonly createdAt: string;
  readonly deletedAt: string | null;
}

export interface AliasEntry {
  readonly alias: string;
  readonly version: number;
  readonly updatedAt: string;
}

export interface TrustedKey {
  readonly keyId: string;
  readonly name: string;
  readonly team: string | null;
  readonly publicKey: string;
  readonly createdAt: string;
}

export interface SigningPolicy {
  readonly requireSignature: boolean;
  readonly teams: Readonly<Record<string, { readonly requireSignature: boolean }>>;
}

export interface Page<T> {
  readonly items: readonly T[];
  readonly nextPageToken: string | null;
}
