// Endpoints: deploying a model version under a stable name, and what users see of them.
// Deploy checks everything that can be known without starting a worker (version exists,
// format servable, signature policy, ONNX declared schema vs the model, serving settings of
// the right kind for the format, an hf-llm endpoint's `llm` settings against its model: see
// llm-deploy-check.ts), then records the desired state; the reconciler makes it so.

import { systemClock, type Clock } from '../core/clock.ts';
import { kilnError } from '../core/errors.ts';
import type { Registry } from '../registry/registry.ts';
import type { ModelFormat } from '../registry/formats/artifact-file.ts';
import type { Model, ModelVersion } from '../registry/types.ts';
import { checkName } from '../registry/names.ts';
import { servableFormats } from '../runtimes/load-runtime.ts';
import type { EndpointRecord } from '../store/serving-records.ts';
import type { EndpointWriteOptions } from '../store/store.ts';
import type { Reconciler, ReplicaStatus, VersionStatus } from './reconciler.ts';
import { TrafficService } from './traffic/traffic-service.ts';
import {
  checkFieldsForFormat,
  checkLlmAgainstModel,
  checkLlmServingConfig,
  configProblemError,
  readModelConfig,
} from './llm-deploy-check.ts';
import { checkDeployPlacement } from './placement/deploy-placement-check.ts';
import { resolveLlmServingConfig } from '../llm/serving/llm-serving-config.ts';
import type { AutoscalePolicy } from '../autoscale/autoscale-policy.ts';
import type { ObservabilityConfig } from '../store/observability-config.ts';
import { resolveObservabilityConfig } from '../observability/observability-input.ts';
import { checkObservabilityFields } from './observability/observability-deploy-check.ts';
import { resolveEndpointPolicy } from './autoscale/scaled-endpoint.ts';
import {
  completeEndpointConfig,
  workerRevision,
  type EndpointConfigInput,
} from './serving-defaults.ts';
import { checkPoolDeploy } from './pools/pool-deploy-check.ts';

export interface DeployRequest {
  readonly model: string;
  readonly version?: number;
  readonly alias?: string;
  readonly replicas?: number;
  readonly team?: string;
  readonly config?: EndpointConfigInput;
  /**
   * How long the version this deploy replaces keeps running without traffic, so that
   * `kiln rollback` is instant (default: the platform's KILN_WARM_GRACE_MS, 10 minutes).
   */
  readonly warmGraceMs?: number;
}

export interface EndpointView extends EndpointRecord {
  /**
   * The served version's format (null when it cannot be read). hf-llm endpoints speak the
   * OpenAI API: their `url` is its base URL (`{gateway}/v1`, the endpoint is the `model`).
   */
  readonly format: ModelFormat | null;
  readonly url: string;
  readonly status: {
    readonly ready: boolean;
    readonly readyReplicas: number;
    readonly reason: string | null;
    /**
     * The gateway's bound on this endpoint's infer requests in flight (beyond: 429), as in
     * the routing snapshot the gateway holds: the configured `maxConcurrency`, else derived
     * from the ready replicas. null while the endpoint is in no snapshot (just deleted).
     */
    readonly maxConcurrency: number | null;
    readonly maxConcurrencySource: 'configured' | 'derived' | null;
    readonly replicas: readonly (Omit<
      ReplicaStatus,
      'endpoint' | 'model' | 'slot' | 'revision' | 'node' | 'evicted'
    > & {
      /** Placement's node (issue 14); optional for clients reading an older control plane. */
      readonly node?: string | null;
      readonly evicted?: boolean;
    })[];
    /**
     * Which versions run and why (stable, policy variants with their weight, shadows, staged,
     * warm with its time; none: on their way out), each with its ready replicas. Always
     * set here; optional for clients reading an older control plane's answer.
     */
    readonly versions?: readonly VersionStatus[];
  };
}

export class EndpointService {
  /** Formats of served versions, by "model@version" (versions are immutable). */
  private readonly formats = new Map<string, ModelFormat>();

  /** The endpoints' traffic (a deploy that replaces the stable version changes it). */
  readonly traffic: TrafficService;

