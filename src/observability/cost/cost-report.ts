// The chargeback report (`kiln cost report`, `GET /api/v1/cost`): usage rows priced by the
// price table, grouped by team or endpoint, with requests (the demand history), LLM tokens
// and right-sizing hints. Pure: the control plane reads the rows and hands them here.
//
// cost of a usage row = replicaSeconds / 3600 × (cpu × cpu price + memoryGiB × memory price
//                       + accelerators × the device type's price), each at the row's capacity
//                       (spot or on-demand). Prices are today's table, applied when the report
//                       is built: change the table and old usage is priced anew.

import type { TokenUsageRow, UsageRow } from '../../store/cost-records.ts';
import { acceleratorPrice, shapeUsdPerHour, type PriceTable } from './price-table.ts';
import {
  rightSizingHints,
  type EndpointUsageSummary,
  type RightSizingHint,
} from './rightsizing-hints.ts';

export type CostGrouping = 'team' | 'endpoint';

/** What the report needs to know of an endpoint that is not in its usage rows. */
export interface EndpointFacts {
  readonly team: string;
  /** Replicas it keeps at least (autoscale minReplicas, else its fixed count). */
  readonly minReplicas: number;
  /** Served by a shared pool's workers, or an LLM: no pool hint. */
  readonly pooled: boolean;
  readonly llm: boolean;
}

/** Requests and concurrency of one endpoint over the window (from the demand history). */
export interface EndpointDemand {
  readonly requests: number;
  /** Highest per-minute mean of requests in flight in the window; 0 with no traffic. */
  readonly peakConcurrency: number;
}

export interface CostReportInput {
  readonly by: CostGrouping;
  readonly sinceMs: number;
  readonly untilMs: number;
  readonly prices: PriceTable;
  readonly usage: readonly UsageRow[];
  readonly tokens: readonly TokenUsageRow[];
  readonly demand: ReadonlyMap<string, EndpointDemand>;
  /** Current endpoints (their team attributes requests of endpoints without usage rows). */
  readonly endpoints: ReadonlyMap<string, EndpointFacts>;
}

export interface CostReportRow {
  /** The team or the endpoint. */
  readonly key: string;
  /** Endpoint rows: its team; team rows: the team. */
  readonly team: string;
  readonly costUsd: number;
  readonly replicaHours: number;
  readonly cpuHours: number;
  readonly memoryGiBHours: number;
  readonly acceleratorHours: number;
  /** Share of replica time on spot capacity, 0..1 (0 with no replica time). */
  readonly spotShare: number;
  readonly requests: number;
  readonly promptTokens: number;
  readonly completionTokens: number;
  /** costUsd per 1000 requests; null with no requests. */
  readonly usdPer1kRequests: number | null;
  /** costUsd per million tokens (prompt + completion); null with no tokens. */
  readonly usdPer1mTokens: number | null;
  /** Mean CPU utilization of its workers 0..1 where polled; null: never polled. */
  readonly cpuUtilization: number | null;
}

export interface CostReport {
  readonly by: CostGrouping;
  readonly since: string;
  readonly until: string;
  readonly currency: 'USD';
  /** Most expensive first. */
  readonly rows: readonly CostReportRow[];
  readonly total: CostReportRow;
  /** Device types in the usage that the price table does not price (charged 0). */
  readonly unpricedAcceleratorTypes: readonly string[];
  readonly hints: readonly RightSizingHint[];
}

interface Sums {
  team: string;
  costUsd: number;
  replicaSeconds: number;
  spotSeconds: number;
  cpuSeconds: number;
  memoryGiBSeconds: number;
  acceleratorSeconds: number;
  observedSeconds: number;
  cpuBusySeconds: number;
  requests: number;
  promptTokens: number;
  completionTokens: number;
}

function emptySums(team: string): Sums {
  return {
    team,
    costUsd: 0,
    replicaSeconds: 0,
    spotSeconds: 0,
    cpuSeconds: 0,
    memoryGiBSeconds: 0,
    acceleratorSeconds: 0,
    observedSeconds: 0,
    cpuBusySeconds: 0,
    requests: 0,
    promptTokens: 0,
    completionTokens: 0,
  };
}

function addSums(into: Sums, from: Sums): void {
  into.costUsd += from.costUsd;
  into.replicaSeconds += from.replicaSeconds;
  into.spotSeconds += from.spotSeconds;
  into.cpuSeconds += from.cpuSeconds;
  into.memoryGiBSeconds += from.memoryGiBSeconds;
  into.acceleratorSeconds += from.acceleratorSeconds;
  into.observedSeconds += from.observedSeconds;
  into.cpuBusySeconds += from.cpuBusySeconds;
  into.requests += from.requests;
  into.promptTokens += from.promptTokens;
  into.completionTokens += from.completionTokens;
}

