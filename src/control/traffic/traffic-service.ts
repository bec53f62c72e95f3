// The control plane's one door to an endpoint's traffic (issue 13): every change of a
// policy, a stable version, warm or staged versions goes through `change`, which writes it
// with its history event in one store transaction and has the reconciler publish a new
// routing snapshot at once (the gateways apply it atomically). Controllers (rollouts,
// blue-green, experiments) and the API call it; none writes traffic state another way.
//
// It also takes the gateways' traffic reports in (merged into 10-second observation rows)
// and reads them back for canary analysis, experiment reports and the shadow report.

import { randomBytes } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { systemClock, type Clock } from '../../core/clock.ts';
import { isKilnError, kilnError } from '../../core/errors.ts';
import type { Registry } from '../../registry/registry.ts';
import type { EndpointRecord } from '../../store/serving-records.ts';
import type { PageRequest } from '../../store/store.ts';
import type { Page } from '../../registry/types.ts';
import {
  versionKey,
  type EndpointTrafficRecord,
  type ExperimentRecord,
  type RolloutRecord,
  type TrafficChange,
  type TrafficEvent,
  type TrafficPolicy,
  type VersionRef,
} from '../../store/traffic-records.ts';
import type { ShadowVersion } from '../../traffic/traffic-split.ts';
import { describePrincipal, devPrincipal } from '../access-policy.ts';
import type { Reconciler } from '../reconciler.ts';
import { mergeObservationData } from './observation-merge.ts';
import {
  bucketStartOf,
  observationsSince,
  type EndpointObservations,
} from './observation-reader.ts';
import { checkPolicyVersions } from './policy-versions-check.ts';
import { planRollback, type RollbackKind } from './rollback-plan.ts';
import { checkPolicyInput, describeProblems, type PolicyInput } from './traffic-policy-input.ts';
import { checkTrafficReport, reportDeltas } from './traffic-report-check.ts';
import { shadowReport, trafficView, type ShadowReport, type TrafficView } from './traffic-view.ts';
import {
  defaultObservationRetentionMs,
  defaultWarmGraceMs,
  type TrafficServiceOptions,
} from './traffic-settings.ts';
import { keepWarm, sameVersion } from './warm-versions.ts';

// Where platforms and controllers have always found them.
export {
  defaultObservationRetentionMs,
  defaultWarmGraceMs,
  trafficOptionsFromEnv,
  type TrafficServiceOptions,
} from './traffic-settings.ts';

/** Who made a change, as history shows it: the caller's token, or a controller's name. */
export function actorOf(request: FastifyRequest): string {
  return describePrincipal(request.principal ?? devPrincipal);
}

const pruneEveryMs = 10 * 60_000;
/** A change computed from a read that another writer overtook is recomputed this often. */
const conflictRetries = 3;

/** Who asks for a change and why; `expectRevision`: refuse if the traffic changed since. */
export interface ChangeContext {
  readonly actor: string;
  readonly reason?: string;
  readonly expectRevision?: number;
}

/** Everything a traffic decision reads of one endpoint. */
interface EndpointState {
  readonly endpoint: EndpointRecord;
  readonly traffic: EndpointTrafficRecord | null;
  readonly rollout: RolloutRecord | null;
  readonly experiment: ExperimentRecord | null;
}

export class TrafficService {
  readonly warmGraceMs: number;
  readonly observationRetentionMs: number;
  #lastPruneMs = Number.NEGATIVE_INFINITY;

  constructor(
    readonly registry: Registry,
    readonly reconciler: Reconciler,
    readonly clock: Clock = systemClock,
    options: TrafficServiceOptions = {},
  ) {
    this.warmGraceMs = options.warmGraceMs ?? defaultWarmGraceMs;
    this.observationRetentionMs = options.observationRetentionMs ?? defaultObservationRetentionMs;
  }

  /** Writes `change` (store transaction with its event), then publishes the new routing. */
  async change(endpoint: string, change: TrafficChange): Promise<EndpointTrafficRecord> {
    const record = await this.registry.store.updateEndpointTraffic(endpoint, change);
    await this.reconciler.trigger();
    return record;
  }

