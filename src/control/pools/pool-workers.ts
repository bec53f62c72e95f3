// The control plane's side of worker pools (issue 14, docs/pools.md). The reconciler runs each
// pool's workers like replicas of a hidden endpoint (`_pool-<name>`, a name no endpoint can
// have): this module says how many (desired), what each is started with (launch), tells every
// ready worker which endpoints it may serve (sync: the pool protocol's PUT, checked against
// the signature policy here, re-hashed by the worker at each load), and routes a pool
// endpoint to the workers that took an assignment naming it (route). The reconciler keeps
// its restarts, start timeouts, zero-loss stops and adoption for pool workers too.
//
//   store.listPools ─▶ desired: one DesiredEndpoint per pool (workers × revision of budget)
//   endpoints with config.pool ─▶ assignment per pool ─PUT─▶ each ready worker (when changed)
//   acks ─▶ route(endpoint): the pool's workers that hold its revision in their assignment

import { randomBytes } from 'node:crypto';
import type { ArtifactLocator } from '../../registry/artifact-storage.ts';
import type { Registry } from '../../registry/registry.ts';
import type { EndpointRecord } from '../../store/serving-records.ts';
import type { PoolRecord } from '../../store/scaling-records.ts';
import type { EndpointRoute } from '../../gateway/routing-snapshot.ts';
import {
  poolModelsPath,
  poolStatusPath,
  poolTokenHeader,
  type PoolAssignment,
  type PoolModel,
  type PoolWorkerStatus,
} from '../../protocol/pool/pool-protocol.ts';
import type { ReplicaLaunch } from '../backends/backend.ts';
import type { DesiredEndpoint, ReplicaState } from '../replica-plan.ts';
import { workerRevision, workerServingSettings } from '../serving-defaults.ts';
import {
  defaultMaxBodyBytes,
  endpointRoute,
  type RoutableReplica,
  type VersionFacts,
} from '../endpoint-route.ts';

/** Prefix of the hidden endpoint a pool's workers belong to (not a valid endpoint name). */
const poolWorkerPrefix = '_pool-';
/** A model's trust check (signature policy) is redone at least this often. */
const trustRecheckMs = 30_000;
const pushTimeoutMs = 5_000;

export function poolWorkerEndpoint(pool: string): string {
  return `${poolWorkerPrefix}${pool}`;
}

/** The pool whose workers run as this hidden endpoint; null for a real endpoint. */
export function poolOfWorkerEndpoint(endpoint: string): string | null {
  return endpoint.startsWith(poolWorkerPrefix) ? endpoint.slice(poolWorkerPrefix.length) : null;
}

/** What the reconciler knows of a replica, as far as pools need it. */
export interface PoolWorkerView {
  readonly id: string;
  readonly endpoint: string;
  readonly revision: string;
  readonly state: ReplicaState;
  readonly url: string | null;
}

interface WorkerAck {
  readonly url: string;
  /** The assignment key it took. */
  readonly key: string;
  /** endpoint → revision it may serve. */
  readonly revisions: ReadonlyMap<string, string>;
}

interface PoolPlan {
  readonly key: string;
  readonly assignment: PoolAssignment;
}

export interface PoolWorkersOptions {
  readonly registry: Registry;
  /**
   * Where assignment generations start (the wall clock, as snapshot versions do): a worker
   * adopted by a later platform ignores an assignment older than the one it holds, so a
   * restarted control plane's must count on from past the old one's.
   */
  readonly firstGeneration: number;
}

