// Drives canary and blue-green rollouts (issue 13). All state is in the store: every tick
// (each second) reads the active rollouts and acts on what it finds, so a control plane
// started on the same home carries on whatever the last one left running.
//
//   tick, per active rollout:  read (record, traffic, replicas, the step's analysis)
//                              ─► rollout-plan.ts decides (pure)
//                              ─► rollout-changes.ts says what changes ─► TrafficService.change
//   operations (the API):      start, pause, resume, promote, abort, status
//
// Every change goes through TrafficService.change (store transaction + history event + a
// new routing snapshot) with the traffic revision read, and every operation on one process
// runs one at a time, so a tick never undoes a user's pause or abort.

import { randomBytes } from 'node:crypto';
import { systemClock, type Clock } from '../../core/clock.ts';
import { isKilnError, kilnError } from '../../core/errors.ts';
import type { Store } from '../../store/store.ts';
import type { EndpointRecord } from '../../store/serving-records.ts';
import type {
  EndpointTrafficRecord,
  RolloutRecord,
  TrafficChange,
  VersionRef,
} from '../../store/traffic-records.ts';
import { versionKey } from '../../store/traffic-records.ts';
import { analyzeCanaryStep, type VersionObservations } from '../../traffic/canary-analysis.ts';
import type { CanaryVerdict } from '../../traffic/canary-reason.ts';
import type { GoldenRunner } from './golden-check.ts';
import { emptyVersionObservations, nextBucketStart } from './observation-reader.ts';
import { defaultWarmGraceMs } from './traffic-service.ts';
import {
  completeChange,
  endChange,
  holdChange,
  sameVersion,
  startChange,
  stepChange,
  type Transition,
} from './rollout-changes.ts';
import {
  advanceTo,
  decideGolden,
  decideStarting,
  decideCanaryDown,
  decideStep,
  type ReplicaView,
  type RolloutDecision,
} from './rollout-plan.ts';
import {
  resolveRolloutSpec,
  rolloutProblemsError,
  type RolloutStartRequest,
} from './rollout-spec.ts';

/** What the controller reads of the gateways' merged reports (TrafficService in the platform). */
export interface ObservationSource {
  observationsSince(
    endpoint: string,
    sinceMs: number,
  ): Promise<{ readonly primary: ReadonlyMap<string, VersionObservations> }>;
}

/** Where the controller sees replicas (the reconciler). */
export interface ReplicaSource {
  replicaStatus(endpoint: string): readonly ReplicaView[];
}

/** The one door to traffic state (TrafficService). */
export interface TrafficWriter {
  change(endpoint: string, change: TrafficChange): Promise<EndpointTrafficRecord>;
  /** Refuses versions a policy could not name (untrusted, not servable, another protocol). */
  checkVersions(endpoint: EndpointRecord, versions: readonly VersionRef[]): Promise<void>;
}

export interface RolloutControllerOptions {
  readonly store: Store;
  readonly traffic: TrafficWriter;
  readonly observations: ObservationSource;
  readonly replicas: ReplicaSource;
  readonly golden: GoldenRunner;
  readonly clock?: Clock;
  /** How long a version that left the stable position stays warm (TrafficService's). */
  readonly warmGraceMs?: number;
  /** A canary or candidate whose replicas are not all ready by then is rolled back. */
  readonly readyTimeoutMs?: number;
  readonly tickMs?: number;
  readonly log?: (message: string) => void;
}

export { blueGreenActor, rolloutActor } from './rollout-plan.ts';
export const defaultReadyTimeoutMs = 10 * 60_000;

/** A rollout as `kiln rollout status` shows it: the record and the step's live analysis. */
export interface RolloutView {
  readonly rollout: RolloutRecord;
  /** The current step's canary percent (0 while starting). */
  readonly percent: number;
  /** The analysis of the current step now (null while starting or once finished). */
  readonly analysis: CanaryVerdict | null;
  /** Milliseconds of the step's interval still to run (null when not running). */
  readonly stepRemainingMs: number | null;
  /**
   * ISO 8601: where the analysis's window starts (the step's first whole 10 s bucket), so a
   * status that says "too few requests" also says since when they count; null without one.
   */
  readonly analysisSince: string | null;
}

export class RolloutController {
  private readonly clock: Clock;
  private readonly log: (message: string) => void;
  private timer: NodeJS.Timeout | null = null;
  private queue: Promise<unknown> = Promise.resolve();
  /** Rollouts whose tick failed, by id → message: logged once, not every second. */
  private readonly failing = new Map<string, string>();

