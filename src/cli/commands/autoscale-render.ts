// Human text for `kiln autoscale`: an endpoint's scale state as a `key: value` block (policy,
// count, mode, the last decision and its reason, the signals it saw, start-up time, measured
// latency) and its recent events as a table. Pure string builders.

import type { ScaleEventView, ScaleStatusView } from '../api-types.ts';
import { renderKeyValues, renderTable, shortTime, type Cell } from '../output.ts';

function ms(value: number | null | undefined): string | null {
  if (value === null || value === undefined) return null;
  if (value >= 60_000 && value % 60_000 === 0) return `${value / 60_000}m`;
  if (value >= 1000) return `${Number((value / 1000).toFixed(2))}s`;
  return `${Number(value.toFixed(2))}ms`;
}

function number(value: number | null | undefined): Cell {
  return value === null || value === undefined ? null : Number(value.toFixed(2));
}

export function policyText(status: ScaleStatusView): string {
  const p = status.autoscale;
  if (p === null) return 'none (fixed count)';
  const signal = p.signal === 'custom' ? `custom ${p.customMetric ?? ''}` : p.signal;
  const parts = [
    `${p.minReplicas}..${p.maxReplicas} replicas`,
    p.signal === 'slo' && p.slo !== undefined
      ? `slo ${(p.slo.objective * 100).toFixed(2)} % within ${ms(p.slo.latencyMs) ?? ''}`
      : `${signal} target ${p.target}`,
    `stable ${ms(p.stableWindowMs)}`,
    `panic ${ms(p.panicWindowMs)} at ${p.panicThreshold}×`,
    `scale-down delay ${ms(p.scaleDownDelayMs)}`,
  ];
  if (p.minReplicas === 0 && p.scaleToZero !== undefined)
    parts.push(
      `to zero after ${ms(p.scaleToZero.idleMs)} idle (hold ${p.scaleToZero.queueLimit}, cold-start budget ${ms(p.scaleToZero.coldStartBudgetMs)})`,
    );
  if (p.predictive !== undefined) parts.push('predictive');
  return parts.join(', ');
}

/**
 * Why the count is what it is: the last decision's reason, unless a change came after it (a
 * policy set, a deploy, a wake): that change's reason, not a decision about the old policy.
 */
function currentReason(status: ScaleStatusView): string | null {
  const decision = status.lastDecision;
  const newest = status.events[0];
  if (decision === null) return status.reason;
  if (newest !== undefined && Date.parse(newest.at) > Date.parse(decision.at)) return status.reason;
  return decision.reason;
}

export function scaleStatusText(status: ScaleStatusView): string {
  const s = status.signals;
  const latency = status.latencyMs;
  const lines = renderKeyValues([
    ['endpoint', status.endpoint],
    ['policy', policyText(status)],
    [
      'replicas',
      `${status.replicas} wanted, ${status.readyReplicas} ready, ${status.startingReplicas} starting`,
    ],
    ['mode', status.mode],
    ['reason', currentReason(status)],
    ['decided', status.lastDecision === null ? null : shortTime(status.lastDecision.at)],
    [
      'signals',
      s === null
        ? null
        : [
            `concurrency ${number(s.concurrency)}`,
            `qps ${number(s.qps)}`,
            `held ${s.held}`,
            `queue ${s.queueDepth === null ? '-' : number(s.queueDepth)}`,
            `cpu ${s.cpu === null ? '-' : number(s.cpu)}`,
            ...Object.entries(s.custom).map(([k, v]) => `${k} ${number(v)}`),
          ].join(', '),
    ],
    ['last demand', status.lastDemandAt === null ? 'never' : shortTime(status.lastDemandAt)],
    [
      'start-up',
      `${ms(status.startup.usedMs)} used (measured p90 ${ms(status.startup.measuredP90Ms) ?? '-'} over ${status.startup.samples})`,
    ],
    [
      'latency',
      latency.count === 0
        ? `no answers since ${shortTime(latency.since)}`
        : `p50 ${ms(latency.p50)}, p95 ${ms(latency.p95)}, p99 ${ms(latency.p99)} over ${latency.count} answers since ${shortTime(latency.since)}`,
    ],
  ]);
  if (status.events.length === 0) return lines;
  return `${lines}\n${scaleEventsTable(status.events)}`;
}

export function scaleEventsTable(events: readonly ScaleEventView[]): string {
  return renderTable(
    [
      'at',
      'kind',
      { header: 'from', align: 'right' },
      { header: 'to', align: 'right' },
      'mode',
      'reason',
    ],
    events.map((e) => [shortTime(e.at), e.kind, e.from, e.to, e.mode, e.reason]),
  );
}
