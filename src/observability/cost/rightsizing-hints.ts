// Right-sizing hints for the cost report, from what an endpoint was observed to use over the
// report's window. Pure and deliberately simple: each hint names the figure it rests on, so
// an operator can judge it; none is applied automatically.
//
//   fewer min replicas  the busiest minute's mean concurrency would fit on fewer replicas than
//                       the endpoint keeps at least (one request in flight per replica), or it
//                       had no request at all (scale to zero: autoscale minReplicas 0)
//   smaller instance    its workers' CPU utilization stayed under 25 % of what it asks for:
//                       ask for twice the observed use, in quarter cores
//   shared pool         under 0.1 request/s on its own replicas, no accelerator, not an LLM:
//                       a pool's workers would hold it beside other rarely used models

import type { PriceTable } from './price-table.ts';

/** Below this CPU utilization (of what it asks), a smaller instance is suggested. */
export const lowCpuUtilization = 0.25;
/** Below this mean request rate (req/s), a shared pool is suggested. */
export const poolRequestRate = 0.1;

export interface EndpointUsageSummary {
  readonly endpoint: string;
  readonly team: string;
  readonly costUsd: number;
  readonly windowSeconds: number;
  readonly replicaSeconds: number;
  /** CPU cores one replica asks for (time-weighted mean over its shapes). */
  readonly meanCpu: number;
  readonly cpuUtilization: number | null;
  readonly requests: number;
  readonly peakConcurrency: number;
  readonly minReplicas: number;
  readonly pooled: boolean;
  readonly llm: boolean;
  readonly acceleratorSeconds: number;
}

export type RightSizingKind = 'fewer-min-replicas' | 'smaller-instance' | 'shared-pool';

export interface RightSizingHint {
  readonly endpoint: string;
  readonly team: string;
  readonly kind: RightSizingKind;
  /** One sentence: what to change and the figure it rests on. */
  readonly message: string;
  /** Rough saving over a window as long as the report's, USD; null: not estimated. */
  readonly savingsUsd: number | null;
}

function quarterCores(cores: number): number {
  return Math.max(0.25, Math.ceil(cores * 4) / 4);
}

export function rightSizingHints(
  summaries: readonly EndpointUsageSummary[],
  prices: PriceTable,
): RightSizingHint[] {
  const hints: RightSizingHint[] = [];
  for (const s of summaries) {
    const meanReplicas = s.replicaSeconds / s.windowSeconds;
    const costPerReplicaSecond = s.costUsd / s.replicaSeconds;
    // A pool's workers serve other endpoints' requests (counted under those): not judged here.
    if (s.minReplicas >= 1 && !s.pooled) {
      const needed = s.requests === 0 ? 0 : Math.max(1, Math.ceil(s.peakConcurrency));
      if (needed < s.minReplicas) {
        const spared = Math.min(meanReplicas, s.minReplicas - needed) * s.windowSeconds;
        hints.push({
          endpoint: s.endpoint,
          team: s.team,
          kind: 'fewer-min-replicas',
          message:
            s.requests === 0
              ? `no request in the window on ${s.minReplicas} replica(s): scale to zero (autoscale minReplicas 0) or delete it`
              : `peak concurrency ${s.peakConcurrency.toFixed(2)} fits ${needed} replica(s); it keeps at least ${s.minReplicas}: lower min replicas to ${needed}`,
          savingsUsd: spared * costPerReplicaSecond,
        });
      }
    }
    if (s.cpuUtilization !== null && s.cpuUtilization < lowCpuUtilization && s.meanCpu > 0.25) {
      const suggested = quarterCores(s.meanCpu * s.cpuUtilization * 2);
      if (suggested < s.meanCpu) {
        hints.push({
          endpoint: s.endpoint,
          team: s.team,
          kind: 'smaller-instance',
          message: `CPU utilization ${(s.cpuUtilization * 100).toFixed(0)} % of ${s.meanCpu} core(s): ask for ${suggested} (resources.cpu)`,
          savingsUsd:
            ((s.meanCpu - suggested) * s.replicaSeconds * prices.cpu.onDemandUsdPerHour) / 3600,
        });
      }
    }
    const rate = s.requests / s.windowSeconds;
    if (!s.pooled && !s.llm && s.acceleratorSeconds === 0 && rate < poolRequestRate) {
      hints.push({
        endpoint: s.endpoint,
        team: s.team,
        kind: 'shared-pool',
        message: `${rate.toFixed(3)} request/s on ${meanReplicas.toFixed(2)} replica(s) of its own: serve it from a shared pool (kiln deploy --pool)`,
        savingsUsd: null,
      });
    }
  }
  // Micro-dollars: estimates, and equal savings sort by name, not by float noise.
  for (const [i, hint] of hints.entries())
    if (hint.savingsUsd !== null)
      hints[i] = { ...hint, savingsUsd: Math.round(hint.savingsUsd * 1e6) / 1e6 };
  return hints.sort(
    (a, b) => (b.savingsUsd ?? 0) - (a.savingsUsd ?? 0) || (a.endpoint < b.endpoint ? -1 : 1),
  );
}
