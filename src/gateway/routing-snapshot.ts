// The routing snapshot: everything the gateway needs to route, authorize and validate a
// request, pushed by the control plane (GET /api/v1/routing/snapshot, long-polled). The
// gateway keeps the last one it received — in memory and on disk — and keeps serving from
// it while the control plane is down (static stability). A rollback is a new snapshot.

import type { ModelSchema } from '../core/tensor.ts';
import type { InputNaming } from '../protocol/v2/input-naming.ts';
import type { ModelFormat } from '../registry/formats/artifact-file.ts';

export interface RoutingSnapshot {
  /** Increases with every change; the gateway ignores a snapshot older than the one it has. */
  readonly version: number;
  readonly generatedAt: string;
  /** 'dev' serves without authentication (kiln up --dev); 'api-keys' requires a key. */
  readonly auth: 'dev' | 'api-keys';
  readonly endpoints: readonly EndpointRoute[];
  readonly apiKeys: readonly ApiKeyGrant[];
  /** Per-team request rates; a team not listed is unlimited. */
  readonly teamLimits: readonly TeamLimit[];
}

export interface EndpointRoute {
  /** The stable name in /v2/models/{name}/infer. */
  readonly name: string;
  readonly team: string;
  readonly model: string;
  /** The model version this endpoint serves now. */
  readonly version: number;
  readonly format: ModelFormat;
  /**
   * The schema requests are checked against before they reach a worker: the declared one,
   * else what the model itself reports. null while unknown (the worker still checks).
   */
  readonly schema: ModelSchema | null;
  /**
   * Whether the schema's input names were declared (enforced) and the model's feature names:
   * the request forms the gateway takes besides the schema's exact names. Absent (snapshots of
   * older control planes): the schema's names only.
   */
  readonly inputNaming?: InputNaming;
  /** Largest request body accepted, in bytes. */
  readonly maxBodyBytes: number;
  /**
   * Most infer requests in flight at one gateway at once (beyond: 429 + Retry-After), >= 1.
   * Always a number: the endpoint's configured limit, else one derived from its ready
   * replicas and what each holds (admission-bound.ts).
   */
  readonly maxConcurrency: number;
  /** Whether `maxConcurrency` is the endpoint's config or the derived default. */
  readonly maxConcurrencySource: 'configured' | 'derived';
  /** Ready replicas only; an endpoint with none answers 503 (retryable). */
  readonly replicas: readonly ReplicaRoute[];
  /**
   * The endpoint's traffic policy (issue 13), when it has one: requests are split over the
   * variants (sticky by caller key), copies go to shadows, and the gateway counts requests,
   * errors, latency and outputs per variant and slice and reports them to the control plane
   * (protocol/traffic/traffic-report.ts). Absent: every request goes to `replicas` above and
   * nothing is reported. The fields above describe the endpoint's stable version (its
   * metadata, `kiln-model-version` when no policy); `maxConcurrency` bounds all variants.
   */
  readonly traffic?: TrafficRoute;
  /**
   * Scale-to-zero (issue 14): present when the endpoint's policy lets it run zero replicas.
   * While no replica (of any variant) is ready, the gateway's activator holds its requests
   * instead of answering 503, asks the control plane to wake it, and releases them in
   * arrival order once a snapshot lists a ready replica. Absent: no replica = 503.
   */
  readonly activation?: ActivationRoute;
  /**
   * Served by a shared worker pool (issue 14): `replicas` are the pool's workers, each able to
   * load this endpoint's model on its first request; the gateway prefers a worker that has it
   * loaded. Absent: dedicated replicas.
   */
  readonly pool?: PoolRoute;
  /**
   * Drift and skew (issue 15): present when the endpoint collects sketches. The gateway marks
   * each request it sends to a worker (with its slice value: the `kiln-slice` header, else the
   * value at `slicePath`), and the worker sketches its inputs and outputs
   * (protocol/drift/sketch-report.ts). Absent: nothing is marked, nothing sketched.
   */
  readonly drift?: DriftRoute;
  /**
   * OpenTelemetry head sampling (issue 15, docs/tracing.md): the share of this endpoint's new
   * traces the gateway records while tracing is on. Absent: the default rate (1 %).
   */
  readonly tracing?: TracingRoute;
}

