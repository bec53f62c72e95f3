// The shapes of the control-plane API (docs/api.md) as the CLI reads them. The CLI trusts
// the platform to send these; it renders what it gets and never re-validates.

// Response types are the platform's own domain types (type-only imports: the CLI still
// reaches the platform only over HTTP). Request bodies are built here, so they stay mutable.
export { modelFormats, type ModelFormat } from '../registry/formats/artifact-file.ts';
export type {
  AliasEntry,
  ManifestFile as VersionFile,
  Model,
  ModelVersion,
  TrustedKey,
} from '../registry/types.ts';
export type { GcResult } from '../registry/artifact-store.ts';
import type { ManifestFile as VersionFile } from '../registry/types.ts';
import type { ModelFormat } from '../registry/formats/artifact-file.ts';

export type ServingProtocol = 'v2' | 'openai';

export interface Page<T> {
  readonly items: T[];
  readonly nextPageToken: string | null;
}

export interface TensorSpec {
  readonly name: string;
  readonly datatype: string;
  readonly shape: readonly number[];
}

export interface Schema {
  readonly inputs: readonly TensorSpec[];
  readonly outputs: readonly TensorSpec[];
}

export interface Hardware {
  cpus?: number;
  memoryBytes?: number;
  gpus?: number;
  gpuMemoryBytes?: number;
  accelerator?: string;
  [key: string]: string | number | undefined;
}

export interface VersionMetadata {
  trainingJobId?: string;
  datasetVersion?: string;
  metrics?: Record<string, number>;
  hardware?: Hardware;
  dependencies?: Record<string, string>;
  extra?: Record<string, string>;
}

export interface Lineage {
  run?: string;
  datasetUri?: string;
  datasetVersion?: string;
  experiment?: string;
}

export interface ExternalTarget {
  url?: string;
  image?: string;
  protocol: ServingProtocol;
}

export interface Signature {
  readonly keyId: string;
  readonly signature: string;
}

export interface CreateVersionBody {
  format: ModelFormat;
  files: VersionFile[];
  schema?: Schema;
  metadata?: VersionMetadata;
  lineage?: Lineage;
  tags?: Record<string, string>;
  external?: ExternalTarget;
  signature?: Signature;
  /** Create the model along with this version if it does not exist yet. */
  createModel?: { team?: string; description?: string };
}

export interface AliasMove {
  readonly alias: string;
  readonly version: number;
  readonly previousVersion: number | null;
}

export interface VerifyResult {
  readonly ok: boolean;
  readonly files: number;
  readonly bytes: number;
  readonly signature: 'valid' | 'unsigned';
}

export interface Policy {
  readonly signing: {
    readonly requireSignature: boolean;
    readonly teams: Readonly<Record<string, { readonly requireSignature: boolean }>>;
  };
}

export interface Health {
  readonly status: string;
  readonly version: string;
  readonly store: string;
  readonly home: string;
}

export interface BlobPut {
  readonly sha256: string;
  readonly size: number;
  readonly created: boolean;
}