  constructor(
    private readonly registry: Registry,
    private readonly reconciler: Reconciler,
    private readonly gatewayUrl: () => string,
    private readonly clock: Clock = systemClock,
    traffic?: TrafficService,
  ) {
    this.traffic = traffic ?? new TrafficService(registry, reconciler, clock);
  }

  /**
   * `options.check`: see EndpointWriteOptions; `options.checkModel` sees the model as the
   * deploy reads it (the API's last word on who may write, with the store's).
   */
  async deploy(
    name: string,
    request: DeployRequest,
    options: EndpointWriteOptions & {
      readonly checkModel?: (model: Model) => void;
      /** Who deploys, for the endpoint's traffic history (default: the platform itself). */
      readonly actor?: string;
    } = {},
  ): Promise<{ endpoint: EndpointView; created: boolean }> {
    checkName('endpoint', name);
    if (request.version !== undefined && request.alias !== undefined) {
      throw kilnError('KILN_VALIDATION_FAILED', {
        reason: 'give either version or alias, not both',
      });
    }
    const model = await this.registry.requireModel(request.model);
    options.checkModel?.(model);
    let ref: string;
    let wanted: number | string;
    if (request.version !== undefined) [ref, wanted] = [String(request.version), request.version];
    else if (request.alias !== undefined) [ref, wanted] = [`@${request.alias}`, request.alias];
    else {
      if (model.latestVersion === null)
        throw kilnError('KILN_VERSION_NOT_FOUND', { model: model.name, version: 'latest' });
      [ref, wanted] = ['latest', model.latestVersion];
    }
    const { version } = await this.registry.trustedVersion(model.name, wanted);
    if (!servableFormats.includes(version.format)) {
      throw kilnError('KILN_FORMAT_NOT_SERVABLE', { format: version.format });
    }
    if (version.format === 'onnx' && version.schema !== null) {
      const { checkDeclaredSchema } = await import('../runtimes/onnx/check-declared-schema.ts');
      const info = version.formatInfo as { inputs?: never[]; outputs?: never[] };
      const check = checkDeclaredSchema(version.schema, {
        inputs: info.inputs ?? [],
        outputs: info.outputs ?? [],
      });
      if (!check.ok) throw kilnError('KILN_SCHEMA_MISMATCH', { reason: check.reason });
    }
    await this.checkServingConfig(version, request.config ?? {});
    const team = request.team ?? model.team;
    checkName('team', team);
    const autoscale = deployAutoscale(name, request);
    const replicas = request.replicas ?? (autoscale === null ? 1 : autoscale.startReplicas);
    const config = completeEndpointConfig(
      request.config ?? {},
      autoscale?.policy,
      deployObservability(name, request.config?.observability),
    );
    checkObservabilityFields(name, config.observability, version);
    checkDeployPlacement(name, config, version.sizeBytes, this.reconciler.placer);
    await checkPoolDeploy(this.registry.store, {
      config,
      format: version.format,
      team,
      replicas: request.replicas,
    });
    // Replacing the stable version is refused while a rollout or experiment runs on it;
    // a deploy of the same version (new replicas, new settings) is not.
    const existing = await this.registry.store.getEndpoint(name);
    if (
      existing !== null &&
      (existing.model !== model.name || existing.version !== version.version)
    ) {
      await this.traffic.checkDeployAllowed(name);
    }
    // The endpoint as the write found it, read in its transaction: what the deploy replaced.
    let before: EndpointRecord | null = null;
    const { endpoint, created } = await this.registry.store.putEndpoint(
      {
        name,
        team,
        model: model.name,
        version: version.version,
        ref,
        replicas,
        config,
      },
      {
        check: (found) => {
          before = found;
          options.check?.(found);
        },
      },
    );
    await this.traffic.recordDeploy(
      before,
      endpoint,
      options.actor ?? 'platform',
      request.warmGraceMs,
    );
    if (autoscale !== null)
      await this.deployedScale(endpoint, before, autoscale.policy, request.replicas);
    else if (before !== null && (before as EndpointRecord).config.autoscale !== undefined)
      await this.droppedScale(endpoint);
    await this.reconciler.trigger();
    return { endpoint: this.view(endpoint, version.format), created };
  }