  constructor(private readonly options: RolloutControllerOptions) {
    this.clock = options.clock ?? systemClock;
    this.log = options.log ?? (() => undefined);
  }

  start(): void {
    if (this.timer !== null) return;
    // A tick that outlasts the period (a golden set against a slow replica) is not queued
    // again behind itself: the next one starts after it.
    let ticking = false;
    const run = (): void => {
      if (ticking) return;
      ticking = true;
      void this.tick().finally(() => (ticking = false));
    };
    this.timer = setInterval(run, this.options.tickMs ?? 1000);
    this.timer.unref();
    run();
  }

  async close(): Promise<void> {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    await this.queue.catch(() => undefined);
  }

  /** One operation at a time on this process: ticks and API calls never interleave. */
  private exclusive<T>(work: () => Promise<T>): Promise<T> {
    const run = this.queue.then(work, work);
    this.queue = run.catch(() => undefined);
    return run;
  }

  // --- operations (the API) ---------------------------------------------------------------

  async startRollout(
    endpoint: string,
    request: RolloutStartRequest,
    actor: string,
  ): Promise<RolloutRecord> {
    const resolved = resolveRolloutSpec(request);
    if (!resolved.ok) throw rolloutProblemsError(resolved.problems);
    const spec = resolved.spec;
    return this.exclusive(async () => {
      const store = this.options.store;
      const record = await store.getEndpoint(endpoint);
      if (record === null) throw kilnError('KILN_ENDPOINT_NOT_FOUND', { endpoint });
      const version = await store.getVersion(request.model, request.version);
      if (version === null)
        throw kilnError('KILN_VERSION_NOT_FOUND', {
          model: request.model,
          version: request.version,
        });
      // The canary becomes part of the endpoint's policy: the checks a policy gets.
      await this.options.traffic.checkVersions(record, [request]);
      const active = await store.getActiveRollout(endpoint);
      if (active !== null)
        throw kilnError('KILN_ROLLOUT_IN_PROGRESS', {
          endpoint,
          rollout: active.id,
          state: active.state,
        });
      const [experiment] = await store.listExperiments({ endpoint, state: 'running' });
      if (experiment !== undefined)
        throw kilnError('KILN_EXPERIMENT_IN_PROGRESS', {
          endpoint,
          experiment: experiment.id,
          reason: 'a rollout cannot start while it runs',
        });
      const baseline = { model: record.model, version: record.version };
      const canary = { model: request.model, version: request.version };
      if (sameVersion(baseline, canary))
        throw kilnError('KILN_VALIDATION_FAILED', {
          reason: `${versionKey(canary)} is already the stable version of endpoint ${endpoint}`,
        });
      const traffic = await store.getEndpointTraffic(endpoint);
      const id = `ro_${randomBytes(6).toString('hex')}`;
      const what =
        spec.strategy === 'blue-green' ? 'blue-green' : `canary ${spec.steps.join(',')} %`;
      await this.options.traffic.change(
        endpoint,
        startChange(
          {
            id,
            endpoint,
            strategy: spec.strategy,
            baseline,
            canary,
            steps: spec.steps,
            stepIndex: -1,
            intervalMs: spec.intervalMs,
            thresholds: spec.thresholds,
            sliceKey: spec.sliceKey,
            slicePath: spec.slicePath,
            state: 'starting',
            stepStartedAt: null,
            createdBy: actor,
          },
          traffic,
          request.reason ?? `${what}: ${versionKey(baseline)} → ${versionKey(canary)}`,
        ),
      );
      return this.requireRollout(id);
    });
  }

  pause(endpoint: string, actor: string, reason?: string): Promise<RolloutRecord> {
    return this.onActive(endpoint, 'pause', async (rollout, traffic) => {
      if (rollout.state === 'paused') return rollout;
      const now = this.clock.now();
      await this.write(
        rollout,
        holdChange(
          this.transition(rollout, traffic, actor, reason ?? `paused by ${actor}`),
          'rollout-pause',
          {
            state: 'paused',
            pausedAt: new Date(now).toISOString(),
          },
        ),
      );
      return this.requireRollout(rollout.id);
    });
  }

