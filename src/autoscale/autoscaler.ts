// The autoscaler's decisions (issue 14), pure: a policy, the samples seen so far and the time
// → the replica count wanted now. No clock reads and no I/O, so the same code runs in the
// control plane (src/control/autoscale/autoscale-controller.ts, one instance per endpoint), in the simulator
// (src/simulator/) and in tests with synthetic signal streams.

import type { AutoscalePolicy } from './autoscale-policy.ts';
import type { ScaleSample } from './scale-signals.ts';

export interface ScaleDecision {
  /** The replica count wanted now (within min/max; 0 only when scale-to-zero applies). */
  readonly replicas: number;
  /** 'panic' while the panic window decides. */
  readonly mode: 'stable' | 'panic';
  /** What the reactive part alone wants (before rate limits and the scale-down delay). */
  readonly reactive: number;
  /** What the predictive part wants (0: none or no prediction). */
  readonly predictive: number;
  /** Why, in words a person reads in `kiln autoscale show` ("concurrency 7.9 / target 2 …"). */
  readonly reason: string;
}

/** What the predictive part needs from the controller (or the simulator) at each decision. */
export interface DemandForecast {
  /** Predicted value of the policy's signal (summed over replicas) at now + startup time. */
  readonly signalAhead: number;
}

/**
 * Anything that decides replica counts from samples: Kiln's policy (`Autoscaler`) and the
 * HPA-like baseline the simulator and the bench compare it with (`HpaBaseline`).
 */
export interface ScalingPolicyRunner {
  /** Feeds one sample (samples arrive in time order). */
  observe(sample: ScaleSample): void;
  /**
   * The replica count wanted at nowMs, given the count now wanted (`current`, what the last
   * decision applied). Calling it again at the same time with no new sample gives the same
   * answer.
   */
  decide(nowMs: number, current: number, forecast?: DemandForecast): ScaleDecision;
}

export class Autoscaler implements ScalingPolicyRunner {
  constructor(readonly policy: AutoscalePolicy) {}

  observe(sample: ScaleSample): void {
    void sample;
    throw new Error('Autoscaler: not implemented yet (issue 14, helper A)');
  }

  decide(nowMs: number, current: number, forecast?: DemandForecast): ScaleDecision {
    void nowMs;
    void current;
    void forecast;
    throw new Error('Autoscaler: not implemented yet (issue 14, helper A)');
  }
}