  /**
   * An autoscaled endpoint's count at deploy: `replicas` when asked for; else on a redeploy the
   * count it runs is kept (within the new min/max) — the autoscaler's when it was autoscaled,
   * its fixed count when autoscaling starts now — and a new endpoint starts at `replicas`.
   */
  private async deployedScale(
    endpoint: EndpointRecord,
    before: EndpointRecord | null,
    policy: AutoscalePolicy,
    asked: number | undefined,
  ): Promise<void> {
    const store = this.registry.store;
    const current = await store.getEndpointScale(endpoint.name);
    const inRange = (n: number): number =>
      Math.min(policy.maxReplicas, Math.max(policy.minReplicas, n));
    const running =
      before === null
        ? null
        : before.config.autoscale !== undefined && current !== null
          ? current.replicas
          : before.replicas;
    const to = asked ?? (running === null ? endpoint.replicas : inRange(running));
    if (current !== null && current.replicas === to) return;
    await store.setEndpointScale({
      endpoint: endpoint.name,
      replicas: to,
      reason: `deployed with ${to} replicas (autoscaling ${policy.minReplicas}..${policy.maxReplicas})`,
      event: {
        endpoint: endpoint.name,
        kind: 'manual',
        from: current?.replicas ?? 0,
        to,
        mode: 'manual',
        reason: 'deploy',
      },
    });
  }

  /**
   * A redeploy without autoscaling over an autoscaled endpoint: its stored count becomes the
   * fixed one, as `kiln autoscale clear` leaves it. Left as it was (0 after scaling to zero),
   * a policy set later would be stored before its count and run that stale count in between.
   */
  private async droppedScale(endpoint: EndpointRecord): Promise<void> {
    const store = this.registry.store;
    const current = await store.getEndpointScale(endpoint.name);
    if (current === null || current.replicas === endpoint.replicas) return;
    await store.setEndpointScale({
      endpoint: endpoint.name,
      replicas: endpoint.replicas,
      reason: `deployed with ${endpoint.replicas} replicas and no autoscaling`,
      event: {
        endpoint: endpoint.name,
        kind: 'manual',
        from: current.replicas,
        to: endpoint.replicas,
        mode: 'manual',
        reason: 'deploy without autoscaling: fixed count',
      },
    });
  }

  /** Refuses (400 naming the field, or 422 for a model the engine cannot run) before storing. */
  private async checkServingConfig(
    version: ModelVersion,
    config: EndpointConfigInput,
  ): Promise<void> {
    const what = `${version.model} v${version.version}`;
    const wrongKind = checkFieldsForFormat(version.format, config, what);
    if (wrongKind !== null) throw configProblemError(wrongKind);
    if (version.format !== 'hf-llm') return;
    const llm = config.llm ?? {};
    const range = checkLlmServingConfig(llm);
    if (range !== null) throw configProblemError(range);
    const file = version.files.find((f) => f.path === 'config.json');
    const read = await readModelConfig(
      file === undefined ? null : this.registry.artifacts.artifactFile(file),
    );
    if (read === null) return; // unreadable here: the worker reports the blob's state
    if (!read.ok) throw kilnError('KILN_MODEL_NOT_SERVABLE', { model: what, reason: read.message });
    const info = version.formatInfo as { numParameters?: unknown };
    const numParameters = typeof info.numParameters === 'number' ? info.numParameters : null;
    const fit = checkLlmAgainstModel(
      resolveLlmServingConfig(llm),
      read.config,
      numParameters,
      what,
    );
    if (fit !== null) throw configProblemError(fit);
  }

  async get(name: string): Promise<EndpointView> {
    const record = await this.registry.store.getEndpoint(name);
    if (record === null) throw kilnError('KILN_ENDPOINT_NOT_FOUND', { endpoint: name });
    return this.view(record, await this.formatOf(record));
  }