function toRow(key: string, s: Sums): CostReportRow {
  const tokens = s.promptTokens + s.completionTokens;
  return {
    key,
    team: s.team,
    costUsd: s.costUsd,
    replicaHours: s.replicaSeconds / 3600,
    cpuHours: s.cpuSeconds / 3600,
    memoryGiBHours: s.memoryGiBSeconds / 3600,
    acceleratorHours: s.acceleratorSeconds / 3600,
    spotShare: s.replicaSeconds === 0 ? 0 : s.spotSeconds / s.replicaSeconds,
    requests: s.requests,
    promptTokens: s.promptTokens,
    completionTokens: s.completionTokens,
    usdPer1kRequests: s.requests === 0 ? null : (s.costUsd / s.requests) * 1000,
    usdPer1mTokens: tokens === 0 ? null : (s.costUsd / tokens) * 1e6,
    cpuUtilization: s.observedSeconds === 0 ? null : s.cpuBusySeconds / s.observedSeconds,
  };
}

/** The USD a usage row costs at these prices. */
export function usageRowCostUsd(prices: PriceTable, row: UsageRow): number {
  const perHour = shapeUsdPerHour(prices, {
    cpu: row.cpu,
    memoryGiB: row.memoryGiB,
    acceleratorType: row.acceleratorType === '' ? null : row.acceleratorType,
    accelerators: row.accelerators,
    capacity: row.capacity,
  });
  return (row.replicaSeconds / 3600) * perHour;
}

export function buildCostReport(input: CostReportInput): CostReport {
  const { prices } = input;
  // Per endpoint first (hints need it), then folded into teams when asked.
  const perEndpoint = new Map<string, Sums>();
  const sumsOf = (endpoint: string, team: string): Sums => {
    let sums = perEndpoint.get(endpoint);
    if (sums === undefined) {
      sums = emptySums(team);
      perEndpoint.set(endpoint, sums);
    }
    return sums;
  };
  const unpriced = new Set<string>();
  // Rows come oldest first: an endpoint moved to another team is reported under its latest.
  for (const row of input.usage) {
    const sums = sumsOf(row.endpoint, row.team);
    sums.team = row.team;
    sums.costUsd += usageRowCostUsd(prices, row);
    sums.replicaSeconds += row.replicaSeconds;
    if (row.capacity === 'spot') sums.spotSeconds += row.replicaSeconds;
    sums.cpuSeconds += row.cpu * row.replicaSeconds;
    sums.memoryGiBSeconds += row.memoryGiB * row.replicaSeconds;
    sums.acceleratorSeconds += row.accelerators * row.replicaSeconds;
    sums.observedSeconds += row.observedSeconds;
    sums.cpuBusySeconds += row.cpuBusySeconds;
    if (
      row.acceleratorType !== '' &&
      row.accelerators > 0 &&
      acceleratorPrice(prices, row.acceleratorType) === null
    )
      unpriced.add(row.acceleratorType);
  }
  const teamOf = (endpoint: string): string =>
    perEndpoint.get(endpoint)?.team ?? input.endpoints.get(endpoint)?.team ?? '(deleted)';
  for (const row of input.tokens) {
    const sums = sumsOf(row.endpoint, perEndpoint.get(row.endpoint)?.team ?? row.team);
    sums.promptTokens += row.promptTokens;
    sums.completionTokens += row.completionTokens;
  }
  for (const [endpoint, demand] of input.demand) {
    if (demand.requests === 0) continue;
    sumsOf(endpoint, teamOf(endpoint)).requests += demand.requests;
  }

  const grouped = new Map<string, Sums>();
  const total = emptySums('');
  for (const [endpoint, sums] of perEndpoint) {
    addSums(total, sums);
    if (input.by === 'endpoint') {
      grouped.set(endpoint, sums);
      continue;
    }
    let team = grouped.get(sums.team);
    if (team === undefined) {
      team = emptySums(sums.team);
      grouped.set(sums.team, team);
    }
    addSums(team, sums);
  }
  const rows = [...grouped]
    .map(([key, sums]) => toRow(key, sums))
    .sort((a, b) => b.costUsd - a.costUsd || (a.key < b.key ? -1 : 1));

  const windowSeconds = Math.max(1, (input.untilMs - input.sinceMs) / 1000);
  const summaries: EndpointUsageSummary[] = [];
  for (const [endpoint, sums] of perEndpoint) {
    const facts = input.endpoints.get(endpoint);
    if (facts === undefined || sums.replicaSeconds === 0) continue; // deleted: nothing to resize
    summaries.push({
      endpoint,
      team: sums.team,
      costUsd: sums.costUsd,
      windowSeconds,
      replicaSeconds: sums.replicaSeconds,
      meanCpu: sums.cpuSeconds / sums.replicaSeconds,
      cpuUtilization:
        sums.observedSeconds === 0 ? null : sums.cpuBusySeconds / sums.observedSeconds,
      requests: sums.requests,
      peakConcurrency: input.demand.get(endpoint)?.peakConcurrency ?? 0,
      minReplicas: facts.minReplicas,
      pooled: facts.pooled,
      llm: facts.llm,
      acceleratorSeconds: sums.acceleratorSeconds,
    });
  }
  return {
    by: input.by,
    since: new Date(input.sinceMs).toISOString(),
    until: new Date(input.untilMs).toISOString(),
    currency: 'USD',
    rows,
    total: toRow('total', total),
    unpricedAcceleratorTypes: [...unpriced].sort(),
    hints: rightSizingHints(summaries, prices),
  };
}
