// The predictive part of autoscaling (issue 14): a demand profile by time of day and day of
// week, learned from the stored demand history (one row per endpoint and minute, summed over
// gateways), and the forecast it gives the Autoscaler: the demand expected between now and
// now + the replica start-up time, so replicas asked for now are ready when a known daily peak
// arrives.
//
//   rows (minute) ──max per bucket and day──▶ observations[day][bucket]   (missing minute = 0)
//   estimate(weekday, bucket) = quantile 0.9 of that weekday's observations on past weeks
//                             ↳ none for that weekday: quantile 0.9 over every day's same bucket
//                             ↳ none at all (history starts later): no prediction
//
// A bucket's observation is its busiest minute that day, and the estimate a high quantile of
// those, because the forecast only ever raises replicas (applied = max(reactive, predictive)):
// erring high costs replica-minutes, erring low misses the SLO at the peak. Times are UTC (no
// time zone is read: the module stays pure); pure otherwise too: rows in, numbers out.

import type { AutoscalePolicy } from './autoscale-policy.ts';
import type { DemandForecast } from './autoscaler.ts';

/** The fields of a stored DemandRow (src/store/scaling-records.ts) the profile reads. */
export interface DemandPoint {
  /** ISO time on a whole minute. */
  readonly minuteStart: string;
  readonly arrivals: number;
  /** Σ concurrency × seconds over the minute's reports (mean concurrency = / 60). */
  readonly concurrencySeconds: number;
}

/** The signals the demand history records (the gateways' view). */
export type ProfileSignal = 'concurrency' | 'qps';

export interface DemandProfileOptions {
  readonly signal: ProfileSignal;
  /** Bucket width, dividing a day. */
  readonly bucketMs: number;
  /** Rows older than nowMs - historyDays are ignored. */
  readonly historyDays: number;
  /** The time the profile is learned at: buckets before it are observed, later ones are not. */
  readonly nowMs: number;
  /** Quantile of the observations a bucket is estimated by. Default 0.9. */
  readonly quantile?: number;
}

const minuteMs = 60_000;
const dayMs = 86_400_000;

export class DemandProfile {
  /** [weekday × bucketsPerDay + bucket] → estimate; absent: that weekday never observed it. */
  private readonly byWeekday = new Map<number, number>();
  /** [bucket] → estimate over every observed day. */
  private readonly byTimeOfDay = new Map<number, number>();
  readonly bucketsPerDay: number;

  private constructor(readonly options: DemandProfileOptions) {
    this.bucketsPerDay = Math.round(dayMs / options.bucketMs);
  }

  /** Learns a profile from demand rows (any order; rows of one endpoint). */
  static learn(rows: readonly DemandPoint[], options: DemandProfileOptions): DemandProfile {
    const profile = new DemandProfile(options);
    const { bucketMs, nowMs } = options;
    const since = nowMs - options.historyDays * dayMs;
    // Busiest minute per absolute bucket (bucket index since the epoch).
    const busiest = new Map<number, number>();
    let firstBucket = Number.POSITIVE_INFINITY;
    for (const row of rows) {
      const atMs = Date.parse(row.minuteStart);
      if (!Number.isFinite(atMs) || atMs < since || atMs >= nowMs) continue;
      const value =
        options.signal === 'qps' ? row.arrivals / 60 : row.concurrencySeconds / (minuteMs / 1000);
      if (!Number.isFinite(value)) continue;
      const bucket = Math.floor(atMs / bucketMs);
      firstBucket = Math.min(firstBucket, bucket);
      busiest.set(bucket, Math.max(busiest.get(bucket) ?? 0, Math.max(0, value)));
    }
    if (!Number.isFinite(firstBucket)) return profile;
    // Every whole bucket from the first row's to the last one before now is an observation:
    // no row in it means no demand (idle gateways send nothing), not a gap.
    const lastBucket = Math.floor(nowMs / bucketMs) - 1;
    const weekdayObservations = new Map<number, number[]>();
    const timeOfDayObservations = new Map<number, number[]>();
    const push = (map: Map<number, number[]>, key: number, value: number): void => {
      const list = map.get(key);
      if (list === undefined) map.set(key, [value]);
      else list.push(value);
    };
    for (let bucket = firstBucket; bucket <= lastBucket; bucket++) {
      const value = busiest.get(bucket) ?? 0;
      const key = profile.keyOf(bucket * bucketMs);
      push(weekdayObservations, key.weekday * profile.bucketsPerDay + key.bucket, value);
      push(timeOfDayObservations, key.bucket, value);
    }
    const q = options.quantile ?? 0.9;
    for (const [key, values] of weekdayObservations)
      profile.byWeekday.set(key, quantile(values, q));
    for (const [key, values] of timeOfDayObservations) {
      profile.byTimeOfDay.set(key, quantile(values, q));
    }
    return profile;
  }

  /** The predicted signal (summed over the endpoint) at atMs; null: no history for that time. */
  predict(atMs: number): number | null {
    const key = this.keyOf(atMs);
    return (
      this.byWeekday.get(key.weekday * this.bucketsPerDay + key.bucket) ??
      this.byTimeOfDay.get(key.bucket) ??
      null
    );
  }

  /** The highest prediction over the buckets [fromMs, toMs] touches; null: none predicted. */
  peakBetween(fromMs: number, toMs: number): number | null {
    const { bucketMs } = this.options;
    let peak: number | null = null;
    for (
      let bucket = Math.floor(fromMs / bucketMs);
      bucket <= Math.floor(toMs / bucketMs);
      bucket++
    ) {
      const value = this.predict(bucket * bucketMs);
      if (value !== null) peak = Math.max(peak ?? 0, value);
    }
    return peak;
  }

  /** Weekday 0 = Sunday (UTC; the epoch's day 0 was a Thursday) and bucket of the day. */
  private keyOf(atMs: number): { weekday: number; bucket: number } {
    const day = Math.floor(atMs / dayMs);
    return {
      weekday: (((day + 4) % 7) + 7) % 7,
      bucket: Math.floor((atMs - day * dayMs) / this.options.bucketMs),
    };
  }
}

/**
 * The forecast an Autoscaler decision takes: the profile's peak over [now, now + startup], so
 * replicas asked for now are ready when it comes, and kept until it has passed. Undefined when
 * the policy is not predictive, scales on a signal the history does not record, or the profile
 * has nothing for that time. The policy's own predictive.startupMs wins over the measured one.
 */
export function forecastFor(
  policy: AutoscalePolicy,
  profile: DemandProfile,
  nowMs: number,
  startupMs: number,
): DemandForecast | undefined {
  if (policy.predictive === undefined) return undefined;
  if (policy.signal !== profile.options.signal) return undefined;
  const aheadMs = policy.predictive.startupMs ?? startupMs;
  const peak = profile.peakBetween(nowMs, nowMs + Math.max(0, aheadMs));
  return peak === null ? undefined : { signalAhead: peak };
}

/** Linear-interpolated quantile (type 7, as numpy's default) of a non-empty list. */
function quantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  const position = (sorted.length - 1) * q;
  const lower = Math.floor(position);
  const upper = Math.min(sorted.length - 1, lower + 1);
  return sorted[lower]! + (sorted[upper]! - sorted[lower]!) * (position - lower);
}
