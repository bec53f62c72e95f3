// Turns one sample of the running replicas into usage rows: every replica running at the
// sample is charged the time since the previous sample, split at hour boundaries so each
// row lands in its hour. Pure; the control plane's CostMeter samples on its clock and stores
// the rows (mergeUsage adds them up).
//
//   sample N-1          sample N           a replica present at sample N is charged
//   ────┼────────────────┼──────▶ t         (N-1, N]; one that came and went between
//       └── fromMs  toMs ┘                  two samples is not seen (sample often)

import { usageHourMs, type UsageRow } from '../../store/cost-records.ts';
import type { ReplicaShape } from './price-table.ts';

/** One running replica at a sample: whose it is, its shape, and its CPU reading if any. */
export interface RunningReplica {
  readonly endpoint: string;
  readonly team: string;
  readonly shape: ReplicaShape;
  /** The worker's CPU utilization 0..1 of its threads when last polled; null: no reading. */
  readonly cpuUtilization: number | null;
}

function shapeKey(r: RunningReplica, hourMs: number): string {
  const s = r.shape;
  return [
    r.endpoint,
    r.team,
    hourMs,
    s.cpu,
    s.memoryGiB,
    s.acceleratorType ?? '',
    s.accelerators,
    s.capacity,
  ].join('\u0000');
}

/** The rows for (fromMs, toMs] of these replicas, one per endpoint, team, hour and shape. */
export function accrueUsage(
  replicas: readonly RunningReplica[],
  fromMs: number,
  toMs: number,
): UsageRow[] {
  if (!(toMs > fromMs)) return [];
  // Pieces of (fromMs, toMs] within one hour each.
  const pieces: Array<{ hourMs: number; seconds: number }> = [];
  for (let start = fromMs; start < toMs;) {
    const hourMs = Math.floor(start / usageHourMs) * usageHourMs;
    const end = Math.min(toMs, hourMs + usageHourMs);
    pieces.push({ hourMs, seconds: (end - start) / 1000 });
    start = end;
  }
  const rows = new Map<string, UsageRow>();
  for (const replica of replicas) {
    for (const { hourMs, seconds } of pieces) {
      const key = shapeKey(replica, hourMs);
      const known = rows.get(key);
      const observed = replica.cpuUtilization === null ? 0 : seconds;
      const busy = replica.cpuUtilization === null ? 0 : seconds * replica.cpuUtilization;
      rows.set(key, {
        endpoint: replica.endpoint,
        team: replica.team,
        hourStart: new Date(hourMs).toISOString(),
        cpu: replica.shape.cpu,
        memoryGiB: replica.shape.memoryGiB,
        acceleratorType: replica.shape.acceleratorType ?? '',
        accelerators: replica.shape.accelerators,
        capacity: replica.shape.capacity,
        replicaSeconds: (known?.replicaSeconds ?? 0) + seconds,
        observedSeconds: (known?.observedSeconds ?? 0) + observed,
        cpuBusySeconds: (known?.cpuBusySeconds ?? 0) + busy,
      });
    }
  }
  return [...rows.values()];
}
