// The shapes of the control-plane API (docs/api.md) as the CLI reads them. The CLI trusts
// the platform to send these; it renders what it gets and never re-validates.

export type ModelFormat = 'onnx' | 'xgboost' | 'lightgbm' | 'hf-llm' | 'external';
export const modelFormats: readonly ModelFormat[] = [
  'onnx',
  'xgboost',
  'lightgbm',
  'hf-llm',
  'external',
];

export type ServingProtocol = 'v2' | 'openai';

export interface Page<T> {
  readonly items: T[];
  readonly nextPageToken: string | null;
}

export interface Model {
  readonly name: string;
  readonly team: string;
  readonly description: string;
  readonly createdAt: string;
  readonly latestVersion: number | null;
  readonly versionCount: number;
  readonly aliases: Readonly<Record<string, number>>;
}

export interface VersionFile {
  readonly path: string;
  readonly size: number;
  readonly sha256: string;
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

export interface ModelVersion {
  readonly model: string;
  readonly version: number;
  readonly format: string;
  readonly files: readonly VersionFile[];
  readonly sizeBytes: number;
  readonly manifestDigest: string;
  readonly schema: Schema | null;
  readonly metadata: VersionMetadata | null;
  readonly lineage: Lineage | null;
  readonly tags: Readonly<Record<string, string>> | null;
  readonly formatInfo: Readonly<Record<string, unknown>> | null;
  readonly external: ExternalTarget | null;
  readonly signature: Signature | null;
  readonly aliases: readonly string[];
  readonly createdAt: string;
  readonly deletedAt: string | null;
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

export interface AliasEntry {
  readonly alias: string;
  readonly version: number;
  readonly updatedAt: string;
}

export interface VerifyResult {
  readonly ok: boolean;
  readonly files: number;
  readonly bytes: number;
  readonly signature: 'valid' | 'unsigned';
}

export interface TrustedKey {
  readonly keyId: string;
  readonly name: string;
  readonly team: string | null;
  readonly publicKey: string;
  readonly createdAt: string;
}

export interface Policy {
  readonly signing: {
    readonly requireSignature: boolean;
    readonly teams: Readonly<Record<string, { readonly requireSignature: boolean }>>;
  };
}

export interface GcResult {
  readonly removedBlobs: number;
  readonly removedBytes: number;
  readonly keptBlobs: number;
  readonly dryRun: boolean;
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