export class PoolWorkers {
  private pools: readonly PoolRecord[] = [];
  /** Each pool worker's token, by replica id (from its launch, or adopted with it). */
  private readonly tokens = new Map<string, string>();
  private readonly acks = new Map<string, WorkerAck>();
  private readonly plans = new Map<string, PoolPlan>();
  private generation: number;
  /**
   * Models checked against the signature policy, by endpoint and revision (two endpoints of
   * one model and settings share a revision, but each is its own entry of an assignment).
   */
  private readonly checked = new Map<string, { model: PoolModel; atMs: number }>();
  /**
   * Endpoints last seen on a pool, as they were: one moved off stays in its pool's assignment
   * (and routed there) until replicas of its own are ready, as a rollout keeps the old
   * revision serving until the new one is.
   */
  private readonly lastOnPool = new Map<string, EndpointRecord>();
  /** Why an endpoint on a pool is in no assignment (its version is not trusted now). */
  private readonly refused = new Map<string, string>();
  /** Push problems already said, by worker and assignment (each pass retries; said once). */
  private readonly said = new Set<string>();

  constructor(private readonly options: PoolWorkersOptions) {
    this.generation = options.firstGeneration;
  }

  refresh(pools: readonly PoolRecord[]): void {
    this.pools = pools;
  }

  list(): readonly PoolRecord[] {
    return this.pools;
  }

  /** One hidden endpoint per pool: its workers, a new revision when the budget changes. */
  desired(): DesiredEndpoint[] {
    return this.pools.map((pool) => ({
      name: poolWorkerEndpoint(pool.name),
      version: 0,
      revision: poolRevision(pool),
      replicas: pool.workers,
    }));
  }

  /** The desired set without replicas of their own for endpoints a pool serves. */
  withoutPoolEndpoints<T extends DesiredEndpoint>(
    desired: readonly T[],
    endpoints: readonly EndpointRecord[],
  ): T[] {
    const pooled = new Set(endpoints.filter((e) => e.config.pool !== undefined).map((e) => e.name));
    return desired.map((d) => (pooled.has(d.name) ? { ...d, replicas: 0, kept: [] } : d));
  }

  /** The launch of pool worker `replica` (a fresh token each launch). */
  launch(
    replica: { readonly id: string; readonly revision: string; readonly slot: number },
    endpoint: string,
    artifacts: ArtifactLocator,
  ): ReplicaLaunch | null {
    const name = poolOfWorkerEndpoint(endpoint);
    const pool = this.pools.find((p) => p.name === name);
    if (name === null || pool === undefined) return null;
    const token = randomBytes(24).toString('base64url');
    this.tokens.set(replica.id, token);
    this.acks.delete(replica.id);
    return {
      replicaId: replica.id,
      revision: replica.revision,
      slot: replica.slot,
      endpoint,
      model: endpoint,
      version: 0,
      // Placeholders: a pool worker's models come with its assignment.
      format: 'xgboost',
      files: [],
      schema: null,
      artifacts,
      maxBodyBytes: defaultMaxBodyBytes,
      config: {},
      batching: null,
      defaultTimeoutMs: null,
      pool: { name: pool.name, memoryBudgetBytes: pool.memoryBudgetBytes, token },
    };
  }

  /** A pool worker an earlier platform started: its token is in its launch. */
  adopted(launch: ReplicaLaunch): void {
    if (launch.pool != null) this.tokens.set(launch.replicaId, launch.pool.token);
  }

