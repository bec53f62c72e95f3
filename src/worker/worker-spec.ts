// What the control plane tells a worker process to serve. Written as a JSON file by the
// local backend and passed as `--spec FILE`; on Kubernetes it will be a mounted config.

import { readFile } from 'node:fs/promises';
import type { ModelSchema } from '../core/tensor.ts';
import type { ModelFormat } from '../registry/formats/artifact-file.ts';
import type { ArtifactLocator } from '../registry/artifact-storage.ts';
import type { ManifestFile } from '../registry/manifest.ts';
import type { LlmServingConfig } from '../llm/serving/llm-serving-config.ts';
import type { RuntimeConfig } from '../runtimes/runtime.ts';
import type { BatchingConfig } from '../store/serving-records.ts';
import type { PoolWorkerSettings } from '../protocol/pool/pool-protocol.ts';

export interface WorkerSpec {
  readonly replicaId: string;
  /** The endpoint name: the model name in this worker's v2 routes. */
  readonly endpoint: string;
  readonly model: string;
  readonly version: number;
  readonly format: ModelFormat;
  readonly files: readonly ManifestFile[];
  readonly schema: ModelSchema | null;
  /**
   * The content-addressed artifact store the model's blobs are read (and re-hashed) from: a
   * local folder or an S3 bucket. No secrets: an S3 worker's credentials come from its own
   * environment (the AWS SDK's default chain).
   */
  readonly artifacts: ArtifactLocator;
  /** Private folder for this replica; the verified model files are copied under it. */
  readonly workDir: string;
  readonly host: string;
  /** 0 = any free port (reported in the `listening` event). */
  readonly port: number;
  /**
   * A Unix socket path the worker also serves its HTTP routes on, for a gateway on the same
   * host: its channel costs less than half the CPU a loopback TCP one does. Absent or null:
   * TCP only (a worker on another host).
   */
  readonly channelSocket?: string | null;
  readonly maxBodyBytes: number;
  readonly config: RuntimeConfig;
  /** Dynamic batching of infer requests; null = each request runs by itself. */
  readonly batching: BatchingConfig | null;
  /** Deadline of a request without a `kiln-timeout-ms` header, in ms; null = none. */
  readonly defaultTimeoutMs: number | null;
  /** An hf-llm endpoint's serving settings (defaults filled by the worker); absent otherwise. */
  readonly llm?: LlmServingConfig | null;
  /**
   * A pool worker (issue 14, src/worker/pool/): serves no model of its own (model, files and
   * schema are placeholders) but the endpoints the control plane assigns it, loaded on demand.
   */
  readonly pool?: PoolWorkerSettings | null;
}

/**
 * The worker's record in its workDir: `{pid, startMark}` (src/core/process-identity.ts) from
 * its start, plus `url` and `socketPath` once it listens.
 */
export const workerRecordFile = 'worker.json';

/**
 * Longest Unix socket path accepted (sun_path holds 108 bytes on Linux, 104 on macOS, with
 * the NUL). Longer ones must be refused before listening: libuv may bind a truncated path.
 */
export const maxSocketPathBytes = 103;

export async function readWorkerSpec(path: string): Promise<WorkerSpec> {
  const spec = JSON.parse(await readFile(path, 'utf8')) as Partial<WorkerSpec> &
    WorkerSpec & { readonly artifactsRoot?: string };
  // Specs written before batching existed lack the two fields: both mean "off". Specs
  // written before S3 artifacts name the local store by its root alone.
  return {
    ...spec,
    artifacts: spec.artifacts ?? { kind: 'local', root: spec.artifactsRoot ?? '' },
    batching: spec.batching ?? null,
    defaultTimeoutMs: spec.defaultTimeoutMs ?? null,
    channelSocket: spec.channelSocket ?? null,
  };
}

/**
 * Events a worker prints on stdout, one JSON object per line, for its supervisor:
 * listening (port known, not ready yet) → ready, or → failed (then it exits non-zero); a
 * standby worker first prints standby, then the others once handed its spec.
 */
export type WorkerEvent =
  | {
      readonly event: 'listening';
      readonly url: string;
      /** Where the worker also listens (WorkerSpec.channelSocket), when it could. */
      readonly socketPath?: string;
    }
  | {
      readonly event: 'ready';
      readonly inputs: ModelSchema['inputs'];
      readonly outputs: ModelSchema['outputs'];
      readonly memoryBytes: number;
      /** The model's feature names (ModelRuntime.featureNames), when it has them. */
      readonly featureNames?: readonly string[];
    }
  | { readonly event: 'failed'; readonly code: string; readonly message: string }
  /** A standby worker (standby.ts) is warm and waits for its handoff. */
  | { readonly event: 'standby' };
