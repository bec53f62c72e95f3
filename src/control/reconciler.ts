// The reconciler: keeps the replicas that exist in line with the endpoints users asked for,
// and publishes the routing snapshot the gateway serves from. Decisions come from
// planReplicas (pure); this class observes, executes, and records what happened.
//
//   store (endpoints, traffic, api keys) ─┐
//                                         ├─► planReplicas ─► backend.start / stop
//   replica events (backend) ─────────────┘         │
//                                                   └─► RoutingTable.publish (endpointRoute:
//                                                       ready replicas only, per version)
//
// With traffic management an endpoint runs several revisions at once (endpoint-route.ts:
// stable, policy variants, shadows, staged, warm until their time); the store's traffic
// records are read each pass, and a warm version whose time is up is dropped from its record
// here (history: `warm-expired` by `reconciler`) as its replicas are stopped.

import { KilnError } from '../core/errors.ts';
import type { Clock } from '../core/clock.ts';
import type { ModelSchema } from '../core/tensor.ts';
import type { Registry } from '../registry/registry.ts';
import type { Store } from '../store/store.ts';
import type { EndpointRecord } from '../store/serving-records.ts';
import { versionKey, type EndpointTrafficRecord } from '../store/traffic-records.ts';
import type {
  ApiKeyGrant,
  EndpointRoute,
  RoutingSnapshot,
  TeamLimit,
} from '../gateway/routing-snapshot.ts';
import type { Backend, ReplicaEvent, ReplicaHandle, SurvivingReplica } from './backends/backend.ts';
import {
  backoffResetAfterMs,
  failureKind,
  planReplicas,
  restartBackoffMs,
  type FailureKind,
  type ReplicaAction,
  type ReplicaState,
} from './replica-plan.ts';
import { RoutingTable } from './routing-table.ts';
import { scaledEndpoint } from './autoscale/scaled-endpoint.ts';
import type { Placer } from './placement/placer.ts';
import type { ReplicaPlacement } from '../placement/placement.ts';
import { workerRevision, workerServingSettings } from './serving-defaults.ts';
import {
  defaultMaxBodyBytes,
  endpointRoute,
  endpointVersions,
  expiredWarm,
  keptRevisions,
  stableFullyReady,
  type VersionFacts,
  type VersionRole,
} from './endpoint-route.ts';
import { PoolWorkers, poolOfWorkerEndpoint } from './pools/pool-workers.ts';

export { defaultMaxBodyBytes };

/** One version an endpoint runs, as `kiln endpoints show` lists them. */
export interface VersionStatus {
  readonly model: string;
  readonly version: number;
  /** Why it runs (endpoint-route.ts); empty: on its way out (replaced, dropped, expired). */
  readonly roles: readonly VersionRole[];
  /** Percent of the traffic it takes by policy (100: stable without policy); null: none. */
  readonly weight: number | null;
  /** A shadow's share of requests copied to it. */
  readonly sampleRate: number | null;
  /** A warm version: kept until then (ISO 8601). */
  readonly warmUntil: string | null;
  readonly readyReplicas: number;
  /** Its replicas not stopping, in any other state. */
  readonly replicas: number;
}

export interface ReplicaStatus {
  readonly id: string;
  readonly endpoint: string;
  readonly model: string;
  readonly version: number;
  /** What it was started from (serving-defaults.ts: workerRevision). */
  readonly revision: string;
  readonly slot: number;
  readonly state: ReplicaState;
  readonly url: string | null;
  readonly pid: number | null;
  readonly restarts: number;
  /**
   * Why it is not ready: its failure while failed, and `last failure: …` while it restarts
   * after one (a restart cycle never hides the reason); null once ready.
   */
  readonly reason: string | null;
  /** The last failure, kept until the replica is ready again. */
  readonly lastFailure: ReplicaFailure | null;
  /** When a failed replica starts again (ISO 8601); null when not failed or not yet known. */
  readonly restartAt: string | null;
  /** The inventory node placement gave it (null: not placed, or no placement). */
  readonly node: string | null;
  /** Its node was reclaimed: it serves until its replacement is ready, then stops. */
  readonly evicted: boolean;
}

export interface ReplicaFailure {
  readonly reason: string;
  /** The error code reported (KILN_ARTIFACT_CORRUPT …); null for a crash or an exit. */
  readonly code: string | null;
  readonly kind: FailureKind;
  /** ISO 8601. */
  readonly at: string;
}