  resume(endpoint: string, actor: string, reason?: string): Promise<RolloutRecord> {
    return this.onActive(endpoint, 'resume', async (rollout, traffic) => {
      if (rollout.state !== 'paused') return rollout;
      const now = this.clock.now();
      // The step's clock stood still while paused: its interval counts running time only.
      const pausedMs =
        rollout.pausedAt === null ? 0 : Math.max(0, now - Date.parse(rollout.pausedAt));
      const stepStartedAt =
        rollout.stepStartedAt === null
          ? null
          : new Date(Date.parse(rollout.stepStartedAt) + pausedMs).toISOString();
      await this.write(
        rollout,
        holdChange(
          this.transition(rollout, traffic, actor, reason ?? `resumed by ${actor}`),
          'rollout-resume',
          {
            state: rollout.stepIndex < 0 ? 'starting' : 'running',
            pausedAt: null,
            stepStartedAt,
          },
        ),
      );
      return this.requireRollout(rollout.id);
    });
  }

  /** The next step now, without waiting for the interval or the analysis. */
  promote(endpoint: string, actor: string, reason?: string): Promise<RolloutRecord> {
    return this.onActive(endpoint, 'promote', async (rollout, traffic) => {
      if (rollout.stepIndex < 0)
        throw kilnError('KILN_ROLLOUT_IN_PROGRESS', {
          endpoint,
          rollout: rollout.id,
          state: `${rollout.state}: the replicas of ${versionKey(rollout.canary)} are not all ready yet, nothing to promote`,
        });
      const why = reason ?? `promoted by ${actor}`;
      await this.apply(rollout, traffic, advanceTo(rollout, rollout.stepIndex + 1, actor, why));
      return this.requireRollout(rollout.id);
    });
  }

  abort(endpoint: string, actor: string, reason?: string): Promise<RolloutRecord> {
    return this.onActive(endpoint, 'abort', async (rollout, traffic) => {
      const why = reason ?? `aborted by ${actor}`;
      await this.write(
        rollout,
        endChange(this.transition(rollout, traffic, actor, why), 'aborted', 'rollout-abort'),
      );
      return this.requireRollout(rollout.id);
    });
  }

  /** The endpoint's active rollout, else its latest; null when it never had one. */
  async status(endpoint: string): Promise<RolloutView | null> {
    const store = this.options.store;
    const rollout =
      (await store.getActiveRollout(endpoint)) ??
      (await store.listRollouts({ endpoint }))[0] ??
      null;
    return rollout === null ? null : this.view(rollout);
  }

  async view(rollout: RolloutRecord): Promise<RolloutView> {
    const now = this.clock.now();
    const percent = rollout.stepIndex < 0 ? 0 : (rollout.steps[rollout.stepIndex] ?? 0);
    const judging =
      (rollout.state === 'running' || rollout.state === 'paused') && rollout.stepStartedAt !== null;
    const analysis = judging ? await this.analyze(rollout) : null;
    let stepRemainingMs: number | null = null;
    if (rollout.state === 'running' && rollout.stepStartedAt !== null)
      stepRemainingMs = Math.max(0, Date.parse(rollout.stepStartedAt) + rollout.intervalMs - now);
    const analysisSince = judging ? new Date(this.analysisStartMs(rollout)).toISOString() : null;
    return { rollout, percent, analysis, stepRemainingMs, analysisSince };
  }

  private onActive(
    endpoint: string,
    action: string,
    work: (rollout: RolloutRecord, traffic: EndpointTrafficRecord | null) => Promise<RolloutRecord>,
  ): Promise<RolloutRecord> {
    return this.exclusive(async () => {
      const store = this.options.store;
      if ((await store.getEndpoint(endpoint)) === null)
        throw kilnError('KILN_ENDPOINT_NOT_FOUND', { endpoint });
      // Traffic first: a rollout changed after this read has moved the revision too.
      const traffic = await store.getEndpointTraffic(endpoint);
      const rollout = await store.getActiveRollout(endpoint);
      if (rollout === null) throw kilnError('KILN_NO_ACTIVE_ROLLOUT', { endpoint, action });
      return work(rollout, traffic);
    });
  }

  // --- the loop ---------------------------------------------------------------------------

  /** One pass over every active rollout; resolves when done (tests call it directly). */
  tick(): Promise<void> {
    return this.exclusive(async () => {
      const active = await this.options.store.listRollouts({ active: true });
      for (const listed of active) {
        try {
          const traffic = await this.options.store.getEndpointTraffic(listed.endpoint);
          const rollout = await this.options.store.getRollout(listed.id);
          if (rollout === null) continue;
          await this.step(rollout, traffic);
          this.failing.delete(rollout.id);
        } catch (error) {
          // A conflict (someone else wrote meanwhile) is retried next tick; anything else is
          // logged once per rollout and retried too: state is in the store, nothing is lost.
          const message = error instanceof Error ? error.message : String(error);
          const conflict = isKilnError(error) && error.code === 'KILN_TRAFFIC_CONFLICT';
          if (!conflict && this.failing.get(listed.id) !== message) {
            this.failing.set(listed.id, message);
            this.log(`rollout ${listed.id} on ${listed.endpoint}: ${message}`);
          }
        }
      }
    });
  }

