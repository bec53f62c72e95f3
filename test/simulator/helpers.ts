// Shared pieces of the simulator tests: traces from rows, a model, and toy runners whose
// decisions are obvious, so a test checks the queueing model and not a policy.

import type {
  DemandForecast,
  ScaleDecision,
  ScalingPolicyRunner,
} from '../../src/autoscale/autoscaler.ts';
import type { ScaleSample } from '../../src/autoscale/scale-signals.ts';
import type { ServiceTimeSpec } from '../../src/simulator/service-time.ts';
import type { SimulationModel } from '../../src/simulator/simulation-model.ts';
import { parseTrace, type Trace } from '../../src/simulator/trace.ts';

export function traceOf(rows: readonly (readonly [number, number])[]): Trace {
  const check = parseTrace(rows.map(([t, rps]) => `${t},${rps}`).join('\n'));
  if (!check.ok) throw new Error(check.reason);
  return check.trace;
}

export function modelOf(
  serviceTime: ServiceTimeSpec,
  options: { slots?: number; startupMs?: number; usdPerHour?: number } = {},
): SimulationModel {
  return {
    concurrencyPerReplica: options.slots ?? 1,
    serviceTime,
    instanceTypes: {
      small: { startupMs: options.startupMs ?? 0, usdPerHour: options.usdPerHour ?? 1 },
    },
    defaultInstanceType: 'small',
  };
}

/**
 * ceil(concurrency / target) each tick, from zero only when demand shows, to zero when none:
 * a bare reactive scaler with no windows. Records every sample it saw.
 */
export class ToyReactive implements ScalingPolicyRunner {
  readonly samples: ScaleSample[] = [];
  readonly forecasts: (DemandForecast | undefined)[] = [];
  #last: ScaleSample | undefined;
  constructor(
    readonly target: number,
    readonly options: { minReplicas?: number; panicAbove?: number } = {},
  ) {}

  observe(sample: ScaleSample): void {
    this.samples.push(sample);
    this.#last = sample;
  }

  decide(nowMs: number, current: number, forecast?: DemandForecast): ScaleDecision {
    void nowMs;
    this.forecasts.push(forecast);
    const sample = this.#last;
    // Held requests are in the gateways' concurrency already.
    const demand = sample === undefined ? 0 : Math.max(sample.concurrency, sample.held);
    const wanted = Math.max(this.options.minReplicas ?? 0, Math.ceil(demand / this.target));
    const panic = this.options.panicAbove !== undefined && demand > this.options.panicAbove;
    return {
      replicas: wanted,
      mode: panic ? 'panic' : 'stable',
      reactive: wanted,
      predictive: 0,
      reason: `demand ${demand} (was ${current})`,
    };
  }
}