interface Replica {
  /** Unique for the reconciler's life: a replica stopping and its successor never share it. */
  id: string;
  endpoint: string;
  model: string;
  version: number;
  revision: string;
  slot: number;
  state: ReplicaState;
  url: string | null;
  /** The worker's Unix socket (local backend), for the gateway's channel. */
  socketPath: string | null;
  restarts: number;
  /** `restarts` when its current run of failures began: the backoff counts from there. */
  restartsBeforeFailing: number;
  /** Since when it is ready (null: not ready). */
  readySinceMs: number | null;
  /** The current launch's failure, as reported (a worker reports before it exits). */
  reason: string | null;
  reasonCode: string | null;
  /** Kept through restarts until ready: what `starting` shows while it restarts. */
  lastFailure: ReplicaFailure | null;
  /** The blobs of the version it serves (known once a launch passed its checks). */
  digests: ReadonlySet<string>;
  restartAtMs: number | null;
  handle: ReplicaHandle | null;
  /** Which launch of this replica is current: events of an earlier one are stale. */
  launch: number;
  /** When the current launch started (for the start timeout). */
  launchedAtMs: number;
  /** Its current launch was an earlier platform's (adopted): no start time to measure. */
  adopted: boolean;
  /** Placement found no node for it: it waits, not started, and is tried every pass. */
  unplaced: boolean;
  /** Its node was reclaimed (replica-plan.ts: replaced in its slot, then stopped). */
  evicted: boolean;
}

/** The last part of a replica id: which start of its platform it was (0 if none). */
function launchNumber(replicaId: string): number {
  return Number(/-(\d+)$/.exec(replicaId)?.[1] ?? 0);
}

/** A replica in its slot, not yet launched: no address, no failure, nothing to restart. */
function newReplica(
  place: Pick<Replica, 'id' | 'endpoint' | 'model' | 'version' | 'revision' | 'slot'>,
): Replica {
  return {
    ...place,
    state: 'starting',
    url: null,
    socketPath: null,
    restarts: 0,
    restartsBeforeFailing: 0,
    readySinceMs: null,
    reason: null,
    reasonCode: null,
    lastFailure: null,
    digests: new Set(),
    restartAtMs: null,
    handle: null,
    launch: 0,
    launchedAtMs: 0,
    adopted: false,
    unplaced: false,
    evicted: false,
  };
}

export interface ReconcilerOptions {
  readonly store: Store;
  readonly registry: Registry;
  readonly backend: Backend;
  readonly clock: Clock;
  readonly auth: RoutingSnapshot['auth'];
  /** How often to look again without a trigger (restarts after backoff). */
  readonly intervalMs?: number;
  /**
   * A gateway long-polls the routing table: wait for it to confirm the snapshot without a
   * replica before stopping that replica (else just pause unpublishDelayMs).
   */
  readonly gatewayAcks?: boolean;
  /** With gatewayAcks, the longest wait for the confirmation; without, the pause. */
  readonly unpublishDelayMs?: number;
  /**
   * A replica not ready this long after its start is stopped and counted as failed (then
   * restarted with backoff): a worker hung while loading must not hold its slot for ever.
   * Default 10 minutes.
   */
  readonly startTimeoutMs?: number;
  /** Picks a node (and devices) for each replica it starts (issue 14); absent: no placement. */
  readonly placer?: Placer;
}

export class Reconciler {
  readonly routing: RoutingTable;
  /** Worker pools (issue 14): their workers run as replicas of hidden endpoints. */
  readonly pools: PoolWorkers;
  private readonly replicas = new Map<string, Replica>();
  /** Schemas the workers reported, by "model@version" (used when none was declared). */
  private readonly reportedSchemas = new Map<string, ModelSchema>();
  /** Feature names a ready worker reported, by model@version (tree models that have them). */
  private readonly reportedFeatureNames = new Map<string, readonly string[] | null>();
  private endpoints: readonly EndpointRecord[] = [];
  /** The traffic records read last pass, by endpoint (none: stable only). */
  private traffic = new Map<string, EndpointTrafficRecord>();
  /**
   * Per endpoint, its stable revision once fully ready (endpoint-route.ts: after that no
   * other revision stands in for it, whatever crashes).
   */
  private readonly established = new Map<string, string>();
  /** Failed writes dropping expired warm versions already reported (endpoint#revision). */
  private readonly warmDropFailures = new Set<string>();
  /** The model and version each revision the last plan wanted is of (what a start launches). */
  private revisions = new Map<string, { readonly model: string; readonly version: number }>();
  private grants: readonly ApiKeyGrant[] = [];
  private teamLimits: readonly TeamLimit[] = [];
  private declaredSchemas = new Map<string, ModelSchema | null>();
  private formats = new Map<string, EndpointRoute['format']>();
  private running: Promise<void> | null = null;
  private again = false;
  private timer: NodeJS.Timeout | null = null;
  private closed = false;
  /** Replicas started so far: the last part of every replica id. */
  private launches = 0;
  private started = false;
  private firstPassDone!: () => void;
  /** Told when a replica this platform launched is ready, and how long its start took. */
  private readonly readyListeners: ((endpoint: string, startMs: number) => void)[] = [];

