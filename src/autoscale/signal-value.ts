// The value of a policy's signal in one sample, summed over the endpoint (not per replica):
// the autoscaler divides it by the per-replica target. Null when the sample does not carry it
// (worker load not reported, no ready replica to report it, a custom metric no worker sends),
// so a window averages only the samples that measured something.

import type { AutoscalePolicy } from './autoscale-policy.ts';
import type { ScaleSample } from './scale-signals.ts';

export function signalValue(
  policy: Pick<AutoscalePolicy, 'signal' | 'customMetric'>,
  sample: ScaleSample,
): number | null {
  switch (policy.signal) {
    case 'concurrency':
      return sample.concurrency;
    case 'qps':
    case 'slo': // the demand it sizes for; the service time comes from cpu / completed
      return sample.qps;
    case 'queue-depth':
      return sample.queueDepth;
    case 'cpu':
      return sample.cpu;
    case 'accelerator':
      return sample.accelerator;
    case 'custom': {
      const name = policy.customMetric;
      if (name === undefined || !Object.hasOwn(sample.custom, name)) return null;
      return sample.custom[name] ?? null;
    }
  }
}

/** Demand seen at the gateways: a request arrived, was in flight or is held. */
export function hasDemand(sample: ScaleSample): boolean {
  return sample.qps > 0 || sample.concurrency > 0 || sample.held > 0;
}