  /**
   * What gateways observed on `endpoint` from the bucket holding `sinceMs` on (see
   * observation-reader.ts), by `model:version`: primary versions with their slices, shadows.
   */
  observationsSince(
    endpoint: string,
    sinceMs: number,
    untilMs?: number,
  ): Promise<EndpointObservations> {
    return observationsSince(this.registry.store, endpoint, sinceMs, untilMs);
  }

  /**
   * Merges one gateway report into the rows of the bucket it arrived in (the control plane's
   * clock, not the gateway's: a gateway whose clock is off still lands in the window a
   * rollout step reads). Refused whole with KILN_VALIDATION_FAILED listing its problems.
   */
  async ingestReport(body: unknown): Promise<{ readonly rows: number }> {
    const check = checkTrafficReport(body);
    if (!check.ok) {
      throw kilnError(
        'KILN_VALIDATION_FAILED',
        { reason: `traffic report: ${check.problems.slice(0, 5).join('; ')}` },
        { problems: check.problems },
      );
    }
    const now = this.clock.now();
    const deltas = reportDeltas(check.report, new Date(bucketStartOf(now)).toISOString());
    if (deltas.length > 0)
      await this.registry.store.mergeObservations(deltas, mergeObservationData);
    await this.pruneIfDue(now);
    return { rows: deltas.length };
  }

  /** The endpoint's traffic as `kiln traffic show` prints it. */
  async view(endpoint: string): Promise<TrafficView> {
    return this.viewOf(await this.read(endpoint));
  }

  /**
   * Puts a traffic policy in force (a manual split and its shadows). Refused while a rollout
   * or an experiment owns the endpoint's traffic; every problem of the policy in one 400;
   * versions that do not exist 404. The salt stays the one in force unless given, so a
   * weight change moves only the users whose bucket crosses a boundary.
   */
  async setPolicy(
    endpoint: string,
    input: PolicyInput,
    context: ChangeContext,
  ): Promise<TrafficView> {
    return this.retrying(context, async () => {
      const state = await this.read(endpoint);
      this.refuseWhileOwned(state, 'set a traffic policy');
      const policy = this.checkPolicy(endpoint, input, state.traffic?.policy ?? null);
      await checkPolicyVersions(this.registry, state.endpoint, policy);
      await this.write(state, context, {
        policy,
        event: this.event(endpoint, context, 'policy', {
          before: state.traffic?.policy ?? null,
          after: policy,
        }),
      });
      return this.view(endpoint);
    });
  }

  /**
   * Versions a rollout or an experiment is about to route to, checked as a policy's are
   * (exist, trusted under the signing policy, a servable format, the endpoint's protocol):
   * they become the endpoint's policy without passing through setPolicy.
   */
  async checkVersions(endpoint: EndpointRecord, versions: readonly VersionRef[]): Promise<void> {
    await checkPolicyVersions(this.registry, endpoint, {
      versions: versions.map(({ model, version }) => ({ model, version, weight: 0 })),
      shadows: [],
      salt: '',
      keyPath: null,
      sliceKey: null,
      slicePath: null,
    });
  }

  /** Back to the stable version at 100 % (shadows too go); a no-op without a policy. */
  async clearPolicy(endpoint: string, context: ChangeContext): Promise<TrafficView> {
    return this.retrying(context, async () => {
      const state = await this.read(endpoint);
      if ((state.traffic?.policy ?? null) === null) return this.viewOf(state);
      this.refuseWhileOwned(state, 'clear the traffic policy');
      await this.write(state, context, {
        policy: null,
        event: this.event(endpoint, context, 'policy', {
          before: state.traffic?.policy ?? null,
          after: null,
        }),
      });
      return this.view(endpoint);
    });
  }

