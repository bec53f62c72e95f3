// How an endpoint's stored config becomes a worker's serving settings, with the per-runtime
// defaults for what the user left out (pure, so the defaults are testable and in one place).
//
//   batching absent  → the runtime's default: trees (xgboost, lightgbm) off — a tree walk is
//                      fastest unbatched at low load; onnx on, {32 rows, 2 ms, 256 queued}
//   batching null    → off, whatever the runtime
//   batching {…}     → as given
// Either way the batcher is adaptive (gathers only where measured costs say it pays) unless
// the object says `adaptive: false`; its delay and size are upper bounds.
// The rest of the config minus the gateway's and the batcher's fields goes to the runtime.
// At deploy, completeEndpointConfig fills a partial batching object before it is stored.
//
// hf-llm: no batching (the engine batches continuously by itself); the worker gets the
// endpoint's `llm` settings resolved with their defaults (llm-serving-config.ts), so the
// spec on disk says what runs. `llm` is stored as given: a default changed later applies to
// endpoints that never set the field, at their next rollout.

import { kilnError } from '../core/errors.ts';
import {
  resolveLlmServingConfig,
  type ResolvedLlmServingConfig,
} from '../llm/serving/llm-serving-config.ts';
import type { ModelFormat } from '../registry/formats/artifact-file.ts';
import type { RuntimeConfig } from '../runtimes/runtime.ts';
import type { BatchingConfig, EndpointConfig } from '../store/serving-records.ts';
import type { ObservabilityConfig } from '../store/observability-config.ts';
import type { AutoscalePolicy } from '../autoscale/autoscale-policy.ts';

// No added delay by default (as Triton's dynamic batcher): a batch runs as soon as the model
// is free, holding whatever arrived while the previous one ran. Measured here (bench
// batching), a 2 ms wait made a lone client ~10× slower on an overhead-bound model; set
// maxDelayMicros to trade latency for fuller batches on compute-bound ones.
export const onnxDefaultBatching: BatchingConfig = {
  maxBatchSize: 32,
  maxDelayMicros: 0,
  maxQueue: 256,
};

export function defaultBatching(format: ModelFormat): BatchingConfig | null {
  switch (format) {
    case 'onnx':
      return onnxDefaultBatching;
    case 'xgboost':
    case 'lightgbm':
    case 'hf-llm':
    case 'external':
      return null;
  }
}

export interface WorkerServingSettings {
  readonly config: RuntimeConfig;
  readonly maxBodyBytes: number | undefined;
  readonly batching: BatchingConfig | null;
  readonly defaultTimeoutMs: number | null;
  /** hf-llm: the engine's and the streams' settings, defaults filled; null otherwise. */
  readonly llm: ResolvedLlmServingConfig | null;
}

export function workerServingSettings(
  format: ModelFormat,
  endpointConfig: EndpointConfig,
): WorkerServingSettings {
  const {
    maxBodyBytes,
    batching,
    timeoutMs,
    maxConcurrency: _gatewayOnly,
    llm,
    // The control plane's (issue 14): how many replicas, where, on which pool; not the runtime's.
    autoscale: _autoscale,
    resources: _resources,
    pool: _pool,
    ...config
  } = endpointConfig;
  const isLlm = format === 'hf-llm';
  return {
    config,
    maxBodyBytes,
    batching: isLlm ? null : batching === undefined ? defaultBatching(format) : batching,
    defaultTimeoutMs: timeoutMs ?? null,
    llm: isLlm ? resolveLlmServingConfig(llm) : null,
  };
}

/**
 * What one hf-llm replica holds before it refuses (429 queue_full): the sequences its engine
 * threads run at once plus the requests waiting — the gateway's derived bound per replica
 * (admission-bound.ts), so the gateway does not turn away what a replica would take.
 */
export function llmReplicaBound(llm: ResolvedLlmServingConfig): number {
  return llm.threads * llm.maxNumSeqs + llm.maxWaiting;
}

/** The config a deploy may send: batching fields may be partial (the rest are defaulted). */
export type EndpointConfigInput = Omit<
  EndpointConfig,
  'batching' | 'autoscale' | 'observability'
> & {
  readonly batching?: Partial<BatchingConfig> | null;
  /** As a user wrote it: checked and completed by resolveAutoscalePolicy at deploy. */
  readonly autoscale?: unknown;
  /** As a user wrote it: checked and completed by resolveObservabilityConfig at deploy. */
  readonly observability?: unknown;
};

/**
 * The config as stored: a partial batching object completed from the ONNX defaults (so
 * `--max-batch 8` alone means "batching on, 8 rows"), preferred sizes sorted and checked.
 * Throws KILN_VALIDATION_FAILED for settings that cannot work together.
 */
export function completeEndpointConfig(
  input: EndpointConfigInput,
  autoscale?: AutoscalePolicy,
  observability?: ObservabilityConfig,
): EndpointConfig {
  const {
    batching,
    autoscale: _unchecked,
    observability: _uncheckedObservability,
    ...fields
  } = input;
  const rest: EndpointConfig = {
    ...fields,
    ...(autoscale === undefined ? {} : { autoscale }),
    ...(observability === undefined ? {} : { observability }),
  };
  if (batching === undefined) return rest;
  if (batching === null) return { ...rest, batching: null };
  const maxBatchSize = batching.maxBatchSize ?? onnxDefaultBatching.maxBatchSize;
  const complete: BatchingConfig = {
    maxBatchSize,
    maxDelayMicros: batching.maxDelayMicros ?? onnxDefaultBatching.maxDelayMicros,
    maxQueue: batching.maxQueue ?? onnxDefaultBatching.maxQueue,
    // Stored only when given: absent is adaptive, and existing endpoints keep their revision.
    ...(batching.adaptive === undefined ? {} : { adaptive: batching.adaptive }),
  };
  const preferred = batching.preferredBatchSizes;
  if (preferred === undefined || preferred.length === 0) return { ...rest, batching: complete };
  const tooBig = preferred.filter((size) => size > maxBatchSize);
  if (tooBig.length > 0) {
    throw kilnError('KILN_VALIDATION_FAILED', {
      reason: `preferred batch sizes ${tooBig.join(', ')} exceed maxBatchSize ${maxBatchSize}`,
    });
  }
  const preferredBatchSizes = [...preferred].sort((a, b) => a - b);
  return { ...rest, batching: { ...complete, preferredBatchSizes } };
}

/**
 * What an endpoint's workers are started from: its model, version and every config field a
 * worker reads (all but the gateway's maxConcurrency and the control plane's autoscale and
 * resources: a new policy or node request changes how many replicas run and where, not what
 * one runs), in a canonical form. Two deploys with the same revision can share workers; any
 * change is a rollout.
 */
export function workerRevision(endpoint: {
  readonly model: string;
  readonly version: number;
  readonly config: EndpointConfig;
}): string {
  const {
    maxConcurrency: _gatewayOnly,
    autoscale: _autoscale,
    resources: _resources,
    observability: _observability,
    ...workerConfig
  } = endpoint.config;
  return `${endpoint.model}@${endpoint.version}#${canonicalJson(workerConfig)}`;
}

/** JSON with object keys sorted at every level (arrays keep their order). */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const entries = Object.entries(value)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