  async list(): Promise<EndpointView[]> {
    const records = await this.registry.store.listEndpoints();
    const views: EndpointView[] = [];
    for (const record of records) views.push(this.view(record, await this.formatOf(record)));
    return views;
  }

  async delete(
    name: string,
    options: EndpointWriteOptions & { readonly actor?: string } = {},
  ): Promise<EndpointView> {
    const store = this.registry.store;
    // Read before: the delete aborts them in its transaction, and the history says so.
    const [rollout, experiments] = await Promise.all([
      store.getActiveRollout(name),
      store.listExperiments({ endpoint: name, state: 'running' }),
    ]);
    const record = await store.deleteEndpoint(name, options);
    if (record === null) throw kilnError('KILN_ENDPOINT_NOT_FOUND', { endpoint: name });
    // History outlives the endpoint: without this event it would end on the last deploy,
    // as if the endpoint still served.
    const ended = [
      ...(rollout === null ? [] : [`rollout ${rollout.id} aborted`]),
      ...experiments.map((e) => `experiment ${e.id} stopped`),
    ];
    await store.appendTrafficEvent({
      endpoint: name,
      actor: options.actor ?? 'platform',
      action: 'delete',
      reason: `deleted endpoint ${name}`,
      detail: {
        summary: [`endpoint deleted (was ${record.model}:${record.version})`, ...ended].join('; '),
        model: record.model,
        version: record.version,
        rollout: rollout?.id ?? null,
        experiments: experiments.map((e) => e.id),
      },
    });
    const view = this.view(record, await this.formatOf(record));
    await this.reconciler.trigger();
    return view;
  }

  /** The format of the version an endpoint serves (versions are immutable: read once). */
  private async formatOf(record: EndpointRecord): Promise<ModelFormat | null> {
    const key = `${record.model}@${record.version}`;
    const known = this.formats.get(key);
    if (known !== undefined) return known;
    const version = await this.registry.store.getVersion(record.model, record.version, {
      includeDeleted: true,
    });
    if (version === null) return null;
    this.formats.set(key, version.format);
    return version.format;
  }

  view(record: EndpointRecord, format: ModelFormat | null = null): EndpointView {
    const replicas = this.reconciler.replicaStatus(record.name);
    // Replicas of what was deployed last (model, version and worker config): during a rollout
    // the old revision's still serve, but `kiln deploy --wait` waits for the new one.
    const revision = workerRevision(record);
    const current = replicas.filter((r) => r.revision === revision && r.state !== 'stopping');
    // On a pool: served by the pool's workers that took it in their assignment.
    const pool = record.config.pool;
    // Autoscaled: the count it runs now (the autoscaler's), not the one deployed; on a pool,
    // the pool's workers.
    const running =
      pool !== undefined
        ? (this.reconciler.pools.list().find((p) => p.name === pool)?.workers ?? record.replicas)
        : record.config.autoscale === undefined
          ? record.replicas
          : (this.reconciler.runningCount(record.name) ?? record.replicas);
    const route = this.reconciler.routing.current().endpoints.find((e) => e.name === record.name);
    const readyReplicas =
      pool === undefined
        ? current.filter((r) => r.state === 'ready').length
        : (route?.replicas.length ?? 0);
    const reason =
      readyReplicas > 0
        ? null
        : pool !== undefined
          ? (this.reconciler.pools.reason(record.name) ?? `waiting for a worker of pool ${pool}`)
          : running === 0 && current.length === 0
            ? // Only a policy with minReplicas 0 gives the route an activator to wake it.
              record.config.autoscale?.minReplicas === 0
              ? 'scaled to zero (woken by its next request)'
              : 'deployed with 0 replicas (deploy with --replicas N to serve)'
            : whyNotReady(current, this.clock.now());
    return {
      ...record,
      replicas: running,
      format,
      url:
        format === 'hf-llm'
          ? `${this.gatewayUrl()}/v1`
          : `${this.gatewayUrl()}/v2/models/${record.name}`,
      status: {
        ready: readyReplicas > 0,
        readyReplicas,
        reason,
        maxConcurrency: route?.maxConcurrency ?? null,
        maxConcurrencySource: route?.maxConcurrencySource ?? null,
        replicas: replicas.map(
          ({
            id,
            version,
            state,
            url,
            pid,
            restarts,
            reason: why,
            lastFailure,
            restartAt,
            node,
            evicted,
          }) => ({
            node,
            evicted,
            id,
            version,
            state,
            url,
            pid,
            restarts,
            reason: why,
            lastFailure,
            restartAt,
          }),
        ),
        versions: this.reconciler.versionStatus(record),
      },
    };
  }
}

