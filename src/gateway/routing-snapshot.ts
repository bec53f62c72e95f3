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
}

export interface ReplicaRoute {
  readonly id: string;
  /** Base URL of the worker, e.g. http://127.0.0.1:40123 (loopback only). */
  readonly url: string;
  readonly version: number;
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
