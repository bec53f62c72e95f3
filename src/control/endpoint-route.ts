// What one endpoint runs and how the gateway routes it, from its record, its traffic record
// (issue 13) and the replicas that exist. Pure: the reconciler calls it each pass, the
// endpoint view to show which versions run; tests call it with plain objects.
//
// An endpoint runs, with `replicas` replicas each, one revision (serving-defaults.ts:
// workerRevision — model, version and the endpoint's worker config) per version it has a use
// for, in this order:
//
//   stable   EndpointRecord.model/version: all the traffic when there is no policy
//   variant  a version of the policy (weight in whole percent; the stable one normally too)
//   shadow   gets copies of requests, never answers
//   staged   no traffic, no expiry (a blue-green candidate, a canary before its first step)
//   warm     no traffic until `until` (what rollback returns to at once); stopped after
//
// Routing keeps the rule from before traffic policies for the stable version: its revision
// serves once every slot is ready, or once nothing else is ready; until then the largest
// ready group of another revision serves in its place (the revision a deploy replaces, now
// usually warm) — but never one a variant, a shadow or a staged version claims: those have
// their own role (a staged candidate has not passed its checks yet). And only until the
// stable revision has been fully ready once (`stableEstablished`): before traffic policies
// the revisions it replaced were stopped then, so a later crash or scale-up never sent the
// traffic back to them; a warm version (kept ten minutes) or a canary just dropped must not
// either — an old version serving again after a deploy or a rollback is what users see.

import type { ModelSchema } from '../core/tensor.ts';
import type {
  EndpointRoute,
  ReplicaRoute,
  TrafficRoute,
  VersionRoute,
} from '../gateway/routing-snapshot.ts';
import { derivedMaxConcurrency, replicaBound } from '../gateway/admission-bound.ts';
import { channelPath } from '../protocol/channel/frames.ts';
import type { InputNaming } from '../protocol/v2/input-naming.ts';
import type { ModelFormat } from '../registry/formats/artifact-file.ts';
import type { EndpointRecord } from '../store/serving-records.ts';
import type { EndpointTrafficRecord, VersionRef } from '../store/traffic-records.ts';
import type { KeptRevision, ReplicaState } from './replica-plan.ts';
import { llmReplicaBound, workerRevision, workerServingSettings } from './serving-defaults.ts';
import { activationOf } from './autoscale/scaled-endpoint.ts';

export const defaultMaxBodyBytes = 32 * 1024 * 1024;

export type VersionRole = 'stable' | 'variant' | 'shadow' | 'staged' | 'warm';

/** One revision an endpoint runs and why (a version may have several roles). */
export interface EndpointVersion extends VersionRef {
  readonly revision: string;
  /** In the order of the header comment; `stable` first when present. */
  readonly roles: readonly VersionRole[];
  /** Percent of the traffic: its policy weight, 100 for the stable one without a policy. */
  readonly weight: number | null;
  /** Shadows: the share of requests copied to it. */
  readonly sampleRate: number | null;
  /** Warm: until when it is kept (ms since the epoch; NaN when the record's is unreadable). */
  readonly warmUntilMs: number | null;
}

/** The versions an endpoint runs (before warm expiry), one per revision, stable first. */
export function endpointVersions(
  endpoint: EndpointRecord,
  traffic: EndpointTrafficRecord | null,
): EndpointVersion[] {
  const byRevision = new Map<string, Mutable<EndpointVersion>>();
  const add = (ref: VersionRef, role: VersionRole): Mutable<EndpointVersion> => {
    const revision = revisionOf(endpoint, ref);
    let entry = byRevision.get(revision);
    if (entry === undefined) {
      entry = {
        model: ref.model,
        version: ref.version,
        revision,
        roles: [],
        weight: null,
        sampleRate: null,
        warmUntilMs: null,
      };
      byRevision.set(revision, entry);
    }
    if (!entry.roles.includes(role)) entry.roles = [...entry.roles, role];
    return entry;
  };
  const policy = traffic?.policy ?? null;
  // A stable version outside the policy takes no traffic (weight null).
  if (policy === null) add(endpoint, 'stable').weight = 100;
  else add(endpoint, 'stable');
  for (const v of policy?.versions ?? []) {
    const entry = add(v, 'variant');
    entry.weight = (entry.weight ?? 0) + v.weight;
  }
  for (const s of policy?.shadows ?? []) add(s, 'shadow').sampleRate = s.sampleRate;
  for (const s of traffic?.staged ?? []) add(s, 'staged');
  for (const w of traffic?.warm ?? []) {
    const entry = add(w, 'warm');
    const until = Date.parse(w.until);
    entry.warmUntilMs = entry.warmUntilMs === null ? until : Math.max(entry.warmUntilMs, until);
  }
  return [...byRevision.values()];
}

