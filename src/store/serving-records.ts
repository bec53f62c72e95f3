// Persisted serving state: endpoints (desired state for the reconciler), API keys and
// per-team rate limits.

import type { LlmServingConfig } from '../llm/serving/llm-serving-config.ts';
import type { RuntimeConfig } from '../runtimes/runtime.ts';
import type { AutoscalePolicy } from '../autoscale/autoscale-policy.ts';
import type { ResourceRequest } from '../placement/inventory.ts';
import type { ObservabilityConfig } from './observability-config.ts';

/** Dynamic batching in the worker (Triton's dynamic batcher, in shape). */
export interface BatchingConfig {
  /** A batch is run as soon as it holds this many rows. */
  readonly maxBatchSize: number;
  /** …or when its oldest request has waited this long, in microseconds. */
  readonly maxDelayMicros: number;
  /** Batch sizes the model runs best at; the batcher prefers to cut at one of these. */
  readonly preferredBatchSizes?: readonly number[];
  /** Requests that may wait; beyond this, new ones are shed with 429 + Retry-After. */
  readonly maxQueue: number;
  /**
   * Absent or true: the batcher measures what rows cost by batch size and gathers (waits up
   * to maxDelayMicros, joins requests) only where that pays (adaptive-gathering.ts); false:
   * it always gathers, by the rule above (the fixed behaviour before issue 16).
   */
  readonly adaptive?: boolean;
}

export interface EndpointConfig extends RuntimeConfig {
  /** Largest request body the gateway accepts for this endpoint, in bytes. */
  readonly maxBodyBytes?: number;
  /** null = batching explicitly off; absent = the runtime's default (trees off, ONNX on). */
  readonly batching?: BatchingConfig | null;
  /** Default per-request deadline in ms (a request's `kiln-timeout-ms` header overrides). */
  readonly timeoutMs?: number;
  /** Most requests the gateway lets in flight to this endpoint at once (beyond: 429). */
  readonly maxConcurrency?: number;
  /** hf-llm endpoints: the engine's and the streams' settings (llm-serving-config.ts). */
  readonly llm?: LlmServingConfig;
  /**
   * Autoscaling (issue 14; control-plane only, not part of the worker revision). Absent: the
   * endpoint runs exactly `replicas`.
   */
  readonly autoscale?: AutoscalePolicy;
  /** What one replica needs of a node (placement, issue 14). Absent: the defaults. */
  readonly resources?: ResourceRequest;
  /**
   * Served by the shared worker pool of this name (issue 14) instead of replicas of its own:
   * a pool worker loads the model on its first request and evicts it when least recently used.
   */
  readonly pool?: string;
  /**
   * Tracing, drift, prediction log, outcomes and SLOs (issue 15, observability-config.ts;
   * not part of the worker revision). Absent: all off.
   */
  readonly observability?: ObservabilityConfig;
}

export interface EndpointRecord {
  readonly name: string;
  readonly team: string;
  readonly model: string;
  /** The resolved version the endpoint serves. */
  readonly version: number;
  /** What was asked at deploy: "3", "@champion" or "latest". */
  readonly ref: string;
  readonly replicas: number;
  readonly config: EndpointConfig;
  readonly createdAt: string;
  readonly updatedAt: string;
}

export interface NewEndpoint {
  readonly name: string;
  readonly team: string;
  readonly model: string;
  readonly version: number;
  readonly ref: string;
  readonly replicas: number;
  readonly config: EndpointConfig;
}

export interface ApiKeyRecord {
  readonly id: string;
  readonly name: string;
  readonly sha256: string;
  /** First characters of the key, to recognise it in lists. */
  readonly prefix: string;
  readonly team: string | null;
  readonly endpoint: string | null;
  readonly createdAt: string;
}

/** A team's request rate at each gateway (a token bucket); teams without one are unlimited. */
export interface TeamLimitRecord {
  readonly team: string;
  /** Sustained rate: tokens added per second (> 0). */
  readonly requestsPerSecond: number;
  /** Bucket capacity: requests accepted at once after a quiet spell (>= 1). */
  readonly burst: number;
  readonly updatedAt: string;
}

export type NewTeamLimit = Omit<TeamLimitRecord, 'updatedAt'>;
