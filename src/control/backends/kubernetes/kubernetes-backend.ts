// The Kubernetes backend: the reconciler's replicas as pods of one Deployment per revision.
//
//   reconciler ─ start(launch) ─► slot of revision R ─► Deployment kiln-<endpoint>-<rev8>
//                                                        replicas = live slots of R
//              ◄─ listening/ready/failed/exited ── watches: Pods, Deployments, EndpointSlices
//
// The objects come from the renderer (render.ts, given as `render`) and are applied with
// server-side apply under the field manager `kiln`; starts and stops within one pass of the
// reconciler are gathered (applyDelayMs) into one apply of the replica count. Pods are
// fungible to a Deployment, so slots take pods as they appear: a slot keeps its pod until the
// pod goes; a pod whose EndpointSlice address is ready makes its slot `listening` at
// http://podIP:port, then `ready` once the worker's metadata answers (or at once when the
// revision's schema is known). A pod that will not run (ImagePullBackOff, CrashLoopBackOff,
// OOMKilled, Unschedulable: the scheduler's message) keeps its slot starting with that reason
// (`failed` events: Kubernetes retries on its own backoff; the reconciler's start timeout
// still applies), so `kiln endpoints show` names it. A slot whose pod was serving and stops
// (deleted, evicted, not ready any more) is `failed` then `exited`, as a crashed local worker:
// the reconciler restarts it with its backoff.
//
// Stopping a slot marks its pod cheapest to delete (controller.kubernetes.io/pod-deletion-cost)
// and scales the Deployment down: the ReplicaSet removes that pod, whose termination drains
// (preStop and grace period: render.ts). A revision left with no slot for removeAfterMs has
// its objects deleted. Apply failures (403, a missing namespace) become the slots' reasons
// and are retried with backoff: never an exception out of the backend.

import type { KubeObject } from './kube-object.ts';
import type { Backend, ReplicaEvent, ReplicaHandle, ReplicaLaunch } from '../backend.ts';
import type { ModelSchema } from '../../../core/tensor.ts';
import {
  deploymentsCollection,
  endpointSlicesCollection,
  podsCollection,
  type KubeApi,
  type KubeApiError,
  type KubeItem,
} from './kube-api.ts';
import { ResumableWatch } from './resumable-watch.ts';
import { kilnError } from '../../../core/errors.ts';
import {
  deploymentProblem,
  isTerminating,
  matchesLabels,
  podProblem,
  readyPodUrls,
} from './pod-status.ts';

/** The objects of the launch's revision (render.ts: Deployment, Service, PDB, autoscaler). */
export type RenderRevision = (
  launch: ReplicaLaunch,
) => readonly KubeObject[] | Promise<readonly KubeObject[]>;

export interface KubernetesBackendOptions {
  readonly api: KubeApi;
  readonly render: RenderRevision;
  /** Starts and stops within this long are one apply (default 50 ms). */
  readonly applyDelayMs?: number;
  /** A revision with no slot keeps its objects this long, for a restart (default 30 s). */
  readonly removeAfterMs?: number;
  /** First retry of a failed apply (doubling to 30 s; default 1 s), and the watches'. */
  readonly retryMs?: number;
  /** How often a listening pod's worker is asked for its metadata (default 500 ms). */
  readonly probeIntervalMs?: number;
  /**
   * For this long after init, a Deployment keeps at least the replicas it had when found
   * (default 15 s): a control plane taking over starts its slots one by one, and must not
   * scale the running data plane down meanwhile. Scale ups apply at once.
   */
  readonly adoptGraceMs?: number;
  readonly log?: (message: string) => void;
}

/** Pods, Deployments and Services Kiln renders carry this label (render.ts). */
export const managedSelector = 'app.kubernetes.io/managed-by=kiln';
const deletionCostAnnotation = 'controller.kubernetes.io/pod-deletion-cost';

interface Slot {
  readonly launch: ReplicaLaunch;
  readonly onEvent: (event: ReplicaEvent) => void;
  readonly revision: Revision;
  /** Counted in the Deployment's replicas (false once stopped or lost). */
  live: boolean;
  pod: string | null;
  /** The url `listening` was reported with (null: not yet). */
  url: string | null;
  ready: boolean;
  /** The reason last reported by `failed` (not repeated). */
  reason: string | null;
  /** Resolves stop(): the pod is gone. */
  gone: (() => void) | null;
}