/**
 * Why an endpoint with no ready replica is not ready, from its current replicas, at every
 * moment of a restart cycle: a replica failing or failed (with when it starts again), else
 * one restarting after a failure (`starting (last failure: …)`), else plain `starting`.
 */
export function whyNotReady(current: readonly ReplicaStatus[], nowMs: number): string {
  const failing = current.find((r) => r.state === 'failed') ?? current.find(failingNow);
  if (failing !== undefined) {
    const why = failing.lastFailure?.reason ?? failing.reason ?? 'failed';
    const at = failing.restartAt === null ? Number.NaN : Date.parse(failing.restartAt);
    const next = Number.isNaN(at)
      ? ''
      : ` (next start in ${Math.max(0, Math.ceil((at - nowMs) / 1000))} s)`;
    return `replica ${failing.id} failed: ${why}${next}`;
  }
  // Placement found no node for it yet (issue 14): never a silent pending.
  const pending = current.find(unplaced);
  if (pending !== undefined) return `replica ${pending.id} pending: ${pending.reason ?? ''}`;
  for (const { id, lastFailure } of current) {
    if (lastFailure !== null)
      return `starting (last failure: replica ${id}: ${lastFailure.reason})`;
  }
  return current.length > 0 ? 'starting' : 'no replica yet';
}

/** Starting, but its worker has already reported a failure (it exits next). */
function failingNow(replica: ReplicaStatus): boolean {
  return (
    replica.state === 'starting' &&
    replica.reason !== null &&
    replica.lastFailure === null &&
    !unplaced(replica)
  );
}

/** Waiting for a node: not started, with placement's reason. */
function unplaced(replica: ReplicaStatus): boolean {
  return (
    replica.state === 'starting' &&
    replica.pid === null &&
    replica.reason?.startsWith('unschedulable: ') === true
  );
}

/**
 * A deploy's autoscaling policy, checked and completed (KILN_AUTOSCALE_INVALID naming the
 * field), and the count to start from: `replicas` when given, which must lie within
 * min/max; else max(1, minReplicas) (an endpoint allowed to go to zero starts with one and
 * goes there when idle). null: no policy.
 */
/** The endpoint's checked observability settings (issue 15); undefined: none asked. */
export function deployObservability(name: string, input: unknown): ObservabilityConfig | undefined {
  if (input === undefined) return undefined;
  const check = resolveObservabilityConfig(input);
  if (!check.ok)
    throw kilnError('KILN_OBSERVABILITY_INVALID', { endpoint: name, reason: check.reason });
  return check.value;
}

export function deployAutoscale(
  name: string,
  request: Pick<DeployRequest, 'config' | 'replicas'>,
): { readonly policy: AutoscalePolicy; readonly startReplicas: number } | null {
  const input = request.config?.autoscale;
  if (input === undefined) return null;
  const check = resolveEndpointPolicy(input);
  if (!check.ok)
    throw kilnError('KILN_AUTOSCALE_INVALID', { endpoint: name, reason: check.reason });
  const { policy } = check;
  const replicas = request.replicas;
  if (replicas !== undefined && (replicas < policy.minReplicas || replicas > policy.maxReplicas)) {
    throw kilnError('KILN_AUTOSCALE_INVALID', {
      endpoint: name,
      reason: `replicas ${replicas} is outside minReplicas..maxReplicas (${policy.minReplicas}..${policy.maxReplicas})`,
    });
  }
  return {
    policy,
    startReplicas: replicas ?? Math.min(policy.maxReplicas, Math.max(1, policy.minReplicas)),
  };
}