/**
 * The revisions the plan keeps beside the stable one: every non-stable version; one that is
 * only warm is wanted until its time (an unreadable time: not at all).
 */
export function keptRevisions(versions: readonly EndpointVersion[]): KeptRevision[] {
  return versions
    .filter((v) => !v.roles.includes('stable'))
    .map((v) =>
      v.roles.every((role) => role === 'warm')
        ? { version: v.version, revision: v.revision, untilMs: v.warmUntilMs ?? 0 }
        : { version: v.version, revision: v.revision },
    );
}

/** Warm versions whose time is up at `nowMs` (the reconciler drops them from the record). */
export function expiredWarm(
  traffic: EndpointTrafficRecord,
  nowMs: number,
): EndpointTrafficRecord['warm'] {
  return traffic.warm.filter((w) => !(Date.parse(w.until) > nowMs));
}

/** The replica as routing needs it (the reconciler's own record has more). */
export interface RoutableReplica {
  readonly id: string;
  readonly model: string;
  readonly version: number;
  readonly revision: string;
  readonly state: ReplicaState;
  readonly url: string | null;
  readonly socketPath: string | null;
}

/** What the control plane knows of a version: its format, schema and input names. */
export interface VersionFacts {
  readonly format: ModelFormat;
  readonly schema: ModelSchema | null;
  readonly inputNaming: InputNaming;
}

export interface RouteInput {
  readonly endpoint: EndpointRecord;
  readonly traffic: EndpointTrafficRecord | null;
  /** This endpoint's replicas (any state). */
  readonly replicas: readonly RoutableReplica[];
  readonly facts: (model: string, version: number) => VersionFacts;
  /**
   * Whether the stable revision has been fully ready since it became the stable one (the
   * reconciler remembers; stableFullyReady tells it): then nothing else stands in for it.
   */
  readonly stableEstablished?: boolean;
}

/** Whether every slot of the endpoint's stable revision holds a ready replica now. */
export function stableFullyReady(
  endpoint: EndpointRecord,
  replicas: readonly RoutableReplica[],
): boolean {
  const revision = workerRevision(endpoint);
  const ready = replicas.filter(
    (r) => r.revision === revision && r.state === 'ready' && r.url !== null,
  );
  return ready.length >= endpoint.replicas;
}

