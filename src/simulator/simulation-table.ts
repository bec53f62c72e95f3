// The side-by-side text table of a simulation (`kiln simulate`, `npm run bench -- autoscale`):
// one header line about the run, then one row per policy, columns aligned, numbers right.

import type { PolicyReport, SimulationReport } from './simulation-report.ts';

interface Column {
  readonly header: string;
  readonly cell: (policy: PolicyReport) => string;
  readonly left?: boolean;
}

const columns: readonly Column[] = [
  { header: 'POLICY', cell: (p) => p.name, left: true },
  { header: 'INSTANCE', cell: (p) => p.instanceType, left: true },
  { header: 'SLO MET', cell: (p) => percent(p.sloAttainment) },
  { header: 'P50 MS', cell: (p) => milliseconds(p.p50Ms) },
  { header: 'P95 MS', cell: (p) => milliseconds(p.p95Ms) },
  { header: 'P99 MS', cell: (p) => milliseconds(p.p99Ms) },
  { header: 'REPLICA-S', cell: (p) => p.replicaSeconds.toFixed(0) },
  { header: 'MEAN REPL', cell: (p) => p.meanReplicas.toFixed(2) },
  { header: 'MAX REPL', cell: (p) => String(p.maxReplicas) },
  { header: 'COST USD', cell: (p) => p.costUsd.toFixed(2) },
  { header: 'UP', cell: (p) => String(p.scaleUps) },
  { header: 'DOWN', cell: (p) => String(p.scaleDowns) },
  { header: 'COLD', cell: (p) => String(p.coldStarts) },
  { header: 'PANIC S', cell: (p) => p.panicSeconds.toFixed(0) },
];

/** The report as text: a summary line, the table, and a legend line. Ends with a newline. */
export function formatSimulationTable(report: SimulationReport): string {
  const summary =
    `trace ${report.durationSeconds.toFixed(0)} s, ${report.requests} requests, ` +
    `SLO ${report.sloMs} ms, ${report.concurrencyPerReplica} slot(s) per replica, ` +
    `mean service ${report.meanServiceMs.toFixed(1)} ms, seed ${report.seed}`;
  const rows = [
    columns.map((c) => c.header),
    ...report.policies.map((policy) => columns.map((c) => c.cell(policy))),
  ];
  const widths = columns.map((_, i) => Math.max(...rows.map((row) => [...(row[i] ?? '')].length)));
  const lines = rows.map((row) =>
    row
      .map((text, i) => {
        const pad = ' '.repeat((widths[i] ?? 0) - [...text].length);
        return columns[i]?.left === true ? text + pad : pad + text;
      })
      .join('  ')
      .trimEnd(),
  );
  const legend =
    'SLO MET: answered within the SLO (held and queued time included); REPLICA-S: replicas ' +
    'billed (starting, ready, draining) x seconds; COLD: wakes from zero';
  return `${summary}\n${lines.join('\n')}\n${legend}\n`;
}

function percent(share: number): string {
  return `${(share * 100).toFixed(3)}%`;
}

function milliseconds(value: number | null): string {
  if (value === null) return '-';
  return value >= 100 ? value.toFixed(0) : value.toFixed(1);
}
