// The predictive part as the controller calls it on every tick: the endpoint's stored demand
// rows in, a forecast out. Learning a profile walks every bucket of the history (14 days of
// 10 min buckets: 2 016, over up to 20 160 minute rows), so it is learned once per rows array
// the controller reads (it re-reads them every few minutes) and reused between.

import type { AutoscalePolicy } from './autoscale-policy.ts';
import type { DemandForecast } from './autoscaler.ts';
import { DemandProfile, forecastFor, type DemandPoint } from './demand-profile.ts';

export type DemandForecaster = (
  policy: AutoscalePolicy,
  demand: readonly DemandPoint[],
  nowMs: number,
  startupMs: number,
) => DemandForecast | undefined;

export function createDemandForecaster(): DemandForecaster {
  // Keyed by the rows array itself: a fresh read is a fresh array, so it relearns.
  const learned = new WeakMap<readonly DemandPoint[], { key: string; profile: DemandProfile }>();
  return (policy, demand, nowMs, startupMs) => {
    const predictive = policy.predictive;
    const signal = policy.signal;
    if (predictive === undefined || (signal !== 'concurrency' && signal !== 'qps')) {
      return undefined;
    }
    const key = `${signal} ${predictive.bucketMs} ${predictive.historyDays}`;
    let entry = learned.get(demand);
    if (entry === undefined || entry.key !== key) {
      const profile = DemandProfile.learn(demand, {
        signal,
        bucketMs: predictive.bucketMs,
        historyDays: predictive.historyDays,
        nowMs,
      });
      entry = { key, profile };
      learned.set(demand, entry);
    }
    return forecastFor(policy, entry.profile, nowMs, startupMs);
  };
}
