// A/B experiments (issue 13): a fixed split of an endpoint's traffic over variants with
// sticky users, caller-reported outcomes attributed to variants, and the report.
//
//   create   checks (split, versions, key path, nothing else active), then ONE traffic
//            change: policy = {variants, salt = the experiment's id, keyPath} + the
//            experiment's record + the history event (TrafficService.change)
//   outcomes each outcome names its variant, or the user it was for: the user's variant is
//            the one the gateway picked for that user — the same sticky hash over the same
//            endpoint, salt and variants (traffic-split.ts)
//   stop     the experiment's record stopped; its policy removed (the stable version takes
//            all traffic again) when it is still the one in force
//   report   observations since the start (ObservationSource) + the outcomes' aggregates,
//            computed by experiment-report.ts
//
// Only one of {an active rollout, a running experiment} per endpoint: both are read before
// the write, and the write expects the traffic revision read with them, so a rollout or an
// experiment started meanwhile makes this one retry its checks (and be refused).

import { randomBytes } from 'node:crypto';
import { isoAt, systemClock, type Clock } from '../../core/clock.ts';
import { KilnError, kilnError } from '../../core/errors.ts';
import type { VersionObservations } from '../../traffic/canary-analysis.ts';
import { compileCallerKey } from '../../traffic/caller-key.ts';
import {
  compileTrafficSplit,
  splitProblems,
  type SplitProblem,
  type SplitVersion,
} from '../../traffic/traffic-split.ts';
import type { Store } from '../../store/store.ts';
import type {
  EndpointTrafficRecord,
  ExperimentRecord,
  OutcomeEntry,
  OutcomeKind,
  TrafficChange,
} from '../../store/traffic-records.ts';
import { observationBucketMs, versionKey } from '../../store/traffic-records.ts';
import {
  buildExperimentReport,
  defaultReportOptions,
  type ExperimentReport,
  type ReportOptions,
} from './experiment-report.ts';
import type { TrafficService } from './traffic-service.ts';

/** What the report needs of the merged gateway observations (TrafficService's reader). */
export interface ObservationSource {
  observationsSince(
    endpoint: string,
    sinceMs: number,
    untilMs?: number,
  ): Promise<{ readonly primary: ReadonlyMap<string, VersionObservations> }>;
}

export interface CreateExperimentRequest {
  readonly endpoint: string;
  readonly name: string;
  /** The first is the control. */
  readonly variants: readonly SplitVersion[];
  /** Where the caller key is in request bodies; the `kiln-user` header always counts. */
  readonly keyPath?: string | null;
  readonly reason?: string;
}

/** One caller-reported outcome: for the variant named, or for the user's variant. */
export interface OutcomeInput {
  readonly metric: string;
  readonly kind: OutcomeKind;
  readonly value: number;
  /** `model:version`, one of the experiment's variants. */
  readonly variant?: string;
  /** The caller key the request was made with (`kiln-user` or the body's key). */
  readonly user?: string;
}

export interface OutcomesAccepted {
  readonly experiment: string;
  readonly accepted: number;
  /** How many of them went to each variant. */
  readonly variants: Readonly<Record<string, number>>;
}

/** Most outcomes one call may carry (a report posts in batches). */
export const maxOutcomesPerCall = 10_000;

/**
 * Largest |value| of an outcome. The store keeps a running mean and M2 (sum of squared
 * deviations) per variant and metric: 1e200 and -1e200 overflowed M2 to Infinity, stored as
 * null, and every later call and report on that metric failed. Within this bound M2 stays
 * finite for any number of outcomes a store can hold.
 */
const maxOutcomeMagnitude = 1e15;

const metricName = /^[A-Za-z0-9_.-]{1,64}$/;
/** A read-check-write that lost a race retries this often before the conflict is the answer. */
const maxAttempts = 3;

export class ExperimentService {
  constructor(
    private readonly store: Store,
    private readonly traffic: TrafficService,
    private readonly observations: ObservationSource,
    private readonly clock: Clock = systemClock,
    private readonly newId: () => string = () => `exp-${randomBytes(6).toString('hex')}`,
  ) {}

