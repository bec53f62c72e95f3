// How the control plane and a pool worker talk (issue 14, pools). A pool worker is started
// with no model: the control plane tells it which endpoints it may serve — each endpoint's
// version, files and serving settings — by PUTting its whole assignment, and the worker
// refuses (404) any model not in the last assignment it took, so no worker serves a model
// that is not deployed on its pool. Both calls carry the worker's own token (from its spec):
// another process on the host cannot widen what it serves.
//
//   control plane ──PUT /kiln/v1/pool/models {generation, models}──▶ pool worker
//                 ◀──GET /kiln/v1/pool (status: resident models, loads, evictions)──
//   gateway ──/v2/models/{endpoint}/infer──▶ pool worker (loads on first use, LRU evicts)
//           ◀── answer + `kiln-pool-resident: e1,e2,…` (what it holds now, for routing)

import type { ModelSchema } from '../../core/tensor.ts';
import type { ModelFormat } from '../../registry/formats/artifact-file.ts';
import type { ManifestFile } from '../../registry/manifest.ts';
import type { RuntimeConfig } from '../../runtimes/runtime.ts';

export const poolModelsPath = '/kiln/v1/pool/models';
export const poolStatusPath = '/kiln/v1/pool';
/** The worker's token on the control plane's calls. */
export const poolTokenHeader = 'kiln-pool-token';
/** On every answer of a pool worker: the endpoints it holds loaded now, comma-separated. */
export const poolResidentHeader = 'kiln-pool-resident';

/** What a pool worker process is started with (WorkerSpec.pool). */
export interface PoolWorkerSettings {
  readonly name: string;
  /** Model memory it holds before evicting the least recently used (bytes, measured). */
  readonly memoryBudgetBytes: number;
  /** Required on the control plane's calls (poolTokenHeader). */
  readonly token: string;
}

/** One endpoint a pool worker may serve: what a dedicated worker's spec would say of it. */
export interface PoolModel {
  readonly endpoint: string;
  /** serving-defaults.ts workerRevision: a redeploy is a new one (the old copy is dropped). */
  readonly revision: string;
  readonly model: string;
  readonly version: number;
  readonly format: ModelFormat;
  readonly files: readonly ManifestFile[];
  readonly schema: ModelSchema | null;
  readonly maxBodyBytes: number;
  readonly config: RuntimeConfig;
  readonly defaultTimeoutMs: number | null;
}

export interface PoolAssignment {
  /** Increases with every change the control plane makes; an older one is ignored. */
  readonly generation: number;
  readonly models: readonly PoolModel[];
}

export interface ResidentModel {
  readonly endpoint: string;
  readonly revision: string;
  /** As the runtime measured it once loaded. */
  readonly bytes: number;
  readonly loadedAt: string;
  readonly lastUsedAt: string;
  /** Infer requests it answered since loaded. */
  readonly requests: number;
}

export interface PoolWorkerStatus {
  readonly pool: string;
  readonly replica: string;
  readonly memoryBudgetBytes: number;
  readonly residentBytes: number;
  /** Most recently used first. */
  readonly models: readonly ResidentModel[];
  /** Endpoints being loaded now. */
  readonly loading: readonly string[];
  /** The assignment's generation and size. */
  readonly generation: number;
  readonly assigned: number;
  readonly loads: number;
  readonly loadFailures: number;
  readonly evictions: number;
  /** Requests for a model already loaded / that had to wait for its load. */
  readonly hits: number;
  readonly misses: number;
}