  /**
   * Replaces the shadows of the policy in force (none: the stable version at 100 % with
   * these shadows). An empty list on a policy that is only the stable version clears it.
   */
  async setShadows(
    endpoint: string,
    shadows: readonly ShadowVersion[],
    context: ChangeContext,
  ): Promise<TrafficView> {
    return this.retrying(context, async () => {
      const state = await this.read(endpoint);
      this.refuseWhileOwned(state, 'change shadows');
      const current = state.traffic?.policy ?? null;
      const stable = { model: state.endpoint.model, version: state.endpoint.version };
      const base: PolicyInput = current ?? { versions: [{ ...stable, weight: 100 }] };
      const policy = this.checkPolicy(endpoint, { ...base, shadows }, current);
      await checkPolicyVersions(this.registry, state.endpoint, policy);
      const plain =
        shadows.length === 0 &&
        policy.keyPath === null &&
        policy.sliceKey === null &&
        policy.versions.length === 1 &&
        sameVersion(policy.versions[0] as VersionRef, stable);
      await this.write(state, context, {
        policy: plain ? null : policy,
        event: this.event(endpoint, context, 'shadow', {
          before: current?.shadows ?? [],
          after: policy.shadows,
        }),
      });
      return this.view(endpoint);
    });
  }

  /** One step back; see rollback-plan.ts for the rules. */
  async rollback(
    endpoint: string,
    context: ChangeContext,
  ): Promise<{
    readonly kind: RollbackKind;
    readonly summary: string;
    readonly traffic: TrafficView;
  }> {
    return this.retrying(context, async () => {
      const state = await this.read(endpoint);
      const previous = state.traffic?.previous ?? null;
      const previousServable =
        previous !== null &&
        (await this.registry.store.getVersion(previous.model, previous.version)) !== null;
      const plan = planRollback({
        ...state,
        previousServable,
        nowMs: this.clock.now(),
        warmGraceMs: this.warmGraceMs,
        actor: context.actor,
        reason: reasonOf(context),
      });
      if (!plan.ok) throw kilnError('KILN_NOTHING_TO_ROLL_BACK', { endpoint, reason: plan.reason });
      await this.write(state, context, plan.change);
      return { kind: plan.kind, summary: plan.summary, traffic: await this.view(endpoint) };
    });
  }

  /** Newest first. History outlives its endpoint; a name with neither is a 404. */
  async history(
    endpoint: string,
    request: PageRequest & { readonly since?: string | undefined },
  ): Promise<Page<TrafficEvent>> {
    const page = await this.registry.store.listTrafficEvents(endpoint, request);
    if (page.items.length === 0 && request.pageToken === undefined) {
      if ((await this.registry.store.getEndpoint(endpoint)) === null)
        throw kilnError('KILN_ENDPOINT_NOT_FOUND', { endpoint });
    }
    return page;
  }

  /** How the shadows compared with the primary since `sinceMs` (bucket-aligned). */
  async shadowReport(endpoint: string, sinceMs: number): Promise<ShadowReport> {
    const state = await this.read(endpoint);
    const now = this.clock.now();
    const observed = await this.observationsSince(endpoint, sinceMs);
    return shadowReport({
      endpoint,
      policy: state.traffic?.policy ?? null,
      counts: observed.shadows,
      since: new Date(bucketStartOf(sinceMs)).toISOString(),
      until: new Date(now).toISOString(),
    });
  }

  /**
   * A deploy that would replace the stable version: refused while a rollout or an
   * experiment is active on the endpoint (it would pull the baseline from under it).
   */
  async checkDeployAllowed(endpoint: string): Promise<void> {
    const [rollout, experiment] = await Promise.all([
      this.registry.store.getActiveRollout(endpoint),
      this.runningExperiment(endpoint),
    ]);
    this.refuseWhileOwned({ rollout, experiment }, 'deploy another version');
  }

  /**
   * After a deploy wrote the endpoint: a new endpoint gets its first history event; a
   * replaced stable version becomes `previous` and stays warm for the grace period, and
   * any policy ends (it named versions chosen against the old stable one).
   */
  async recordDeploy(
    before: EndpointRecord | null,
    after: EndpointRecord,
    actor: string,
    warmGraceMs: number = this.warmGraceMs,
  ): Promise<void> {
    const to = { model: after.model, version: after.version };
    const detail = { from: before === null ? null : versionKey(before), to: versionKey(to) };
    const reason = `deployed ${versionKey(to)} (${after.ref})`;
    if (before === null) {
      await this.registry.store.appendTrafficEvent({
        endpoint: after.name,
        actor,
        action: 'deploy',
        reason,
        detail,
      });
      return;
    }
    const from = { model: before.model, version: before.version };
    if (sameVersion(from, to)) return;
    const now = this.clock.now();
    const traffic = await this.registry.store.getEndpointTraffic(after.name);
    await this.change(after.name, {
      policy: null,
      previous: from,
      warm: keepWarm(traffic?.warm ?? [], from, now + warmGraceMs, now, to),
      event: {
        endpoint: after.name,
        actor,
        action: 'deploy',
        reason,
        detail: { ...detail, warmGraceMs },
      },
    });
  }

