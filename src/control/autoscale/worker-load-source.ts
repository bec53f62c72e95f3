// What the autoscale controller reads of the workers' own load (issue 14): queue depth, CPU,
// accelerator and custom metrics, summed over an endpoint's ready replicas. The gateways'
// reports give demand (concurrency, qps, held); this gives what only the workers know.
// Implemented by WorkerLoadPoller (worker-load-poller.ts: GET /kiln/v1/load on every ready
// replica once a second); the controller holds only this interface, so its tests use a fake.

import type { ScaleSignal } from '../../autoscale/autoscale-policy.ts';
import type { ScaleSample } from '../../autoscale/scale-signals.ts';

/** The worker-measured part of a ScaleSample, summed over the endpoint's ready replicas. */
export type WorkerLoad = Pick<ScaleSample, 'queueDepth' | 'cpu' | 'accelerator' | 'custom'>;

export interface WorkerLoadSource {
  /**
   * The endpoint's load as last polled, or null when nothing is known yet (never polled, or
   * ready replicas of which none has answered). Call it every tick for each autoscaled
   * endpoint with its policy's signal: asking is what keeps an endpoint polled (one not
   * asked about for a few seconds is dropped), and a signal the gateways' reports cover
   * (concurrency, qps) is never polled — null at once.
   */
  read(endpoint: string, signal: ScaleSignal): WorkerLoad | null;
}

/** No worker load at all (a controller without a poller, tests): samples get nulls. */
export const noWorkerLoad: WorkerLoadSource = { read: () => null };

/** Whether a signal is measured at the workers (else at the gateways). */
export function needsWorkerLoad(signal: ScaleSignal): boolean {
  switch (signal) {
    case 'queue-depth':
    case 'cpu':
    case 'accelerator':
    case 'custom':
      return true;
    case 'concurrency':
    case 'qps':
      return false;
  }
}