  /**
   * Brings every ready pool worker's assignment in line with the endpoints deployed on its
   * pool (PUT when it changed). Workers not ready, gone or failing a push are left for the
   * next pass: they are routed nothing until they took the current assignment.
   */
  async sync(
    endpoints: readonly EndpointRecord[],
    replicas: readonly PoolWorkerView[],
    nowMs: number,
  ): Promise<void> {
    const served = this.servedRecords(endpoints, replicas);
    for (const pool of this.pools) {
      const models: PoolModel[] = [];
      for (const endpoint of served) {
        if (endpoint.config.pool !== pool.name) continue;
        const model = await this.checkedModel(endpoint, nowMs);
        if (model !== null) models.push(model);
      }
      models.sort((a, b) => (a.endpoint < b.endpoint ? -1 : 1));
      const key = JSON.stringify(models);
      if (this.plans.get(pool.name)?.key !== key) {
        this.generation += 1;
        this.plans.set(pool.name, { key, assignment: { generation: this.generation, models } });
      }
    }
    for (const name of this.plans.keys())
      if (!this.pools.some((p) => p.name === name)) this.plans.delete(name);
    const live = new Set(replicas.map((r) => r.id));
    for (const id of [...this.acks.keys(), ...this.tokens.keys()]) {
      if (live.has(id)) continue;
      this.acks.delete(id);
      this.tokens.delete(id);
    }
    const pushes: Promise<void>[] = [];
    for (const replica of replicas) {
      const pool = poolOfWorkerEndpoint(replica.endpoint);
      const plan = pool === null ? undefined : this.plans.get(pool);
      if (plan === undefined || replica.state !== 'ready' || replica.url === null) continue;
      const ack = this.acks.get(replica.id);
      if (ack !== undefined && ack.key === plan.key && ack.url === replica.url) continue;
      pushes.push(this.push(replica.id, replica.url, plan));
    }
    await Promise.all(pushes);
  }

  /**
   * An endpoint moved off a pool whose own replicas are not all ready yet: its record as it
   * was on the pool (the pool still serves that), else null.
   */
  leaving(endpoint: string): EndpointRecord | null {
    return this.lastOnPool.get(endpoint) ?? null;
  }

  /** The records the pools serve: those on a pool, and those moving off until they can. */
  private servedRecords(
    endpoints: readonly EndpointRecord[],
    replicas: readonly PoolWorkerView[],
  ): EndpointRecord[] {
    const names = new Set(endpoints.map((e) => e.name));
    for (const name of this.lastOnPool.keys()) if (!names.has(name)) this.lastOnPool.delete(name);
    const served: EndpointRecord[] = [];
    for (const endpoint of endpoints) {
      if (endpoint.config.pool !== undefined) {
        this.lastOnPool.set(endpoint.name, endpoint);
        served.push(endpoint);
        continue;
      }
      const before = this.lastOnPool.get(endpoint.name);
      if (before === undefined) continue;
      const revision = workerRevision(endpoint);
      const ready = replicas.filter(
        (r) => r.endpoint === endpoint.name && r.revision === revision && r.state === 'ready',
      ).length;
      if (ready >= endpoint.replicas) this.lastOnPool.delete(endpoint.name);
      else served.push(before);
    }
    return served;
  }

  /** Why an endpoint deployed on a pool is not served (null: nothing wrong known). */
  reason(endpoint: string): string | null {
    return this.refused.get(endpoint) ?? null;
  }

  /**
   * A pool endpoint's route: the endpoint's facts (format, schema, bounds) as for its own
   * replicas, its replicas the pool's ready workers holding its revision. Workers are
   * reached over plain v2 HTTP (the channel has no model name in its frames).
   */
  route(
    endpoint: EndpointRecord,
    replicas: readonly PoolWorkerView[],
    facts: (model: string, version: number) => VersionFacts,
  ): EndpointRoute {
    const pool = endpoint.config.pool ?? '';
    const revision = workerRevision(endpoint);
    const workers: RoutableReplica[] = replicas
      .filter((r) => r.endpoint === poolWorkerEndpoint(pool) && r.state === 'ready')
      .filter((r) => {
        const ack = this.acks.get(r.id);
        return (
          ack !== undefined && ack.url === r.url && ack.revisions.get(endpoint.name) === revision
        );
      })
      .map((r) => ({
        id: r.id,
        model: endpoint.model,
        version: endpoint.version,
        revision,
        state: r.state,
        url: r.url,
        socketPath: null,
      }));
    // Traffic policies do not apply to pool endpoints (one version, loaded on demand).
    const route = endpointRoute({
      endpoint: { ...endpoint, replicas: Math.max(1, workers.length) },
      traffic: null,
      replicas: workers,
      facts,
      stableEstablished: true,
    });
    return {
      ...route,
      replicas: route.replicas.map(({ channel: _frames, socketPath: _socket, ...rest }) => rest),
      pool: { name: pool, revision },
    };
  }