export function endpointRoute({
  endpoint,
  traffic,
  replicas,
  facts,
  stableEstablished = false,
}: RouteInput): EndpointRoute {
  const ready = replicas.filter((r) => r.state === 'ready' && r.url !== null);
  const versions = endpointVersions(endpoint, traffic);
  const stableRevision = versions[0]?.revision ?? workerRevision(endpoint);
  // Revisions with a role of their own: never in the stable version's place.
  const claimed = new Set(
    versions
      .filter((v) => v.roles.some((role) => role !== 'stable' && role !== 'warm'))
      .map((v) => v.revision),
  );
  const current = ready.filter((r) => r.revision === stableRevision);
  const others = ready.filter((r) => r.revision !== stableRevision && !claimed.has(r.revision));
  let serving = current;
  if (!stableEstablished && current.length < endpoint.replicas && others.length > 0) {
    const byRevision = new Map<string, RoutableReplica[]>();
    for (const r of others) byRevision.set(r.revision, [...(byRevision.get(r.revision) ?? []), r]);
    serving = [...byRevision.values()].reduce((a, b) => (b.length > a.length ? b : a));
  }
  const model = serving[0]?.model ?? endpoint.model;
  const version = serving[0]?.version ?? endpoint.version;
  const stableFacts = facts(model, version);

  const policy = traffic?.policy ?? null;
  let trafficRoute: TrafficRoute | undefined;
  let primaries: readonly RoutableReplica[] = serving;
  if (policy !== null) {
    /** A version's own ready replicas, described by the version they are of. */
    const versionRoute = (ref: VersionRef): VersionRoute => {
      const revision = revisionOf(endpoint, ref);
      const own =
        revision === stableRevision ? serving : ready.filter((r) => r.revision === revision);
      const described = facts(own[0]?.model ?? ref.model, own[0]?.version ?? ref.version);
      return {
        model: ref.model,
        version: ref.version,
        format: described.format,
        schema: described.schema,
        inputNaming: described.inputNaming,
        replicas: own.map(replicaRoute),
      };
    };
    const variants = policy.versions.map((v) => ({ ...versionRoute(v), weight: v.weight }));
    trafficRoute = {
      salt: policy.salt,
      keyPath: policy.keyPath,
      sliceKey: policy.sliceKey,
      slicePath: policy.slicePath,
      variants,
      shadows: policy.shadows.map((s) => ({ ...versionRoute(s), sampleRate: s.sampleRate })),
    };
    // Admission bounds what answers: every variant's replicas (shadows get copies after).
    const byId = new Map<string, RoutableReplica>();
    for (const v of policy.versions) {
      const revision = revisionOf(endpoint, v);
      const own =
        revision === stableRevision ? serving : ready.filter((r) => r.revision === revision);
      for (const r of own) byId.set(r.id, r);
    }
    primaries = [...byId.values()];
  }

  // The gateway's bound, computed here so the gateway and the endpoint view report one
  // number: the configured one, else what the routed replicas hold (admission-bound.ts; from
  // the endpoint's config now, so a rollout that changes batching counts the old replicas at
  // the new figure until it completes).
  const configured = endpoint.config.maxConcurrency;
  const holds = (format: ModelFormat): number => {
    const settings = workerServingSettings(format, endpoint.config);
    return settings.llm === null ? replicaBound(settings.batching) : llmReplicaBound(settings.llm);
  };
  // Scale-to-zero (issue 14): the gateway holds requests while the endpoint wakes.
  const activation = activationOf(endpoint);
  // Drift and skew (issue 15): the gateway marks requests for the workers' sketches.
  const driftConfig = endpoint.config.observability?.drift;
  const drift =
    driftConfig === undefined || !driftConfig.enabled
      ? null
      : {
          sliceKey: driftConfig.sliceKey,
          slicePath: driftConfig.slicePath,
          sampleRate: driftConfig.sampleRate,
          maxRequestsPerSecond: driftConfig.maxRequestsPerSecond,
        };
  const tracing = endpoint.config.observability?.tracing;
  return {
    name: endpoint.name,
    team: endpoint.team,
    model,
    version,
    format: stableFacts.format,
    schema: stableFacts.schema,
    inputNaming: stableFacts.inputNaming,
    maxBodyBytes: endpoint.config.maxBodyBytes ?? defaultMaxBodyBytes,
    maxConcurrency:
      configured ??
      derivedMaxConcurrency(
        primaries.map((r) => holds(facts(r.model, r.version).format)),
        holds(stableFacts.format),
      ),
    maxConcurrencySource: configured === undefined ? 'derived' : 'configured',
    replicas: serving.map(replicaRoute),
    ...(trafficRoute === undefined ? {} : { traffic: trafficRoute }),
    ...(activation === null ? {} : { activation }),
    ...(drift === null ? {} : { drift }),
    // Trace sampling (issue 15): the gateway reads it per request, no replica restarts.
    ...(tracing === undefined ? {} : { tracing: { sampleRate: tracing.sampleRate } }),
  };
}

/** Every replica a backend starts is a Kiln worker, so it offers the channel. */
function replicaRoute(r: RoutableReplica): ReplicaRoute {
  return {
    id: r.id,
    url: r.url ?? '',
    version: r.version,
    model: r.model,
    channel: channelPath,
    ...(r.socketPath === null ? {} : { socketPath: r.socketPath }),
  };
}

/** The revision a version of this endpoint runs as: its worker config is the endpoint's. */
export function revisionOf(endpoint: EndpointRecord, ref: VersionRef): string {
  return workerRevision({ model: ref.model, version: ref.version, config: endpoint.config });
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };
