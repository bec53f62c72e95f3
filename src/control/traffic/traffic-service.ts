// The control plane's one door to an endpoint's traffic (issue 13): every change of a
// policy, a stable version, warm or staged versions goes through `change`, which writes it
// with its history event in one store transaction and has the reconciler publish a new
// routing snapshot at once (the gateways apply it atomically). Controllers (rollouts,
// blue-green, experiments) and the API call it; none writes traffic state another way.
//
// It also takes the gateways' traffic reports in (merged into 10-second observation rows)
// and reads them back for canary analysis, experiment reports and the shadow report.

import type { FastifyRequest } from 'fastify';
import { systemClock, type Clock } from '../../core/clock.ts';
import { kilnError } from '../../core/errors.ts';
import type { Registry } from '../../registry/registry.ts';
import type { EndpointTrafficRecord, TrafficChange } from '../../store/traffic-records.ts';
import { describePrincipal, devPrincipal } from '../access-policy.ts';
import type { Reconciler } from '../reconciler.ts';
import { mergeObservationData } from './observation-merge.ts';
import {
  bucketStartOf,
  observationsSince,
  type EndpointObservations,
} from './observation-reader.ts';
import { checkTrafficReport, reportDeltas } from './traffic-report-check.ts';

/** Who made a change, as history shows it: the caller's token, or a controller's name. */
export function actorOf(request: FastifyRequest): string {
  return describePrincipal(request.principal ?? devPrincipal);
}

export interface TrafficServiceOptions {
  /** How long a version that leaves the stable position keeps running (rollback target). */
  readonly warmGraceMs?: number;
  /** Observation rows older than this are deleted (checked at most every 10 minutes). */
  readonly observationRetentionMs?: number;
}

export const defaultWarmGraceMs = 10 * 60_000;
export const defaultObservationRetentionMs = 14 * 24 * 3_600_000;
const pruneEveryMs = 10 * 60_000;

/**
 * KILN_WARM_GRACE_MS and KILN_OBSERVATION_RETENTION_MS (whole milliseconds >= 0); absent or
 * empty: the defaults. A bad value is refused at start, not silently replaced.
 */
export function trafficOptionsFromEnv(env: NodeJS.ProcessEnv): TrafficServiceOptions {
  const read = (name: string): number | undefined => {
    const text = env[name];
    if (text === undefined || text.trim() === '') return undefined;
    const value = Number(text);
    if (!Number.isSafeInteger(value) || value < 0) {
      throw kilnError('KILN_VALIDATION_FAILED', {
        reason: `${name} must be a whole number of milliseconds >= 0, got ${JSON.stringify(text)}`,
      });
    }
    return value;
  };
  const warmGraceMs = read('KILN_WARM_GRACE_MS');
  const observationRetentionMs = read('KILN_OBSERVATION_RETENTION_MS');
  return {
    ...(warmGraceMs === undefined ? {} : { warmGraceMs }),
    ...(observationRetentionMs === undefined ? {} : { observationRetentionMs }),
  };
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

  private async pruneIfDue(now: number): Promise<void> {
    if (now - this.#lastPruneMs < pruneEveryMs) return;
    this.#lastPruneMs = now;
    const before = new Date(bucketStartOf(now - this.observationRetentionMs)).toISOString();
    await this.registry.store.pruneObservations(before);
  }
}