/** A revision's objects as rendered, and what the backend reads of them. */
interface Rendered {
  readonly objects: readonly KubeObject[];
  readonly deployment: KubeObject;
  readonly selector: Readonly<Record<string, string>>;
  readonly service: string | null;
  /** The Deployment leaves its count to an HPA / ScaledObject (render.ts): never set here. */
  readonly autoscaled: boolean;
}

interface Revision {
  readonly key: string;
  /** What it is rendered from (its first slot's launch). */
  readonly launch: ReplicaLaunch;
  /** Null until the first apply renders it. */
  rendered: Rendered | null;
  readonly slots: Set<Slot>;
  /** Pods of stopped slots, marked cheapest to delete before the next scale down. */
  leaving: string[];
  /** Every object applied once (after that only the replica count changes). */
  created: boolean;
  appliedReplicas: number | null;
  /** The replicas its Deployment had when first applied by this backend (adoption grace). */
  foundReplicas: number | null;
  applyProblem: string | null;
  failures: number;
  timer: NodeJS.Timeout | null;
  removeTimer: NodeJS.Timeout | null;
  running: Promise<void> | null;
  dirty: boolean;
}

const maxRetryMs = 30_000;
const probeTimeoutMs = 2_000;

export class KubernetesBackend implements Backend {
  readonly kind = 'kubernetes' as const;
  private readonly revisions = new Map<string, Revision>();
  private readonly watches: {
    pods: ResumableWatch;
    deployments: ResumableWatch;
    slices: ResumableWatch;
  };
  private readonly problems = new Map<string, string>();
  private recomputeQueued = false;
  private closed = false;
  /** Stops leave the pods running (the platform shuts down; the data plane stays). */
  private retained = false;
  private adoptUntilMs = 0;

  constructor(private readonly options: KubernetesBackendOptions) {
    const watch = (collection: typeof podsCollection, labelSelector: string): ResumableWatch =>
      new ResumableWatch({
        api: options.api,
        collection,
        labelSelector,
        retryMs: options.retryMs ?? 1_000,
        onChange: () => this.queueRecompute(),
        onProblem: (problem) => this.watchProblem(collection.plural, problem),
      });
    this.watches = {
      pods: watch(podsCollection, managedSelector),
      deployments: watch(deploymentsCollection, managedSelector),
      // Slices carry their Service's name (and its labels only on newer clusters): all of them.
      slices: watch(endpointSlicesCollection, 'kubernetes.io/service-name'),
    };
  }

  /** The namespace every object goes to. */
  get namespace(): string {
    return this.options.api.namespace;
  }

  /** How often each watch listed and resumed (tests, diagnostics). */
  watchCounts(): Record<'pods' | 'deployments' | 'slices', { lists: number; resumes: number }> {
    const counts = (w: ResumableWatch) => ({ lists: w.lists, resumes: w.resumes });
    return {
      pods: counts(this.watches.pods),
      deployments: counts(this.watches.deployments),
      slices: counts(this.watches.slices),
    };
  }

  /**
   * Checks the namespace exists and that the kubeconfig may list what the backend watches
   * (a clear KubeApiError otherwise: `kiln up` refuses to start), then starts watching.
   */
  async init(): Promise<void> {
    try {
      await this.options.api.checkNamespace();
      for (const [collection, selector] of [
        [podsCollection, managedSelector],
        [deploymentsCollection, managedSelector],
        [endpointSlicesCollection, 'kubernetes.io/service-name'],
      ] as const) {
        await this.options.api.list(collection, selector);
      }
    } catch (error) {
      throw kilnError('KILN_KUBERNETES_UNAVAILABLE', { reason: (error as Error).message });
    }
    for (const watch of Object.values(this.watches)) watch.start();
    await Promise.all(Object.values(this.watches).map((w) => w.whenSynced()));
    this.adoptUntilMs = Date.now() + (this.options.adoptGraceMs ?? 15_000);
  }

  start(launch: ReplicaLaunch, onEvent: (event: ReplicaEvent) => void): ReplicaHandle {
    const revision = this.revisionOf(launch);
    const slot: Slot = {
      launch,
      onEvent,
      revision,
      live: true,
      pod: null,
      url: null,
      ready: false,
      reason: null,
      gone: null,
    };
    revision.slots.add(slot);
    this.schedule(revision);
    return {
      id: launch.replicaId,
      pid: null,
      stop: (graceMs) => this.stopSlot(slot, graceMs),
    };
  }

  /**
   * From now on a stop leaves its pod running and the Deployment as it is: the control plane
   * is shutting down (a rolling update, a leader handing over), not the endpoint. Called
   * before the reconciler's close, which stops every replica.
   */
  retain(): void {
    this.retained = true;
  }