  private async read(endpoint: string): Promise<EndpointState> {
    const store = this.registry.store;
    const [record, traffic, rollout, experiment] = await Promise.all([
      store.getEndpoint(endpoint),
      store.getEndpointTraffic(endpoint),
      store.getActiveRollout(endpoint),
      this.runningExperiment(endpoint),
    ]);
    if (record === null) throw kilnError('KILN_ENDPOINT_NOT_FOUND', { endpoint });
    return { endpoint: record, traffic, rollout, experiment };
  }

  private viewOf(state: EndpointState): TrafficView {
    return trafficView({ ...state, nowMs: this.clock.now(), warmGraceMs: this.warmGraceMs });
  }

  private async runningExperiment(endpoint: string): Promise<ExperimentRecord | null> {
    const running = await this.registry.store.listExperiments({ endpoint, state: 'running' });
    return running[0] ?? null;
  }

  /** A rollout or an experiment owns the endpoint's policy until it ends. */
  private refuseWhileOwned(
    state: Pick<EndpointState, 'rollout' | 'experiment'>,
    action: string,
  ): void {
    const { rollout, experiment } = state;
    if (rollout !== null) {
      throw kilnError(
        'KILN_ROLLOUT_IN_PROGRESS',
        { endpoint: rollout.endpoint, rollout: rollout.id, state: rollout.state },
        { action },
      );
    }
    if (experiment !== null) {
      throw kilnError('KILN_EXPERIMENT_IN_PROGRESS', {
        endpoint: experiment.endpoint,
        experiment: experiment.id,
        reason: `cannot ${action} while it runs`,
      });
    }
  }

  private checkPolicy(
    endpoint: string,
    input: PolicyInput,
    current: TrafficPolicy | null,
  ): TrafficPolicy {
    const check = checkPolicyInput(endpoint, input, current?.salt ?? freshSalt());
    if (!check.ok) {
      throw kilnError(
        'KILN_TRAFFIC_POLICY_INVALID',
        { endpoint, reason: describeProblems(check.problems) },
        { problems: check.problems },
      );
    }
    return check.policy;
  }

  private event(
    endpoint: string,
    context: ChangeContext,
    action: 'policy' | 'shadow',
    detail: unknown,
  ): TrafficChange['event'] {
    return { endpoint, actor: context.actor, action, reason: reasonOf(context), detail };
  }

  /** Writes a change computed from `state`: refused if the traffic moved since it was read. */
  private async write(
    state: EndpointState,
    context: ChangeContext,
    change: TrafficChange,
  ): Promise<EndpointTrafficRecord> {
    const expectRevision = context.expectRevision ?? state.traffic?.revision ?? 0;
    return this.change(state.endpoint.name, { ...change, expectRevision });
  }

  /**
   * Runs a read-decide-write again when another writer got in between (a rollout's step, a
   * second operator), unless the caller named the revision it decided on: then the 409 is
   * theirs to see.
   */
  private async retrying<T>(context: ChangeContext, work: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await work();
      } catch (error) {
        const conflict = isKilnError(error) && error.code === 'KILN_TRAFFIC_CONFLICT';
        if (!conflict || context.expectRevision !== undefined || attempt >= conflictRetries)
          throw error;
      }
    }
  }

  private async pruneIfDue(now: number): Promise<void> {
    if (now - this.#lastPruneMs < pruneEveryMs) return;
    this.#lastPruneMs = now;
    const before = new Date(bucketStartOf(now - this.observationRetentionMs)).toISOString();
    await this.registry.store.pruneObservations(before);
  }
}

function reasonOf(context: ChangeContext): string {
  const reason = context.reason?.trim() ?? '';
  return reason === '' ? 'no reason given' : reason;
}

/** A manual policy's sticky salt: new users' buckets unrelated to any earlier split's. */
function freshSalt(): string {
  return `manual-${randomBytes(6).toString('hex')}`;
}
