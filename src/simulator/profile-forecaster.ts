// The predictive part of a Kiln policy in the simulator: what the control plane does with the
// stored demand rows (learn a DemandProfile, forecast the peak over [now, now + start-up]),
// fed with the simulated demand instead. Like the controller it re-reads (here: relearns)
// the history every `refreshMs` (its forecastRefreshMs, 5 min), keeps `historyDays` of
// rows, and looks ahead by the replica start-up time (the instance type's, which the
// controller would measure) unless the policy names its own.

import type { AutoscalePolicy } from '../autoscale/autoscale-policy.ts';
import type { DemandForecast } from '../autoscale/autoscaler.ts';
import { DemandProfile, forecastFor, type DemandPoint } from '../autoscale/demand-profile.ts';
import type { SimulatedForecaster } from './simulate.ts';

const dayMs = 86_400_000;

export class ProfileForecaster implements SimulatedForecaster {
  readonly #rows: DemandPoint[] = [];
  #rowsHead = 0;
  #profile: DemandProfile | null = null;
  #learnedAtMs = -Infinity;

  constructor(
    readonly policy: AutoscalePolicy,
    readonly startupMs: number,
    readonly refreshMs = 300_000,
  ) {}

  learn(row: DemandPoint): void {
    this.#rows.push(row);
  }

  forecast(nowMs: number): DemandForecast | undefined {
    const predictive = this.policy.predictive;
    const signal = this.policy.signal;
    if (predictive === undefined || (signal !== 'concurrency' && signal !== 'qps')) {
      return undefined;
    }
    if (this.#profile === null || nowMs - this.#learnedAtMs >= this.refreshMs) {
      this.#dropOlderThan(nowMs - predictive.historyDays * dayMs);
      this.#profile = DemandProfile.learn(this.#rows.slice(this.#rowsHead), {
        signal,
        bucketMs: predictive.bucketMs,
        historyDays: predictive.historyDays,
        nowMs,
      });
      this.#learnedAtMs = nowMs;
    }
    return forecastFor(this.policy, this.#profile, nowMs, this.startupMs);
  }

  #dropOlderThan(sinceMs: number): void {
    while (this.#rowsHead < this.#rows.length) {
      const row = this.#rows[this.#rowsHead];
      if (row === undefined || Date.parse(row.minuteStart) >= sinceMs) break;
      this.#rowsHead++;
    }
    if (this.#rowsHead > 4096 && this.#rowsHead * 2 > this.#rows.length) {
      this.#rows.splice(0, this.#rowsHead);
      this.#rowsHead = 0;
    }
  }
}