  private async step(rollout: RolloutRecord, traffic: EndpointTrafficRecord | null): Promise<void> {
    const now = this.clock.now();
    let decision: RolloutDecision;
    if (rollout.state === 'starting') {
      const endpoint = await this.options.store.getEndpoint(rollout.endpoint);
      if (endpoint === null) return; // deleted: the store aborted the rollout with it
      decision = decideStarting(
        rollout,
        this.options.replicas.replicaStatus(rollout.endpoint),
        endpoint.replicas,
        now,
        this.options.readyTimeoutMs ?? defaultReadyTimeoutMs,
      );
      if (decision.kind === 'check-golden') {
        const { canary } = rollout;
        const golden = await this.options.store.getGoldenSet(canary.model, canary.version);
        const outcome =
          golden === null
            ? null
            : await this.options.golden(decision.url, rollout.endpoint, golden);
        decision = decideGolden(rollout, outcome, decision.readyReplicas);
      }
    } else if (rollout.stepIndex < 0 || rollout.stepStartedAt === null) {
      return; // paused while starting: nothing runs yet
    } else {
      decision =
        decideCanaryDown(rollout, this.options.replicas.replicaStatus(rollout.endpoint)) ??
        decideStep(rollout, await this.analyze(rollout), now);
    }
    await this.apply(rollout, traffic, decision);
  }

  /** Writes what a decision says (one TrafficService.change), or nothing for 'hold'. */
  private async apply(
    rollout: RolloutRecord,
    traffic: EndpointTrafficRecord | null,
    decision: RolloutDecision,
  ): Promise<void> {
    if (decision.kind === 'hold' || decision.kind === 'check-golden') return;
    const transition: Transition = {
      ...this.transition(rollout, traffic, decision.actor, decision.reason),
      ...(decision.analysis === undefined ? {} : { analysis: decision.analysis }),
    };
    switch (decision.kind) {
      case 'end':
        return this.write(rollout, endChange(transition, 'rolled-back', decision.action));
      case 'step':
        return this.write(rollout, stepChange(transition, decision.index));
      case 'complete': {
        const action = rollout.strategy === 'blue-green' ? 'blue-green-switch' : 'rollout-complete';
        return this.write(rollout, completeChange(transition, this.warmUntil(), action));
      }
    }
  }

  /**
   * From the first whole bucket of the step: the bucket it began in may hold requests of a
   * canary of the same version rolled back moments before, or of a smaller step.
   */
  private analysisStartMs(rollout: RolloutRecord): number {
    const startedMs =
      rollout.stepStartedAt === null ? this.clock.now() : Date.parse(rollout.stepStartedAt);
    return nextBucketStart(startedMs);
  }

  private async analyze(rollout: RolloutRecord): Promise<CanaryVerdict> {
    const { primary } = await this.options.observations.observationsSince(
      rollout.endpoint,
      this.analysisStartMs(rollout),
    );
    return analyzeCanaryStep({
      thresholds: rollout.thresholds,
      ...(rollout.sliceKey === null ? {} : { sliceKey: rollout.sliceKey }),
      baseline: primary.get(versionKey(rollout.baseline)) ?? emptyVersionObservations(),
      canary: primary.get(versionKey(rollout.canary)) ?? emptyVersionObservations(),
    });
  }

  private transition(
    rollout: RolloutRecord,
    traffic: EndpointTrafficRecord | null,
    actor: string,
    reason: string,
  ): Transition {
    return { rollout, traffic, nowMs: this.clock.now(), actor, reason };
  }

  private warmUntil(): number {
    return this.clock.now() + (this.options.warmGraceMs ?? defaultWarmGraceMs);
  }

  private async write(rollout: RolloutRecord, change: TrafficChange): Promise<void> {
    await this.options.traffic.change(rollout.endpoint, change);
  }

  private async requireRollout(id: string): Promise<RolloutRecord> {
    const rollout = await this.options.store.getRollout(id);
    if (rollout === null) throw kilnError('KILN_ROLLOUT_NOT_FOUND', { rollout: id });
    return rollout;
  }
}
