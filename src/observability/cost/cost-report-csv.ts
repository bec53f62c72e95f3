// The cost report as CSV for chargeback spreadsheets (`kiln cost report --csv`,
// `GET /api/v1/cost?format=csv`): RFC 4180 (comma, CRLF, quotes doubled), one header line and
// one line per team or endpoint, figures unrounded so sums in the sheet match the report.

import type { CostReport, CostReportRow } from './cost-report.ts';

export const costCsvColumns = [
  'group',
  'key',
  'team',
  'since',
  'until',
  'cost_usd',
  'replica_hours',
  'cpu_hours',
  'memory_gib_hours',
  'accelerator_hours',
  'spot_share',
  'requests',
  'prompt_tokens',
  'completion_tokens',
  'usd_per_1k_requests',
  'usd_per_1m_tokens',
  'cpu_utilization',
] as const;

function field(value: string | number | null): string {
  if (value === null) return '';
  const text = String(value);
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

function line(report: CostReport, row: CostReportRow): string {
  return [
    report.by,
    row.key,
    row.team,
    report.since,
    report.until,
    row.costUsd,
    row.replicaHours,
    row.cpuHours,
    row.memoryGiBHours,
    row.acceleratorHours,
    row.spotShare,
    row.requests,
    row.promptTokens,
    row.completionTokens,
    row.usdPer1kRequests,
    row.usdPer1mTokens,
    row.cpuUtilization,
  ]
    .map(field)
    .join(',');
}

export function costReportCsv(report: CostReport): string {
  return [costCsvColumns.join(','), ...report.rows.map((row) => line(report, row))]
    .map((l) => `${l}\r\n`)
    .join('');
}