export interface DriftRoute {
  /** The slice key's name (`country`); null: requests carry no slice. */
  readonly sliceKey: string | null;
  /** Body path of the slice value (caller-key.ts syntax); `kiln-slice` wins. null: header only. */
  readonly slicePath: string | null;
  /** Share of requests marked, (0, 1]; absent: 1. */
  readonly sampleRate?: number;
  /** Most requests marked per second at one gateway; absent or null: no limit. */
  readonly maxRequestsPerSecond?: number | null;
}

export interface TracingRoute {
  /** 0..1; a caller's sampled `traceparent` is followed whatever the rate. */
  readonly sampleRate: number;
}

export interface ActivationRoute {
  /** Most requests one gateway holds for the endpoint while it wakes (beyond: 503). */
  readonly queueLimit: number;
  /** How long one held request waits for a ready replica (then 503, retryable). */
  readonly timeoutMs: number;
  /** The owner's cold-start budget (wake → first answer), for metrics. */
  readonly coldStartBudgetMs: number;
}

export interface PoolRoute {
  readonly name: string;
  /**
   * What a pool worker needs to load the endpoint's version on demand (its revision's launch:
   * files, digests, runtime config), as the pool protocol defines it (issue 14, pools).
   */
  readonly revision: string;
}

export interface TrafficRoute {
  /** Salt of the sticky hash (traffic-split.ts): the same salt keeps users on their variant. */
  readonly salt: string;
  /** Body path of the caller key (caller-key.ts); the `kiln-user` header wins. null: header only. */
  readonly keyPath: string | null;
  /** The slice key's name (`country`); null: no slices counted. */
  readonly sliceKey: string | null;
  /** Body path of the slice value; the `kiln-slice` header wins. null: header only. */
  readonly slicePath: string | null;
  /**
   * Weights (whole percent) sum to 100, in policy order (the order sets the bucket ranges).
   * A variant whose `replicas` is empty (its version not ready yet) gives its requests to the
   * first variant with replicas; they are counted under the version that served them.
   */
  readonly variants: readonly VariantRoute[];
  /** Copies after the primary answered, sampled per shadow; never change the primary. */
  readonly shadows: readonly ShadowRoute[];
}

/** How one version of an endpoint is served: what EndpointRoute says of the stable one. */
export interface VersionRoute {
  readonly model: string;
  readonly version: number;
  readonly format: ModelFormat;
  readonly schema: ModelSchema | null;
  readonly inputNaming?: InputNaming;
  /** Ready replicas of this version only. */
  readonly replicas: readonly ReplicaRoute[];
}

export interface VariantRoute extends VersionRoute {
  /** Whole percent, 0..100. */
  readonly weight: number;
}

export interface ShadowRoute extends VersionRoute {
  /** Share of requests copied, in [0, 1]. */
  readonly sampleRate: number;
}

export interface ReplicaRoute {
  readonly id: string;
  /** Base URL of the worker, e.g. http://127.0.0.1:40123 (loopback only). */
  readonly url: string;
  readonly version: number;
  /** The model it serves (answers carry it as `kiln-model`); absent in older snapshots. */
  readonly model?: string;
  /**
   * Path of the worker channel (an HTTP Upgrade on `url`) when the replica is a Kiln worker;
   * infer requests then travel as frames on it. Absent: plain v2 HTTP.
   */
  readonly channel?: string;
  /**
   * A Unix socket on this host where the worker serves the same routes (the local backend's
   * workers): the channel connects there rather than to `url`. Absent: `url` only.
   */
  readonly socketPath?: string;
}

export interface ApiKeyGrant {
  readonly id: string;
  /** sha256 (hex) of the full key; the key itself is never stored. */
  readonly sha256: string;
  /** A key is scoped to one endpoint, or to every endpoint of one team. */
  readonly team: string | null;
  readonly endpoint: string | null;
}

/** A token bucket per team and gateway: refills at `requestsPerSecond`, holds `burst`. */
export interface TeamLimit {
  readonly team: string;
  /** Tokens added per second, continuously; > 0. */
  readonly requestsPerSecond: number;
  /** Bucket capacity: the most requests accepted at once after a quiet spell; >= 1. */
  readonly burst: number;
}