  async close(): Promise<void> {
    // Scale downs asked for and not yet applied go out first.
    for (const revision of this.revisions.values()) {
      if (revision.timer !== null) {
        clearTimeout(revision.timer);
        revision.timer = null;
        this.run(revision);
      }
    }
    await Promise.all(
      [...this.revisions.values()].flatMap((r) => (r.running === null ? [] : [r.running])),
    );
    this.closed = true;
    for (const revision of this.revisions.values()) {
      if (revision.timer !== null) clearTimeout(revision.timer);
      if (revision.removeTimer !== null) clearTimeout(revision.removeTimer);
    }
    for (const watch of Object.values(this.watches)) watch.close();
    for (const revision of this.revisions.values())
      for (const slot of revision.slots) slot.gone?.();
  }

  private revisionOf(launch: ReplicaLaunch): Revision {
    const found = this.revisions.get(launch.revision);
    if (found !== undefined) return found;
    const revision: Revision = {
      key: launch.revision,
      launch,
      rendered: null,
      slots: new Set(),
      leaving: [],
      created: false,
      appliedReplicas: null,
      foundReplicas: null,
      applyProblem: null,
      failures: 0,
      timer: null,
      removeTimer: null,
      running: null,
      dirty: false,
    };
    this.revisions.set(launch.revision, revision);
    return revision;
  }

  /** The revision's objects, rendered once (a render that fails is an apply problem). */
  private async rendered(revision: Revision): Promise<Rendered> {
    if (revision.rendered !== null) return revision.rendered;
    const objects = await this.options.render(revision.launch);
    const deployment = objects.find((o) => o.kind === 'Deployment');
    if (deployment === undefined)
      throw new Error(`the rendered objects of revision ${revision.key} hold no Deployment`);
    const spec = deployment.spec as {
      replicas?: number;
      selector?: { matchLabels?: Record<string, string> };
    };
    const selector = spec.selector?.matchLabels;
    if (selector === undefined || Object.keys(selector).length === 0)
      throw new Error(`Deployment ${deployment.metadata.name} has no selector.matchLabels`);
    revision.rendered = {
      objects,
      deployment,
      selector,
      service: objects.find((o) => o.kind === 'Service')?.metadata.name ?? null,
      autoscaled: spec.replicas === undefined,
    };
    return revision.rendered;
  }

  private liveSlots(revision: Revision): Slot[] {
    return [...revision.slots].filter((s) => s.live).sort((a, b) => a.launch.slot - b.launch.slot);
  }

  private async stopSlot(slot: Slot, graceMs: number): Promise<void> {
    const revision = slot.revision;
    const pod = slot.pod;
    if (this.retained) {
      slot.live = false;
      revision.slots.delete(slot);
      slot.onEvent({ kind: 'exited', code: 0, signal: null });
      return;
    }
    if (slot.live) {
      slot.live = false;
      if (pod !== null) revision.leaving.push(pod);
      this.schedule(revision);
    }
    if (pod !== null && !this.closed && this.podPresent(pod)) {
      // Gone when the watch no longer sees it (or has it terminating past the grace).
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, graceMs + 5_000);
        timer.unref();
        slot.gone = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    revision.slots.delete(slot);
    slot.onEvent({ kind: 'exited', code: 0, signal: null });
  }

  private podPresent(name: string): boolean {
    return this.watches.pods.items.has(name);
  }

  /** Applies the revision's replica count soon (gathering the starts and stops of one pass). */
  private schedule(revision: Revision, delayMs = this.options.applyDelayMs ?? 50): void {
    if (this.closed || revision.timer !== null) return;
    revision.timer = setTimeout(() => {
      revision.timer = null;
      this.run(revision);
    }, delayMs);
  }

  private run(revision: Revision): void {
    if (revision.running !== null) {
      revision.dirty = true;
      return;
    }
    revision.running = this.apply(revision).finally(() => {
      revision.running = null;
      if (revision.dirty && !this.closed) {
        revision.dirty = false;
        this.run(revision);
      }
    });
  }