  get placer(): Placer | null {
    return this.options.placer ?? null;
  }

  constructor(private readonly options: ReconcilerOptions) {
    this.routing = new RoutingTable(
      { auth: options.auth, endpoints: [], apiKeys: [], teamLimits: [] },
      options.clock,
    );
    this.pools = new PoolWorkers({
      registry: options.registry,
      firstGeneration: options.clock.now(),
    });
    // Gateways get no snapshot before the first pass has published the replicas that exist
    // (adopted ones included): the empty initial one would take them all out of the routing.
    this.routing.holdUntil(new Promise<void>((resolve) => (this.firstPassDone = resolve)));
  }

  /**
   * Takes over the replicas an earlier platform on this home left running (call before
   * start(), so the first snapshot already routes to them). Each is probed; this resolves
   * once every one is ready or gone, or after waitMs (those still loading then join when
   * ready, or hit the start timeout like any other). Those the endpoints no longer want are
   * stopped by the plan like any other replica — after a gateway holds a snapshot without
   * them, and for an old revision only once the current one is ready.
   */
  async adopt(survivors: readonly SurvivingReplica[], waitMs = 15_000): Promise<void> {
    const settled: Promise<void>[] = [];
    // Newest first: two in one slot are a replica the platform was stopping (draining, out
    // of the routing) and the successor it started; the successor keeps the slot.
    const newestFirst = [...survivors].sort(
      (a, b) => launchNumber(b.launch.replicaId) - launchNumber(a.launch.replicaId),
    );
    for (const survivor of newestFirst) {
      const { launch } = survivor;
      const taken = [...this.replicas.values()].some(
        (r) =>
          r.id === launch.replicaId ||
          (r.endpoint === launch.endpoint &&
            r.revision === launch.revision &&
            r.slot === launch.slot),
      );
      if (taken) {
        void survivor.stop(30_000); // a second holder of one slot: never in any snapshot of ours
        continue;
      }
      this.pools.adopted(launch);
      // New replicas of this platform get ids after the adopted ones'.
      this.launches = Math.max(this.launches, launchNumber(launch.replicaId));
      const replica = newReplica({
        id: launch.replicaId,
        endpoint: launch.endpoint,
        model: launch.model,
        version: launch.version,
        revision: launch.revision,
        slot: launch.slot,
      });
      // Its first (and current) launch is the earlier platform's, running since about now.
      replica.launch = 1;
      replica.launchedAtMs = this.options.clock.now();
      replica.adopted = true;
      this.replicas.set(replica.id, replica);
      if (launch.placement !== undefined)
        this.options.placer?.adopt(replica.id, replica.endpoint, launch.placement);
      settled.push(
        new Promise<void>((resolve) => {
          replica.handle = survivor.adopt((event) => {
            if (replica.launch !== 1) return;
            this.onReplicaEvent(replica, event);
            if (event.kind === 'ready' || event.kind === 'exited') resolve();
          });
        }),
      );
    }
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all(settled),
      new Promise((resolve) => (timer = setTimeout(resolve, waitMs))),
    ]);
    clearTimeout(timer);
  }

  start(): void {
    this.started = true;
    this.timer = setInterval(() => void this.trigger(), this.options.intervalMs ?? 500);
    this.timer.unref();
    void this.trigger();
  }

  /** Asks for a reconcile pass soon; passes never overlap. Resolves when it has run. */
  trigger(): Promise<void> {
    // Not before start(): while adopting, a pass would publish before every adoptee is probed.
    if (this.closed || !this.started) return Promise.resolve();
    if (this.running !== null) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      try {
        do {
          this.again = false;
          await this.pass();
        } while (this.again && !this.closed);
      } catch (error) {
        process.stderr.write(`reconciler: ${String((error as Error).stack ?? error)}\n`);
      } finally {
        this.running = null;
        this.firstPassDone();
      }
    })();
    return this.running;
  }

  /**
   * `listener(endpoint, startMs)` for each replica launched here that becomes ready: launch
   * to ready, in ms (the autoscaler's start-up time and cold starts). Adopted replicas are not
   * reported: their launch was another platform's.
   */
  onReplicaReady(listener: (endpoint: string, startMs: number) => void): void {
    this.readyListeners.push(listener);
  }

  /**
   * The replica count the last pass ran the endpoint at: for an autoscaled endpoint its stored
   * count (0 allowed), else its deployed one; undefined before a pass has seen it.
   */
  runningCount(endpoint: string): number | undefined {
    return this.endpoints.find((e) => e.name === endpoint)?.replicas;
  }

  /** Ready and starting replicas of the endpoint's current revision (the autoscaler's view). */
  replicaCounts(endpoint: EndpointRecord): { ready: number; starting: number } {
    const revision = workerRevision(endpoint);
    let ready = 0;
    let starting = 0;
    for (const r of this.replicas.values()) {
      if (r.endpoint !== endpoint.name || r.revision !== revision) continue;
      if (r.state === 'ready') ready += 1;
      else if (r.state === 'starting') starting += 1;
    }
    return { ready, starting };
  }

  replicaStatus(endpoint?: string): ReplicaStatus[] {
    return [...this.replicas.values()]
      .filter((r) => endpoint === undefined || r.endpoint === endpoint)
      .sort((a, b) => (a.id < b.id ? -1 : 1))
      .map((r) => ({
        id: r.id,
        endpoint: r.endpoint,
        model: r.model,
        version: r.version,
        revision: r.revision,
        slot: r.slot,
        state: r.state,
        url: r.url,
        pid: r.handle?.pid ?? null,
        restarts: r.restarts,
        reason:
          r.reason ?? (r.lastFailure === null ? null : `last failure: ${r.lastFailure.reason}`),
        lastFailure: r.lastFailure,
        restartAt:
          r.state === 'failed' && r.restartAtMs !== null && Number.isFinite(r.restartAtMs)
            ? new Date(r.restartAtMs).toISOString()
            : null,
        node: this.options.placer?.nodeOf(r.id) ?? null,
        evicted: r.evicted,
      }));
  }

  /**
   * A blob was stored (uploaded, or uploaded again over a damaged copy): replicas waiting out
   * a failure that repeats and that serve a version with this blob start again now, rather
   * than minutes later — the upload may be the repair.
   */
  blobStored(sha256: string): void {
    const now = this.options.clock.now();
    let retried = false;
    for (const replica of this.replicas.values()) {
      if (replica.state !== 'failed' || replica.lastFailure?.kind !== 'repeats') continue;
      if (!replica.digests.has(sha256) || replica.restartAtMs === null) continue;
      replica.restartAtMs = Math.min(replica.restartAtMs, now);
      retried = true;
    }
    if (retried) void this.trigger();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.firstPassDone();
    if (this.timer !== null) clearInterval(this.timer);
    await this.running;
    for (const replica of this.replicas.values()) replica.state = 'stopping';
    this.routing.close();
    await Promise.all(
      [...this.replicas.values()].flatMap((r) =>
        r.handle === null ? [] : [r.handle.stop(10_000)],
      ),
    );
    await this.options.backend.close();
  }

  // ------------------------------------------------------------------ one pass

  private async pass(): Promise<void> {
    const { store } = this.options;
    // An autoscaled endpoint runs its stored count (0 allowed), not the deployed one.
    const scales = new Map((await store.listEndpointScales()).map((s) => [s.endpoint, s]));
    this.endpoints = (await store.listEndpoints()).map((e) =>
      scaledEndpoint(e, scales.get(e.name) ?? null),
    );
    this.teamLimits = (await store.listTeamLimits()).map((l) => ({
      team: l.team,
      requestsPerSecond: l.requestsPerSecond,
      burst: l.burst,
    }));
    this.grants = (await store.listApiKeys()).map((k) => ({
      id: k.id,
      sha256: k.sha256,
      team: k.team,
      endpoint: k.endpoint,
    }));
    this.traffic = new Map((await store.listEndpointTraffic()).map((t) => [t.endpoint, t]));
    this.pools.refresh(await store.listPools());
    await this.dropExpiredWarm();
    this.revisions = new Map();
    const desired = this.endpoints.map((e) => {
      const versions = endpointVersions(e, this.traffic.get(e.name) ?? null);
      for (const v of versions) this.revisions.set(v.revision, v);
      const kept = keptRevisions(versions);
      return {
        name: e.name,
        version: e.version,
        revision: workerRevision(e),
        replicas: e.replicas,
        ...(kept.length === 0 ? {} : { kept }),
        versions,
      };
    });
    for (const { versions } of desired)
      for (const v of versions) await this.learnVersion(v.model, v.version);
    // And what the replicas serve: one adopted from a platform before may serve a version no
    // endpoint names any more (redeployed meanwhile), routed until its successor is ready.
    for (const replica of this.replicas.values())
      if (poolOfWorkerEndpoint(replica.endpoint) === null)
        await this.learnVersion(replica.model, replica.version);
    this.stopHungStarts();
    await this.launchUnplaced();
    const planned = desired.map(({ versions: _routing, ...plan }) => plan);
    const actions = planReplicas(
      // Endpoints on a pool have no replicas of their own; the pools' workers do.
      [...this.pools.withoutPoolEndpoints(planned, this.endpoints), ...this.pools.desired()],
      [...this.replicas.values()],
      this.options.clock.now(),
    );
    // Assignments first: an endpoint moving onto a pool is routed to its workers before the
    // stops below publish a snapshot without its own replicas.
    await this.pools.sync(this.endpoints, [...this.replicas.values()], this.options.clock.now());
    for (const action of actions) await this.execute(action);
    this.publish();
  }

  /**
   * Drops warm versions whose time is up from their records (one change each, against the
   * revision read: a concurrent change wins and the next pass looks again). Their replicas
   * stop by the plan, which reads the time itself: a failed write delays nothing.
   */
  private async dropExpiredWarm(): Promise<void> {
    const now = this.options.clock.now();
    for (const [name, record] of this.traffic) {
      const expired = expiredWarm(record, now);
      if (expired.length === 0 || !this.endpoints.some((e) => e.name === name)) continue;
      try {
        const updated = await this.options.store.updateEndpointTraffic(name, {
          expectRevision: record.revision,
          warm: record.warm.filter((w) => !expired.includes(w)),
          event: {
            endpoint: name,
            actor: 'reconciler',
            action: 'warm-expired',
            reason: `kept warm until ${expired.map((w) => `${versionKey(w)} ${w.until}`).join(', ')}`,
            detail: { versions: expired },
          },
        });
        this.traffic.set(name, updated);
      } catch (error) {
        if (error instanceof KilnError && error.code === 'KILN_TRAFFIC_CONFLICT') continue;
        // Retried every pass; said once per record revision.
        const said = `${name}#${record.revision}`;
        if (this.warmDropFailures.has(said)) continue;
        this.warmDropFailures.add(said);
        process.stderr.write(
          `reconciler: dropping expired warm versions of ${name}: ${String(error)}\n`,
        );
      }
    }
  }

  private async learnVersion(model: string, version: number): Promise<void> {
    const key = `${model}@${version}`;
    if (this.formats.has(key)) return;
    try {
      const found = await this.options.registry.resolveVersion(model, version);
      this.formats.set(key, found.format);
      this.declaredSchemas.set(key, found.schema);
    } catch {
      // a replica start for it will fail with the reason
    }
  }

  private async execute(action: ReplicaAction): Promise<void> {
    switch (action.kind) {
      case 'start': {
        const endpoint = this.endpoints.find((e) => e.name === action.endpoint) ?? null;
        if (endpoint === null && poolOfWorkerEndpoint(action.endpoint) === null) return;
        // Several revisions of one endpoint run at once (policy versions, warm, staged): the
        // model is the revision's, and the launch count keeps ids unique across them.
        const model = this.revisions.get(action.revision)?.model ?? endpoint?.model ?? '';
        this.launches += 1;
        const replica = newReplica({
          id: `${action.endpoint}-v${action.version}-r${action.slot}-${this.launches}`,
          endpoint: action.endpoint,
          model,
          version: action.version,
          revision: action.revision,
          slot: action.slot,
        });
        this.replicas.set(replica.id, replica);
        await this.launch(replica, endpoint);
        return;
      }
      case 'restart': {
        const replica = this.replicas.get(action.replicaId);
        const endpoint = this.endpoints.find((e) => e.name === replica?.endpoint) ?? null;
        if (replica === undefined) return;
        if (endpoint === null && poolOfWorkerEndpoint(replica.endpoint) === null) return;
        replica.restarts += 1;
        replica.state = 'starting';
        replica.restartAtMs = null;
        await this.launch(replica, endpoint);
        return;
      }
      case 'stop': {
        const replica = this.replicas.get(action.replicaId);
        if (replica === undefined) return;
        replica.state = 'stopping';
        this.publish();
        const handle = replica.handle;
        if (handle === null) {
          this.replicas.delete(replica.id);
          this.options.placer?.release(replica.id);
          return;
        }
        // Zero-loss stop, in the background of the loop: the replica is already out of the
        // published snapshot; once the gateway holds that snapshot it sends the replica
        // nothing new, and the worker drains what it has (queued and running) before exiting.
        const unpublished = this.routing.current().version;
        void (async () => {
          if (this.options.gatewayAcks === true) {
            await this.routing.waitForAck(unpublished, this.options.unpublishDelayMs ?? 5_000);
          } else {
            await new Promise((r) => setTimeout(r, this.options.unpublishDelayMs ?? 100));
          }
          await handle.stop(30_000);
        })();
        return;
      }
    }
  }

  /**
   * Checks the version may be served (signature policy now), then starts a worker; without
   * an endpoint, a pool's worker (pool-workers.ts).
   */
  private async launch(replica: Replica, endpoint: EndpointRecord | null): Promise<void> {
    if (endpoint === null) return this.launchPoolWorker(replica);
    let version;
    try {
      ({ version } = await this.options.registry.trustedVersion(replica.model, replica.version));
    } catch (error) {
      if (error instanceof KilnError) this.markFailed(replica, error.message, error.code);
      else this.markFailed(replica, String(error));
      return;
    }
    replica.digests = new Set(version.files.map((f) => f.sha256));
    replica.reason = null;
    replica.reasonCode = null;
    replica.url = null;
    replica.socketPath = null;
    const serving = workerServingSettings(version.format, endpoint.config);
    const placement = this.placeReplica(replica, endpoint, version.sizeBytes);
    if (placement === null) return;
    replica.launch += 1;
    replica.launchedAtMs = this.options.clock.now();
    replica.adopted = false;
    const launch = replica.launch;
    try {
      replica.handle = this.options.backend.start(
        {
          replicaId: replica.id,
          revision: replica.revision,
          slot: replica.slot,
          endpoint: replica.endpoint,
          model: replica.model,
          version: replica.version,
          format: version.format,
          files: version.files,
          schema: version.schema,
          artifacts: this.options.registry.artifacts.locator,
          maxBodyBytes: serving.maxBodyBytes ?? defaultMaxBodyBytes,
          config: serving.config,
          batching: serving.batching,
          defaultTimeoutMs: serving.defaultTimeoutMs,
          ...(serving.llm === null ? {} : { llm: serving.llm }),
          ...(placement === undefined ? {} : { placement }),
        },
        (event) => {
          if (replica.launch === launch) this.onReplicaEvent(replica, event);
        },
      );
    } catch (error) {
      // The backend could not even start it (no disk for its folder, spawn refused): a
      // failure like any other, retried with backoff, never a slot stuck in 'starting'.
      this.markFailed(replica, `the worker could not be started: ${(error as Error).message}`);
    }
  }

  /**
   * A node for the replica (undefined: no placement here). None free now: the replica stays
   * `starting`, not launched, with placement's reason ("unschedulable: needs X, largest free
   * Y") where `kiln endpoints show` sees it, and is tried again every pass (null).
   */
  private placeReplica(
    replica: Replica,
    endpoint: EndpointRecord,
    artifactBytes: number,
  ): ReplicaPlacement | undefined | null {
    const placer = this.options.placer;
    if (placer === undefined) return undefined;
    // A replacement for a replica of a reclaimed node: on-demand first.
    const replacing = [...this.replicas.values()].some(
      (r) =>
        r.evicted &&
        r.endpoint === replica.endpoint &&
        r.revision === replica.revision &&
        r.slot === replica.slot,
    );
    const result = placer.place(replica.id, endpoint, artifactBytes, replacing);
    if (result.ok) {
      replica.unplaced = false;
      return result.placement;
    }
    replica.unplaced = true;
    replica.state = 'starting';
    replica.handle = null;
    replica.reason = `unschedulable: ${result.reason}`;
    return null;
  }

  /** Replicas placement found no node for: tried again (a replica stopped may have made room). */
  private async launchUnplaced(): Promise<void> {
    for (const replica of [...this.replicas.values()]) {
      if (!replica.unplaced || replica.state !== 'starting' || replica.handle !== null) continue;
      const endpoint = this.endpoints.find((e) => e.name === replica.endpoint);
      if (endpoint !== undefined) await this.launch(replica, endpoint);
    }
  }

  /**
   * Takes a node away (a spot reclaim, a drain): nothing new is placed on it, and each replica
   * on it is replaced on another node before it stops (replica-plan.ts: evicted). Returns them.
   */
  reclaimNode(node: string): string[] {
    const placer = this.options.placer;
    if (placer === undefined) return [];
    const ids = placer.reclaim(node);
    for (const id of ids) {
      const replica = this.replicas.get(id);
      if (replica !== undefined && replica.state !== 'stopping') replica.evicted = true;
    }
    void this.trigger();
    return ids;
  }

  /** A pool's worker: its launch is the pool's (no model of its own; pool-workers.ts). */
  private launchPoolWorker(replica: Replica): void {
    const artifacts = this.options.registry.artifacts.locator;
    const spec = this.pools.launch(replica, replica.endpoint, artifacts);
    if (spec === null) return;
    replica.reason = null;
    replica.reasonCode = null;
    replica.url = null;
    replica.socketPath = null;
    replica.launch += 1;
    replica.launchedAtMs = this.options.clock.now();
    replica.adopted = false;
    const launch = replica.launch;
    try {
      replica.handle = this.options.backend.start(spec, (event) => {
        if (replica.launch === launch) this.onReplicaEvent(replica, event);
      });
    } catch (error) {
      this.markFailed(replica, `the worker could not be started: ${(error as Error).message}`);
    }
  }

  /** Stops replicas still starting past the start timeout; the plan restarts them. */
  private stopHungStarts(): void {
    const limit = this.options.startTimeoutMs ?? 600_000;
    const now = this.options.clock.now();
    for (const replica of this.replicas.values()) {
      const handle = replica.handle;
      if (replica.state !== 'starting' || handle === null) continue;
      if (now - replica.launchedAtMs < limit) continue;
      replica.launch += 1; // what the hung launch still reports is stale now
      const stale = replica.launch;
      const reason = `the worker was not ready within ${Math.round(limit / 1000)} s`;
      // Its node and devices stay held until the hung worker is gone.
      this.markFailed(replica, reason, null, { holdPlacement: true });
      // Not restarted before the hung worker is gone: the next launch uses its folder.
      replica.restartAtMs = Number.POSITIVE_INFINITY;
      void handle.stop(5_000).finally(() => {
        if (replica.launch === stale) this.options.placer?.release(replica.id);
        if (replica.launch !== stale || replica.state !== 'failed') return;
        replica.restartAtMs = this.options.clock.now() + this.backoffMs(replica, 'crash');
        void this.trigger();
      });
    }
  }

  /** `code`: the error code reported with the failure; null for a crash. */
  private markFailed(
    replica: Replica,
    reason: string,
    code: string | null = null,
    options: { readonly holdPlacement?: boolean } = {},
  ): void {
    const now = this.options.clock.now();
    const kind = failureKind(code);
    // Ready a good while: a new failure, not one more of a loop.
    if (replica.readySinceMs !== null && now - replica.readySinceMs >= backoffResetAfterMs)
      replica.restartsBeforeFailing = replica.restarts;
    replica.readySinceMs = null;
    replica.state = 'failed';
    replica.reason = reason;
    replica.reasonCode = code;
    replica.lastFailure = { reason, code, kind, at: new Date(now).toISOString() };
    replica.url = null;
    replica.socketPath = null;
    replica.handle = null;
    replica.restartAtMs = now + this.backoffMs(replica, kind);
    // Its process is gone: its node and devices are free for others (placed again at restart).
    if (options.holdPlacement !== true) this.options.placer?.release(replica.id);
  }

  private backoffMs(replica: Replica, kind: FailureKind): number {
    return restartBackoffMs(replica.restarts - replica.restartsBeforeFailing, kind);
  }

  private onReplicaEvent(replica: Replica, event: ReplicaEvent): void {
    switch (event.kind) {
      case 'listening':
        replica.url = event.url;
        replica.socketPath = event.socketPath;
        return;
      case 'ready':
        if (replica.state === 'stopping') return;
        replica.state = 'ready';
        replica.readySinceMs = this.options.clock.now();
        if (!replica.adopted) {
          const startMs = replica.readySinceMs - replica.launchedAtMs;
          for (const listener of this.readyListeners) listener(replica.endpoint, startMs);
        }
        replica.reason = null;
        replica.reasonCode = null;
        replica.lastFailure = null;
        this.reportedSchemas.set(`${replica.model}@${replica.version}`, event.schema);
        this.reportedFeatureNames.set(`${replica.model}@${replica.version}`, event.featureNames);
        this.publish();
        void this.trigger();
        return;
      case 'failed':
        replica.reason = event.reason;
        replica.reasonCode = event.code ?? null;
        return;
      case 'exited':
        if (replica.state === 'stopping') {
          if (this.replicas.get(replica.id) === replica) {
            this.replicas.delete(replica.id);
            this.options.placer?.release(replica.id);
          }
        } else {
          const how =
            event.signal === null ? `code ${event.code ?? '?'}` : `signal ${event.signal}`;
          if (replica.reason !== null) this.markFailed(replica, replica.reason, replica.reasonCode);
          else this.markFailed(replica, `the worker exited (${how})`);
        }
        this.publish();
        void this.trigger();
        return;
    }
  }

  // ------------------------------------------------------------------ routing

  private route(endpoint: EndpointRecord): EndpointRoute {
    if (endpoint.config.pool !== undefined)
      return this.pools.route(endpoint, [...this.replicas.values()], (m, v) => this.facts(m, v));
    const replicas = [...this.replicas.values()].filter((r) => r.endpoint === endpoint.name);
    const revision = workerRevision(endpoint);
    if (this.established.get(endpoint.name) !== revision && stableFullyReady(endpoint, replicas))
      this.established.set(endpoint.name, revision);
    const route = endpointRoute({
      endpoint,
      traffic: this.traffic.get(endpoint.name) ?? null,
      replicas,
      facts: (model, version) => this.facts(model, version),
      stableEstablished: this.established.get(endpoint.name) === revision,
    });
    // Moved off a pool: its workers serve it (as it was) until a replica of its own is ready.
    const leaving = this.pools.leaving(endpoint.name);
    if (route.replicas.length > 0 || leaving?.config.pool === undefined) return route;
    return this.pools.route(leaving, [...this.replicas.values()], (m, v) => this.facts(m, v));
  }

  /** Format, schema and input names of a version, as far as known (declared, then reported). */
  private facts(model: string, version: number): VersionFacts {
    const key = `${model}@${version}`;
    const declared = this.declaredSchemas.get(key) ?? null;
    return {
      format: this.formats.get(key) ?? 'onnx',
      schema: declared ?? this.reportedSchemas.get(key) ?? null,
      inputNaming: {
        declared: declared !== null,
        featureNames: this.reportedFeatureNames.get(key) ?? null,
      },
    };
  }

  /**
   * The versions an endpoint runs and their ready replicas: those its record and traffic
   * record want (stable first; a warm one past its time is left out), then those still
   * running that nothing wants any more (replaced, dropped, expired: roles empty).
   */
  versionStatus(endpoint: EndpointRecord): VersionStatus[] {
    const now = this.options.clock.now();
    const live = [...this.replicas.values()].filter(
      (r) => r.endpoint === endpoint.name && r.state !== 'stopping',
    );
    const wanted = endpointVersions(endpoint, this.traffic.get(endpoint.name) ?? null).filter(
      (v) => !(v.roles.length === 1 && v.roles[0] === 'warm' && !((v.warmUntilMs ?? 0) > now)),
    );
    const rows: VersionStatus[] = wanted.map((v) => {
      const own = live.filter((r) => r.revision === v.revision);
      return {
        model: v.model,
        version: v.version,
        roles: v.roles,
        weight: v.weight,
        sampleRate: v.sampleRate,
        warmUntil:
          v.warmUntilMs === null || !Number.isFinite(v.warmUntilMs)
            ? null
            : new Date(v.warmUntilMs).toISOString(),
        readyReplicas: own.filter((r) => r.state === 'ready').length,
        replicas: own.length,
      };
    });
    const leaving = new Map<string, Replica[]>();
    for (const r of live) {
      if (wanted.some((v) => v.revision === r.revision)) continue;
      const key = `${r.model}@${r.version}`;
      leaving.set(key, [...(leaving.get(key) ?? []), r]);
    }
    for (const own of leaving.values()) {
      rows.push({
        model: own[0]!.model,
        version: own[0]!.version,
        roles: [],
        weight: null,
        sampleRate: null,
        warmUntil: null,
        readyReplicas: own.filter((r) => r.state === 'ready').length,
        replicas: own.length,
      });
    }
    return rows;
  }

  private publish(): void {
    for (const name of this.established.keys())
      if (!this.endpoints.some((e) => e.name === name)) this.established.delete(name);
    this.routing.publish({
      auth: this.options.auth,
      endpoints: this.endpoints.map((e) => this.route(e)),
      apiKeys: this.grants,
      teamLimits: this.teamLimits,
    });
  }
}