  async create(request: CreateExperimentRequest, actor: string): Promise<ExperimentRecord> {
    const { endpoint, name } = request;
    const keyPath = request.keyPath ?? null;
    const id = this.newId();
    const problems: SplitProblem[] = splitProblems({
      endpoint,
      salt: id,
      versions: request.variants,
    });
    if (Array.isArray(request.variants) && request.variants.length < 2) {
      problems.push({
        field: 'variants',
        message: 'an experiment needs at least two variants (the first is the control)',
      });
    }
    const key = compileCallerKey(keyPath);
    if (!key.ok) problems.push({ field: 'keyPath', message: key.problem });
    const record = await this.store.getEndpoint(endpoint);
    if (record === null) throw kilnError('KILN_ENDPOINT_NOT_FOUND', { endpoint });
    if (problems.length > 0) throw policyInvalid(endpoint, problems);
    const variants = request.variants.map(({ model, version, weight }) => ({
      model,
      version,
      weight,
    }));
    for (const { model, version } of variants) {
      if ((await this.store.getVersion(model, version)) === null) {
        throw kilnError('KILN_VERSION_NOT_FOUND', { model, version });
      }
    }
    // The variants become the endpoint's policy: the checks a policy gets (an hf-llm
    // variant on a v2 endpoint would answer half its users with errors).
    await this.traffic.checkVersions(record, variants);
    await this.retryOnConflict(async () => {
      const current = await this.store.getEndpointTraffic(endpoint);
      await this.refuseWhileActive(endpoint);
      const inVariants = new Set(variants.map((v) => versionKey(v)));
      const change: TrafficChange = {
        ...expectRevisionOf(current),
        policy: {
          versions: variants,
          // Shadows already configured keep their copies, unless they now serve a variant.
          shadows: (current?.policy?.shadows ?? []).filter((s) => !inVariants.has(versionKey(s))),
          salt: id,
          keyPath,
          sliceKey: null,
          slicePath: null,
        },
        experiment: {
          create: { id, endpoint, name, variants, salt: id, keyPath, createdBy: actor },
        },
        event: {
          endpoint,
          actor,
          action: 'experiment-start',
          reason: request.reason ?? `experiment ${name}`,
          detail: { experiment: id, name, variants, keyPath },
        },
      };
      await this.traffic.change(endpoint, change);
    });
    return this.get(id);
  }

  async get(id: string): Promise<ExperimentRecord> {
    const experiment = await this.store.getExperiment(id);
    if (experiment === null) throw kilnError('KILN_EXPERIMENT_NOT_FOUND', { experiment: id });
    return experiment;
  }

  list(query: {
    readonly endpoint?: string;
    readonly state?: ExperimentRecord['state'];
  }): Promise<readonly ExperimentRecord[]> {
    return this.store.listExperiments(query);
  }

  async stop(id: string, actor: string, reason?: string): Promise<ExperimentRecord> {
    await this.retryOnConflict(async () => {
      const experiment = await this.get(id);
      if (experiment.state === 'stopped') {
        throw kilnError('KILN_EXPERIMENT_STOPPED', {
          experiment: id,
          reason: `it was stopped at ${experiment.stoppedAt ?? '?'}`,
        });
      }
      const current = await this.store.getEndpointTraffic(experiment.endpoint);
      // Another change (a rollback, a manual policy) may have replaced the experiment's split
      // already: that one stays.
      const ownsPolicy = current?.policy?.salt === experiment.salt;
      await this.traffic.change(experiment.endpoint, {
        ...expectRevisionOf(current),
        ...(ownsPolicy ? { policy: null } : {}),
        experiment: { stop: id, at: isoAt(this.clock) },
        event: {
          endpoint: experiment.endpoint,
          actor,
          action: 'experiment-stop',
          reason: reason ?? `experiment ${experiment.name} stopped`,
          detail: { experiment: id, policyRemoved: ownsPolicy },
        },
      });
    });
    return this.get(id);
  }