  private async apply(revision: Revision): Promise<void> {
    const api = this.options.api;
    const live = this.liveSlots(revision).length;
    try {
      const rendered = await this.rendered(revision);
      const replicas = Math.max(live, this.adoptFloor(revision, rendered));
      for (const pod of revision.leaving.splice(0)) await this.markCheapest(pod);
      if (replicas > 0 && revision.removeTimer !== null) {
        clearTimeout(revision.removeTimer);
        revision.removeTimer = null;
      }
      const deployment = rendered.autoscaled
        ? rendered.deployment
        : withReplicas(rendered.deployment, replicas);
      if (!revision.created) {
        if (replicas === 0) return this.scheduleRemoval(revision);
        for (const object of rendered.objects)
          await api.apply(object === rendered.deployment ? deployment : object);
        revision.created = true;
      } else if (revision.appliedReplicas !== replicas && !rendered.autoscaled) {
        await api.apply(deployment);
      }
      revision.appliedReplicas = replicas;
      revision.failures = 0;
      revision.applyProblem = null;
      if (replicas === 0) this.scheduleRemoval(revision);
      // Held up by the adoption grace: scaled to the live count once it has passed.
      if (replicas > live) this.schedule(revision, Math.max(0, this.adoptUntilMs - Date.now()));
    } catch (error) {
      const message = (error as Error).message;
      const name = revision.rendered?.deployment.metadata.name;
      const { endpoint, model, version } = revision.launch;
      revision.failures += 1;
      revision.applyProblem =
        name === undefined
          ? `could not render endpoint ${endpoint} (${model} v${version}) for Kubernetes: ${message}`
          : `could not apply ${name}: ${message}`;
      this.options.log?.(revision.applyProblem);
      const retryMs = Math.min(
        maxRetryMs,
        (this.options.retryMs ?? 1_000) * 2 ** (revision.failures - 1),
      );
      this.schedule(revision, retryMs);
    }
    this.queueRecompute();
  }

  /** The replicas a Deployment found running keeps during the adoption grace (else 0). */
  private adoptFloor(revision: Revision, rendered: Rendered): number {
    if (rendered.autoscaled || Date.now() >= this.adoptUntilMs) return 0;
    if (revision.foundReplicas === null) {
      const found = this.watches.deployments.items.get(rendered.deployment.metadata.name);
      const replicas = (found?.spec as { replicas?: unknown } | undefined)?.replicas;
      revision.foundReplicas = typeof replicas === 'number' ? replicas : 0;
    }
    return revision.foundReplicas;
  }

