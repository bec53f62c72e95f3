// The route table: a routing snapshot compiled for the hot path, built once per snapshot
// and swapped in whole (requests in flight keep the table they started with).
//   - endpoints by name, each with its compiled request check, its replicas (shared state
//     from ReplicaSet), its metric series, pre-rendered metadata and upstream paths;
//   - API-key grants indexed by sha256;
//   - each endpoint's concurrency gate and its team's token bucket (from Admission, which
//     keeps them across snapshots).
//   - an endpoint with a traffic policy: its TrafficEntry (traffic-entry.ts), one entry per
//     variant (own check, replicas, version) and per shadow.
//   - each endpoint's demand counter (load-counter.ts), kept across snapshots.
// Compiling a schema is not free, so an endpoint whose version and schema did not change
// reuses the previous table's compiled check (a variant's too).

import type { EndpointReadiness } from './activator.ts';
import type { Admission, ConcurrencyGate } from './admission.ts';
import { indexApiKeys } from './auth.ts';
import type { EndpointLoadCounter, LoadCounter } from './load-counter.ts';
import type { EndpointSeries, GatewayMetrics } from './metrics.ts';
import { modelMetadataBody } from './model-metadata.ts';
import { versionReplicasKey, type ReplicaState } from './replica-set.ts';
import type { CompiledNaming } from '../protocol/v2/input-naming.ts';
import { compileNamingCheck, compileRequestCheck, type RequestCheck } from './request-check.ts';
import type {
  ApiKeyGrant,
  EndpointRoute,
  RoutingSnapshot,
  VersionRoute,
} from './routing-snapshot.ts';
import { TokenBucket } from './token-bucket.ts';
import { performance } from 'node:perf_hooks';
import type { TrafficCounter, VersionCounter } from './traffic-counter.ts';
import { keySourceOf, splitOf, TrafficEntry, type ShadowEntry } from './traffic-entry.ts';
import type { RandomSource } from '../traffic/traffic-split.ts';
import type { CallerKeySource } from '../traffic/caller-key.ts';

export interface EndpointEntry {
  readonly route: EndpointRoute;
  readonly name: string;
  readonly team: string;
  readonly version: number;
  readonly versionText: string;
  /** The model this entry serves (`kiln-model` of the answers the gateway writes itself). */
  readonly model: string;
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
  /**
   * The endpoint's traffic policy compiled (null: none, every request to `replicas` and
   * nothing counted). Variant entries have none themselves.
   */
  readonly traffic: TrafficEntry<EndpointEntry> | null;
  /** A variant entry's counter (its version's); null for an endpoint's own entry. */
  readonly counts: VersionCounter | null;
  /** The endpoint's demand counter for load reports (a variant shares it); null: none kept. */
  readonly load: EndpointLoadCounter | null;
  /**
   * Drift sketches (issue 15): where a request's slice value comes from when the endpoint
   * collects them (a source without segments: the `kiln-slice` header only); null: requests
   * are not marked for the workers' sketches. Variants share it.
   */
  readonly drift: DriftEntry | null;
}

/** An endpoint's drift settings compiled (issue 15): its slice source and sample rate. */
export interface DriftEntry {
  /** Where the slice value comes from; null: the endpoint has no slice key (none is sent). */
  readonly slice: CallerKeySource | null;
  /** Share of requests marked, (0, 1]. */
  readonly sampleRate: number;
  readonly maxRequestsPerSecond: number | null;
  /** Its token bucket (kept across snapshots while the rate holds); null: no limit. */
  readonly bucket: TokenBucket | null;
}

/** What the traffic entries of a table need besides the snapshot. */
export interface TrafficContext {
  readonly counter: TrafficCounter;
  /** The draw of requests without a caller key, and of shadow sampling. */
  readonly random: RandomSource;
  readonly onBadPath: (endpoint: string, problem: string) => void;
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
  traffic: TrafficContext | null = null,
  loads: LoadCounter | null = null,
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
    const entry: EndpointEntry = {
      route,
      name: route.name,
      team: route.team,
      version: route.version,
      versionText,
      model: route.model,
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
      traffic: null,
      counts: null,
      load: loads?.endpoint(route.name) ?? null,
      // Pool workers' sketches are never collected (docs/drift.md): nothing is marked for them.
      drift:
        route.drift === undefined || route.pool !== undefined
          ? null
          : {
              slice:
                route.drift.sliceKey === null
                  ? null
                  : keySourceOf(route.drift.slicePath, (problem) =>
                      onBadSchema(route.name, `drift.slicePath: ${problem}`),
                    ),
              sampleRate: route.drift.sampleRate ?? 1,
              maxRequestsPerSecond: route.drift.maxRequestsPerSecond ?? null,
              bucket: driftBucket(route.drift.maxRequestsPerSecond ?? null, before?.drift ?? null),
            },
    };
    const policy =
      route.traffic !== undefined && traffic !== null
        ? trafficEntry(entry, before, replicas, metrics, traffic, onBadSchema)
        : null;
    endpoints.set(route.name, policy === null ? entry : { ...entry, traffic: policy });
  }
  return {
    version: snapshot.version,
    auth: snapshot.auth,
    endpoints,
    apiKeys: indexApiKeys(snapshot.apiKeys),
  };
}

