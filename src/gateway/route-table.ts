// The route table: a routing snapshot compiled for the hot path, built once per snapshot
// and swapped in whole (requests in flight keep the table they started with).
//   - endpoints by name, each with its compiled request check, its replicas (shared state
//     from ReplicaSet), its metric series, pre-rendered metadata and upstream paths;
//   - API-key grants indexed by sha256;
//   - each endpoint's concurrency gate and its team's token bucket (from Admission, which
//     keeps them across snapshots).
// Compiling a schema is not free, so an endpoint whose version and schema did not change
// reuses the previous table's compiled check.

import type { Admission, ConcurrencyGate } from './admission.ts';
import { indexApiKeys } from './auth.ts';
import type { EndpointSeries, GatewayMetrics } from './metrics.ts';
import { modelMetadataBody } from './model-metadata.ts';
import type { ReplicaState } from './replica-set.ts';
import type { CompiledNaming } from '../protocol/v2/input-naming.ts';
import { compileNamingCheck, compileRequestCheck, type RequestCheck } from './request-check.ts';
import type { ApiKeyGrant, EndpointRoute, RoutingSnapshot } from './routing-snapshot.ts';
import type { TokenBucket } from './token-bucket.ts';

export interface EndpointEntry {
  readonly route: EndpointRoute;
  readonly name: string;
  readonly team: string;
  readonly version: number;
  readonly versionText: string;
  readonly maxBodyBytes: number;
  /** null when the snapshot has no schema: the worker checks alone. */
  readonly check: RequestCheck | null;
  /** What `check` was compiled from (JSON), to reuse it across snapshots. */
  readonly checkKey: string;
  /**
   * How this endpoint reads a request (format, schema, input naming; checkKey without the
   * version): a request checked under another one must be checked again before it goes to
   * this entry's replicas (infer-exchange.ts).
   */
  readonly requestKey: string;
  /** Input names besides the schema's (any-name single input, named features); null: none. */
  readonly naming: CompiledNaming | null;
  readonly replicas: readonly ReplicaState[];
  /** Some replica is a Kiln worker with a channel: infer bodies are decoded for tensor frames. */
  readonly workerChannels: boolean;
  /** `GET /v2/models/{m}` body, or null to forward metadata requests to a replica. */
  readonly metadataBody: string | null;
  /** Worker paths, relative to a replica's base URL. */
  readonly inferPath: string;
  readonly metadataPath: string;
  readonly series: EndpointSeries;
  /** In-flight limit for this endpoint (shared across snapshots). */
  readonly gate: ConcurrencyGate;
  /** The team's rate limit, or null when the team is unlimited. */
  readonly bucket: TokenBucket | null;
  /** The team's requests per second (for the 429 message); null when unlimited. */
  readonly teamRequestsPerSecond: number | null;
  /** Rotating start for replica choice: equal loads are served round-robin. */
  cursor: number;
}

export interface RouteTable {
  readonly version: number;
  readonly auth: RoutingSnapshot['auth'];
  readonly endpoints: ReadonlyMap<string, EndpointEntry>;
  readonly apiKeys: ReadonlyMap<string, ApiKeyGrant>;
}

export function buildRouteTable(
  snapshot: RoutingSnapshot,
  previous: RouteTable | null,
  replicas: ReadonlyMap<string, ReplicaState[]>,
  metrics: GatewayMetrics,
  admission: Admission,
  onBadSchema: (endpoint: string, reason: string) => void,
): RouteTable {
  const endpoints = new Map<string, EndpointEntry>();
  const teamRates = new Map(snapshot.teamLimits.map((l) => [l.team, l.requestsPerSecond]));
  for (const route of snapshot.endpoints) {
    const requestKey = `${route.format} ${JSON.stringify(route.schema)} ${JSON.stringify(route.inputNaming ?? null)}`;
    const checkKey = `${route.version} ${requestKey}`;
    const before = previous?.endpoints.get(route.name);
    let check: RequestCheck | null;
    let naming: CompiledNaming | null;
    if (before !== undefined && before.checkKey === checkKey) {
      check = before.check;
      naming = before.naming;
    } else {
      const compiled = compileRequestCheck(route.schema, route.format);
      if (!compiled.ok) onBadSchema(route.name, compiled.reason);
      check = compiled.ok ? compiled.check : null;
      naming = compileNamingCheck(check, route.inputNaming);
    }
    const versionText = String(route.version);
    const base = `/v2/models/${encodeURIComponent(route.name)}`;
    const endpointReplicas = replicas.get(route.name) ?? [];
    endpoints.set(route.name, {
      route,
      name: route.name,
      team: route.team,
      version: route.version,
      versionText,
      maxBodyBytes: route.maxBodyBytes,
      check,
      checkKey,
      requestKey,
      naming,
      replicas: endpointReplicas,
      workerChannels: endpointReplicas.some((r) => r.channel !== null),
      metadataBody: modelMetadataBody(route),
      inferPath: `${base}/infer`,
      metadataPath: base,
      series: metrics.seriesFor(route.name, versionText),
      gate: admission.gateFor(route.name),
      bucket: admission.bucketFor(route.team),
      teamRequestsPerSecond: teamRates.get(route.team) ?? null,
      cursor: before?.cursor ?? 0,
    });
  }
  return {
    version: snapshot.version,
    auth: snapshot.auth,
    endpoints,
    apiKeys: indexApiKeys(snapshot.apiKeys),
  };
}