  /** The ReplicaSet deletes the pod with the lowest deletion cost first on a scale down. */
  private async markCheapest(pod: string): Promise<void> {
    if (!this.podPresent(pod)) return;
    try {
      await this.options.api.apply({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: pod, annotations: { [deletionCostAnnotation]: '-1000' } },
      });
    } catch (error) {
      // Without the right (patch pods) the ReplicaSet picks the pod: still a scale down.
      this.options.log?.(
        `could not mark pod ${pod} for the scale down: ${(error as Error).message}`,
      );
    }
  }

  private scheduleRemoval(revision: Revision): void {
    if (revision.removeTimer !== null || this.closed) return;
    revision.removeTimer = setTimeout(() => {
      revision.removeTimer = null;
      if (this.liveSlots(revision).length > 0 || this.closed) return;
      this.revisions.delete(revision.key);
      void this.remove(revision);
    }, this.options.removeAfterMs ?? 30_000);
    revision.removeTimer.unref();
  }

  /** Deletes the revision's objects (dependents first: autoscaler, PDB, Service, Deployment). */
  private async remove(revision: Revision): Promise<void> {
    if (!revision.created || revision.rendered === null) return;
    for (const object of [...revision.rendered.objects].reverse()) {
      try {
        await this.options.api.remove(object);
      } catch (error) {
        this.options.log?.(
          `could not delete ${object.kind} ${object.metadata.name}: ${(error as Error).message}`,
        );
      }
    }
  }

  private watchProblem(what: string, problem: KubeApiError | null): void {
    if (problem === null) this.problems.delete(what);
    else {
      this.problems.set(what, problem.message);
      this.options.log?.(`watching ${what}: ${problem.message}`);
    }
    this.queueRecompute();
  }

  private queueRecompute(): void {
    if (this.recomputeQueued || this.closed) return;
    this.recomputeQueued = true;
    setImmediate(() => {
      this.recomputeQueued = false;
      if (!this.closed) this.recompute();
    });
  }

  /** Reads the watched state into every slot's events. */
  private recompute(): void {
    const pods = this.watches.pods.items;
    for (const revision of this.revisions.values()) {
      const rendered = revision.rendered;
      if (rendered === null) {
        for (const slot of this.liveSlots(revision))
          if (revision.applyProblem !== null) this.fail(slot, revision.applyProblem);
        continue;
      }
      for (const slot of revision.slots)
        if (!slot.live && slot.pod !== null && !pods.has(slot.pod)) slot.gone?.();
      const ours = [...pods.values()].filter(
        (p) => matchesLabels(p.metadata.labels, rendered.selector) && !isTerminating(p),
      );
      const byName = new Map(ours.map((p) => [p.metadata.name, p]));
      const urls =
        rendered.service === null
          ? new Map<string, string>()
          : readyPodUrls(this.watches.slices.items.values(), rendered.service);
      const live = this.liveSlots(revision);
      for (const slot of live) {
        if (slot.pod === null || byName.has(slot.pod)) continue;
        if (slot.url !== null) this.lose(slot, `pod ${slot.pod} is gone`);
        else slot.pod = null;
      }
      const taken = new Set(live.map((s) => s.pod));
      const free = ours
        .filter((p) => !taken.has(p.metadata.name))
        .sort((a, b) => rank(a, urls) - rank(b, urls) || created(a).localeCompare(created(b)));
      for (const slot of this.liveSlots(revision)) {
        if (slot.pod === null) slot.pod = free.shift()?.metadata.name ?? null;
        this.report(slot, slot.pod === null ? null : (byName.get(slot.pod) ?? null), urls);
      }
    }
  }

  private report(slot: Slot, pod: KubeItem | null, urls: ReadonlyMap<string, string>): void {
    const revision = slot.revision;
    if (pod === null) {
      const name = revision.rendered?.deployment.metadata.name;
      const deployment = name === undefined ? undefined : this.watches.deployments.items.get(name);
      const problem =
        revision.applyProblem ??
        (deployment === undefined ? null : deploymentProblem(deployment)) ??
        this.problems.get('pods') ??
        null;
      if (problem !== null) this.fail(slot, problem);
      return;
    }
    const url = urls.get(pod.metadata.name);
    if (url !== undefined) {
      if (slot.url === url) return;
      slot.url = url;
      slot.onEvent({ kind: 'listening', url, socketPath: null });
      void this.probe(slot, url);
      return;
    }
    const problem = podProblem(pod);
    if (slot.url !== null) this.lose(slot, problem ?? `pod ${pod.metadata.name} is not ready`);
    else if (problem !== null) this.fail(slot, problem);
  }

  private fail(slot: Slot, reason: string): void {
    if (slot.reason === reason) return;
    slot.reason = reason;
    slot.onEvent({ kind: 'failed', reason });
  }

  /** A slot whose pod was serving and is not any more: exited, as a crashed worker. */
  private lose(slot: Slot, reason: string): void {
    slot.live = false;
    slot.ready = false;
    slot.revision.slots.delete(slot);
    if (slot.pod !== null) slot.revision.leaving.push(slot.pod);
    slot.onEvent({ kind: 'failed', reason });
    slot.onEvent({ kind: 'exited', code: null, signal: null });
    this.schedule(slot.revision);
  }

  /** `ready` once the worker answers its metadata (or at once with the revision's schema). */
  private async probe(slot: Slot, url: string): Promise<void> {
    const current = (): boolean => slot.live && slot.url === url && !this.closed;
    while (current()) {
      const schema = slot.launch.schema ?? (await metadataOf(url, slot.launch.endpoint));
      if (!current()) return;
      if (schema !== null) {
        slot.ready = true;
        slot.reason = null;
        slot.onEvent({ kind: 'ready', schema, memoryBytes: 0, featureNames: null });
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, this.options.probeIntervalMs ?? 500));
    }
  }
}

function withReplicas(deployment: KubeObject, replicas: number): KubeObject {
  const spec = (deployment.spec ?? {}) as Record<string, unknown>;
  return { ...deployment, spec: { ...spec, replicas } };
}

/** Ready pods first, then pods that are merely starting, then troubled ones. */
function rank(pod: KubeItem, urls: ReadonlyMap<string, string>): number {
  if (urls.has(pod.metadata.name)) return 0;
  return podProblem(pod) === null ? 1 : 2;
}

function created(pod: KubeItem): string {
  const at = (pod.metadata as { creationTimestamp?: unknown }).creationTimestamp;
  return typeof at === 'string' ? at : '';
}

/** The model's schema from the worker's v2 metadata route; null while it does not answer. */
async function metadataOf(url: string, endpoint: string): Promise<ModelSchema | null> {
  try {
    const response = await fetch(`${url}/v2/models/${encodeURIComponent(endpoint)}`, {
      signal: AbortSignal.timeout(probeTimeoutMs),
    });
    if (response.status !== 200) {
      await response.arrayBuffer();
      return null;
    }
    const body = (await response.json()) as ModelSchema;
    return { inputs: body.inputs, outputs: body.outputs };
  } catch {
    return null;
  }
}