/** The drift marking's rate limit: the previous table's while its rate is the same. */
function driftBucket(ratePerSecond: number | null, before: DriftEntry | null): TokenBucket | null {
  if (ratePerSecond === null) return null;
  if (before !== null && before.maxRequestsPerSecond === ratePerSecond) return before.bucket;
  return new TokenBucket(ratePerSecond, ratePerSecond, performance.now());
}

/** Compiled checks of a previous table's entry and its variants, by checkKey. */
type CompiledChecks = Map<string, { check: RequestCheck | null; naming: CompiledNaming | null }>;

function compiledChecksOf(before: EndpointEntry | undefined): CompiledChecks {
  const checks: CompiledChecks = new Map();
  if (before === undefined) return checks;
  for (const entry of [before, ...(before.traffic?.variants ?? [])]) {
    checks.set(entry.checkKey, { check: entry.check, naming: entry.naming });
  }
  return checks;
}

function versionCheck(
  version: VersionRoute,
  compiled: CompiledChecks,
  onBad: (reason: string) => void,
): {
  checkKey: string;
  requestKey: string;
  check: RequestCheck | null;
  naming: CompiledNaming | null;
} {
  const requestKey = `${version.format} ${JSON.stringify(version.schema)} ${JSON.stringify(version.inputNaming ?? null)}`;
  const checkKey = `${version.model}:${version.version} ${requestKey}`;
  const known = compiled.get(checkKey);
  if (known !== undefined) return { checkKey, requestKey, ...known };
  const made = compileRequestCheck(version.schema, version.format);
  if (!made.ok) onBad(made.reason);
  const check = made.ok ? made.check : null;
  const result = { check, naming: compileNamingCheck(check, version.inputNaming) };
  compiled.set(checkKey, result);
  return { checkKey, requestKey, ...result };
}

/** The endpoint's policy compiled: its split, its variants' entries and its shadows'. */
function trafficEntry(
  entry: EndpointEntry,
  before: EndpointEntry | undefined,
  replicas: ReadonlyMap<string, ReplicaState[]>,
  metrics: GatewayMetrics,
  context: TrafficContext,
  onBadSchema: (endpoint: string, reason: string) => void,
): TrafficEntry<EndpointEntry> {
  const route = entry.route;
  const policy = route.traffic!;
  const name = route.name;
  const compiled = compiledChecksOf(before);
  const onBad = (reason: string): void => onBadSchema(name, reason);
  const counter = context.counter.endpoint(name);
  const previousVariants = before?.traffic?.variants ?? [];
  const variants = policy.variants.map((variant): EndpointEntry => {
    const checks = versionCheck(variant, compiled, onBad);
    const list = replicas.get(versionReplicasKey(name, variant.model, variant.version)) ?? [];
    const versionText = String(variant.version);
    const cursor =
      previousVariants.find((v) => v.model === variant.model && v.version === variant.version)
        ?.cursor ?? 0;
    return {
      ...entry,
      version: variant.version,
      versionText,
      model: variant.model,
      ...checks,
      replicas: list,
      workerChannels: list.some((r) => r.channel !== null),
      series: metrics.seriesFor(name, versionText),
      cursor,
      traffic: null,
      counts: counter.version(variant.model, variant.version),
    };
  });
  const shadows = policy.shadows.map((shadow): ShadowEntry => {
    const checks = versionCheck(shadow, compiled, onBad);
    return {
      model: shadow.model,
      version: shadow.version,
      sampleRate: shadow.sampleRate,
      check: checks.check,
      requestKey: checks.requestKey,
      naming: checks.naming,
      replicas: replicas.get(versionReplicasKey(name, shadow.model, shadow.version)) ?? [],
      counts: counter.shadow(shadow.model, shadow.version),
      cursor: 0,
    };
  });
  const badPath = (problem: string): void => context.onBadPath(name, problem);
  return new TrafficEntry(
    splitOf(name, policy.salt, policy.variants, policy.shadows, context.random),
    keySourceOf(policy.keyPath, badPath),
    policy.sliceKey === null ? null : keySourceOf(policy.slicePath, badPath),
    variants,
    shadows,
    counter,
  );
}

/** Whether the endpoint has a ready replica: its own, or any variant's of its traffic policy. */
export function hasReadyReplica(entry: EndpointEntry): boolean {
  if (entry.replicas.length > 0) return true;
  return entry.traffic?.variants.some((variant) => variant.replicas.length > 0) ?? false;
}

/** How an endpoint stands in `table` for the activator (activator.ts). */
export function endpointReadiness(table: RouteTable, endpoint: string): EndpointReadiness {
  const entry = table.endpoints.get(endpoint);
  if (entry === undefined) return 'gone';
  if (hasReadyReplica(entry)) return 'ready';
  return entry.route.activation === undefined ? 'unactivated' : 'waiting';
}
