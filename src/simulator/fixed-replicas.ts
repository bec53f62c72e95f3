// A policy that never scales: a fixed replica count, as an endpoint without autoscaling runs
// (`kiln deploy --replicas N`). The simulator's static baseline, and the runner its queueing
// tests use (a known number of servers).

import type { ScaleDecision, ScalingPolicyRunner } from '../autoscale/autoscaler.ts';
import type { ScaleSample } from '../autoscale/scale-signals.ts';

export class FixedReplicas implements ScalingPolicyRunner {
  constructor(readonly replicas: number) {}

  observe(sample: ScaleSample): void {
    void sample;
  }

  decide(nowMs: number, current: number): ScaleDecision {
    void nowMs;
    void current;
    return {
      replicas: this.replicas,
      mode: 'stable',
      reactive: this.replicas,
      predictive: 0,
      reason: `fixed at ${this.replicas}`,
    };
  }
}
