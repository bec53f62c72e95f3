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
import type { EndpointView } from '../control/endpoints.ts';
import type { ApiKeyRecord } from '../store/serving-records.ts';
import type { LlmServingConfig } from '../llm/serving/llm-serving-config.ts';
import type { ResourceRequest } from '../placement/inventory.ts';
import type { TrafficView } from '../control/traffic/traffic-view.ts';

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
  /** Where the data plane (gateway) listens; absent on platforms without one. */
  readonly gatewayUrl?: string;
}

export interface BlobPut {
  readonly sha256: string;
  readonly size: number;
  readonly created: boolean;
}

// --- Serving (docs/api.md: Endpoints, API keys) ---

export type GraphOptimizationLevel = 'disabled' | 'basic' | 'extended' | 'all';
export const graphOptimizationLevels: readonly GraphOptimizationLevel[] = [
  'disabled',
  'basic',
  'extended',
  'all',
];

/** Per-endpoint serving settings; every field is optional and omitted when not set. */
export interface EndpointConfig {
  intraOpThreads?: number;
  interOpThreads?: number;
  graphOptimizationLevel?: GraphOptimizationLevel;
  maxBodyBytes?: number;
  /** null = off; absent = the runtime's default; missing fields take the platform's defaults. */
  batching?: BatchingSettings | null;
  timeoutMs?: number;
  maxConcurrency?: number;
  /** hf-llm endpoints only: the engine's and the streams' settings (absent = defaults). */
  llm?: LlmSettings;
  /** Served by this worker pool (`--pool`), not by replicas of its own. */
  pool?: string;
  /** Autoscaling (checked and completed by the platform; docs/autoscaling.md). */
  autoscale?: AutoscaleSettings;
  /** What one replica needs of a node (placement); absent: nothing (best effort). */
  resources?: ResourceRequest;
}

/** An autoscaling policy as a deploy or `kiln autoscale set` sends it (the rest defaulted). */
export interface AutoscaleSettings {
  minReplicas?: number;
  maxReplicas?: number;
  signal?: string;
  target?: number;
  customMetric?: string;
  /** With signal 'slo': the latency objective. */
  slo?: { latencyMs?: number; objective?: number };
  stableWindowMs?: number;
  panicWindowMs?: number;
  panicThreshold?: number;
  scaleDownDelayMs?: number;
  scaleToZero?: {
    idleMs?: number;
    queueLimit?: number;
    timeoutMs?: number;
    coldStartBudgetMs?: number;
  };
  predictive?: boolean | { startupMs?: number; historyDays?: number; bucketMs?: number };
}

// Autoscaling responses are the control plane's own types (type-only imports).
export type { ScaleStatus as ScaleStatusView } from '../control/autoscale/autoscale-controller.ts';
export type { ScaleEvent as ScaleEventView } from '../store/scaling-records.ts';

/** An hf-llm endpoint's serving settings as a deploy sends them (every field optional). */
export type LlmSettings = { -readonly [K in keyof LlmServingConfig]?: LlmServingConfig[K] };

/** Dynamic batching in the worker, as a deploy sends it (every field optional). */
export interface BatchingSettings {
  maxBatchSize?: number;
  maxDelayMicros?: number;
  preferredBatchSizes?: number[];
  maxQueue?: number;
  adaptive?: boolean;
}

/** `PUT /api/v1/endpoints/{name}`: give `version` or `alias`, or neither for the latest. */
export interface DeployBody {
  model: string;
  version?: number;
  alias?: string;
  /** Absent: 1 (the API's default). */
  replicas?: number;
  team?: string;
  config: EndpointConfig;
  /** How long the version this deploy replaces keeps running (default: the platform's). */
  warmGraceMs?: number;
}

// Serving responses are the control plane's own types (type-only imports).
export type { ReplicaState } from '../control/replica-plan.ts';
export type Endpoint = EndpointView;
export type EndpointStatus = EndpointView['status'];
export type ReplicaStatus = EndpointStatus['replicas'][number];
/** An API key as listed; the key itself is never shown again after creation. */
export type ApiKey = Omit<ApiKeyRecord, 'sha256'>;

export type { TeamLimitRecord as TeamLimit } from '../store/serving-records.ts';

/** A control-plane token as listed (never its digest; the token itself only at creation). */
export type { ShownToken as Token } from '../control/api/routes-access.ts';
import type { ShownToken } from '../control/api/routes-access.ts';

/** `POST /api/v1/tokens` → the token, with its secret `token` (shown once). */
export interface CreatedToken extends ShownToken {
  readonly token: string;
}

export type { AuditRecord as AuditEntry, TokenRole } from '../store/access-records.ts';

// --- Traffic management (docs/traffic-management.md) ---

export type {
  ShadowReport,
  ShadowReportEntry,
  TrafficView,
} from '../control/traffic/traffic-view.ts';
export type { TrafficEvent } from '../store/traffic-records.ts';

/** `POST /api/v1/endpoints/{name}/rollback` → what moved, and the traffic after it. */
export interface RollbackResult {
  readonly kind: 'rollout' | 'policy' | 'stable';
  readonly summary: string;
  readonly traffic: TrafficView;
}

/** `POST /api/v1/api-keys` → the key, with its secret `key` (shown once). */
export interface CreatedApiKey extends ApiKey {
  readonly key: string;
}

// --- Data plane: Open Inference Protocol v2, as the gateway answers ---

/** One output tensor of a v2 infer response. `data` is flat, row-major. */
export interface V2OutputTensor {
  readonly name: string;
  readonly datatype: string;
  readonly shape: readonly number[];
  readonly data: readonly unknown[];
  readonly parameters?: Readonly<Record<string, unknown>>;
}

export interface V2InferResponse {
  readonly model_name?: string;
  readonly model_version?: string;
  readonly id?: string;
  readonly outputs: readonly V2OutputTensor[];
  readonly parameters?: Readonly<Record<string, unknown>>;
}