  /** Checks every outcome (all problems named), attributes each to a variant, merges them. */
  async addOutcomes(id: string, inputs: readonly OutcomeInput[]): Promise<OutcomesAccepted> {
    const experiment = await this.get(id);
    if (experiment.state === 'stopped') {
      throw kilnError('KILN_EXPERIMENT_STOPPED', {
        experiment: id,
        reason: 'outcomes are accepted while it runs',
      });
    }
    const compiled = compileTrafficSplit({
      endpoint: experiment.endpoint,
      salt: experiment.salt,
      versions: experiment.variants,
    });
    if (!compiled.ok) throw new Error(`experiment ${id} has an invalid split`);
    const split = compiled.split;
    const variants = new Set(experiment.variants.map((v) => versionKey(v)));
    const problems: SplitProblem[] = [];
    const entries: OutcomeEntry[] = [];
    const counts: Record<string, number> = {};
    if (inputs.length === 0) problems.push({ field: 'outcomes', message: 'must not be empty' });
    if (inputs.length > maxOutcomesPerCall) {
      problems.push({ field: 'outcomes', message: `at most ${maxOutcomesPerCall} per call` });
    }
    inputs.forEach((input, i) => {
      const problem = (field: string, message: string) =>
        problems.push({ field: `outcomes[${i}]${field}`, message });
      const { metric, kind, value } = input;
      if (typeof metric !== 'string' || !metricName.test(metric)) {
        problem('.metric', 'must be 1-64 letters, digits, _ . or -');
      }
      if (kind !== 'rate' && kind !== 'mean') problem('.kind', "must be 'rate' or 'mean'");
      if (typeof value !== 'number' || !Number.isFinite(value)) {
        problem('.value', 'must be a finite number');
      } else if (Math.abs(value) > maxOutcomeMagnitude) {
        problem('.value', `must lie in [-1e15, 1e15], got ${value}`);
      } else if (kind === 'rate' && value !== 0 && value !== 1) {
        problem('.value', `a rate outcome is 0 or 1, got ${value}`);
      }
      let variant: string | null = null;
      if ((input.variant === undefined) === (input.user === undefined)) {
        problem('', 'give exactly one of variant or user');
      } else if (input.variant !== undefined) {
        if (variants.has(input.variant)) variant = input.variant;
        else {
          problem('.variant', `${input.variant} is not a variant (${[...variants].join(', ')})`);
        }
      } else if (typeof input.user !== 'string' || input.user.trim() === '') {
        problem('.user', 'must be a non-empty string');
      } else {
        // The gateway trims the caller key (header or body) before hashing it: so does this.
        variant = versionKey(split.pick(input.user.trim()));
      }
      if (variant === null) return;
      entries.push({ variant, metric, kind, value });
      counts[variant] = (counts[variant] ?? 0) + 1;
    });
    if (problems.length > 0) {
      throw kilnError(
        'KILN_VALIDATION_FAILED',
        { reason: problemsText(problems) },
        { problems: problems.slice(0, 100) },
      );
    }
    await this.store.addOutcomes(id, entries);
    return { experiment: id, accepted: entries.length, variants: counts };
  }

  async report(
    id: string,
    options: ReportOptions = defaultReportOptions,
  ): Promise<ExperimentReport> {
    const experiment = await this.get(id);
    // Observation rows are 10 s buckets: the window holds the buckets of the start and of
    // the stop whole (the variants' counts only: what the stable version served before or
    // after counts for it, not for them, unless it is a variant too).
    const sinceMs = Date.parse(experiment.createdAt);
    const untilMs =
      experiment.stoppedAt === null
        ? undefined
        : Date.parse(experiment.stoppedAt) + observationBucketMs;
    const [observed, outcomes] = await Promise.all([
      this.observations.observationsSince(experiment.endpoint, sinceMs, untilMs),
      this.store.listOutcomes(id),
    ]);
    return buildExperimentReport({
      experiment,
      observations: observed.primary,
      outcomes,
      options,
    });
  }

  private async refuseWhileActive(endpoint: string): Promise<void> {
    const [rollout, running] = await Promise.all([
      this.store.getActiveRollout(endpoint),
      this.store.listExperiments({ endpoint, state: 'running' }),
    ]);
    if (rollout !== null) {
      throw kilnError('KILN_ROLLOUT_IN_PROGRESS', {
        endpoint,
        rollout: rollout.id,
        state: rollout.state,
      });
    }
    const experiment = running[0];
    if (experiment !== undefined) {
      throw kilnError('KILN_EXPERIMENT_IN_PROGRESS', {
        endpoint,
        experiment: experiment.id,
        reason: 'one experiment per endpoint at a time',
      });
    }
  }

  private async retryOnConflict(work: () => Promise<void>): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await work();
        return;
      } catch (error) {
        const conflict = error instanceof KilnError && error.code === 'KILN_TRAFFIC_CONFLICT';
        if (!conflict || attempt >= maxAttempts) throw error;
      }
    }
  }
}

/** The revision read (0: no record yet), so a change made meanwhile is refused. */
function expectRevisionOf(current: EndpointTrafficRecord | null): { expectRevision: number } {
  return { expectRevision: current?.revision ?? 0 };
}

function policyInvalid(endpoint: string, problems: readonly SplitProblem[]): KilnError {
  return kilnError(
    'KILN_TRAFFIC_POLICY_INVALID',
    { endpoint, reason: problemsText(problems) },
    { problems },
  );
}

function problemsText(problems: readonly SplitProblem[]): string {
  const shown = problems.slice(0, 5).map((p) => `${p.field}: ${p.message}`);
  const more = problems.length > 5 ? `; and ${problems.length - 5} more` : '';
  return shown.join('; ') + more;
}