  /** What each ready worker of a pool holds now (asked of the workers; unreachable: null). */
  async status(
    pool: string,
    replicas: readonly PoolWorkerView[],
  ): Promise<{ readonly id: string; readonly status: PoolWorkerStatus | null }[]> {
    const workers = replicas.filter(
      (r) => r.endpoint === poolWorkerEndpoint(pool) && r.state === 'ready' && r.url !== null,
    );
    return Promise.all(
      workers.map(async (r) => {
        const token = this.tokens.get(r.id);
        if (token === undefined || r.url === null) return { id: r.id, status: null };
        try {
          const response = await fetch(r.url + poolStatusPath, {
            headers: { [poolTokenHeader]: token },
            signal: AbortSignal.timeout(pushTimeoutMs),
          });
          if (!response.ok) return { id: r.id, status: null };
          return { id: r.id, status: (await response.json()) as PoolWorkerStatus };
        } catch {
          return { id: r.id, status: null };
        }
      }),
    );
  }

  private async checkedModel(endpoint: EndpointRecord, nowMs: number): Promise<PoolModel | null> {
    const revision = workerRevision(endpoint);
    const key = `${endpoint.name} ${revision}`;
    const known = this.checked.get(key);
    if (known !== undefined && nowMs - known.atMs < trustRecheckMs) return known.model;
    try {
      const { version } = await this.options.registry.trustedVersion(
        endpoint.model,
        endpoint.version,
      );
      // The worker's settings, without the fields that are the control plane's own.
      const {
        pool: _pool,
        autoscale: _autoscale,
        resources: _resources,
        ...config
      } = endpoint.config;
      const serving = workerServingSettings(version.format, config);
      const model: PoolModel = {
        endpoint: endpoint.name,
        revision,
        model: endpoint.model,
        version: endpoint.version,
        format: version.format,
        files: version.files,
        schema: version.schema,
        maxBodyBytes: serving.maxBodyBytes ?? defaultMaxBodyBytes,
        config: serving.config,
        defaultTimeoutMs: serving.defaultTimeoutMs,
      };
      this.checked.set(key, { model, atMs: nowMs });
      this.refused.delete(endpoint.name);
      return model;
    } catch (error) {
      this.checked.delete(key);
      this.refused.set(endpoint.name, (error as Error).message);
      return null;
    }
  }

  private async push(id: string, url: string, plan: PoolPlan): Promise<void> {
    const token = this.tokens.get(id);
    if (token === undefined) return;
    try {
      const response = await fetch(url + poolModelsPath, {
        method: 'PUT',
        headers: { 'content-type': 'application/json', [poolTokenHeader]: token },
        body: JSON.stringify(plan.assignment),
        signal: AbortSignal.timeout(pushTimeoutMs),
      });
      const taken = (await response.json().catch(() => null)) as { generation?: unknown } | null;
      if (!response.ok || taken?.generation !== plan.assignment.generation) {
        this.sayOnce(id, plan, `refused its assignment (${response.status})`);
        return;
      }
      const revisions = new Map(plan.assignment.models.map((m) => [m.endpoint, m.revision]));
      this.acks.set(id, { url, key: plan.key, revisions });
    } catch (error) {
      this.sayOnce(id, plan, `assignment not delivered: ${String(error)}`);
    }
  }

  private sayOnce(id: string, plan: PoolPlan, problem: string): void {
    const key = `${id} ${plan.assignment.generation}`;
    if (this.said.has(key)) return;
    if (this.said.size > 1000) this.said.clear();
    this.said.add(key);
    process.stderr.write(`pools: worker ${id}: ${problem} (retried every pass)\n`);
  }
}

/** A pool's workers are started again (rolled) when their budget changes. */
export function poolRevision(pool: PoolRecord): string {
  return `pool:${pool.name}#${pool.memoryBudgetBytes}`;
}
