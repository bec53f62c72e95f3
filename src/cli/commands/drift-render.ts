// The human form of `kiln drift report`: per version, per group (overall, then each slice
// value), one row per feature and output with PSI and KS against the reference profile and
// PSI against the previous window, and its status (DRIFT when flagged).

import type {
  DriftComparison,
  DriftGroup,
  DriftReportBodyView,
} from '../../control/observability/drift/drift-view.ts';
import { renderTable } from '../output.ts';

function fixed(value: number | null | undefined, digits = 3): string {
  return value === null || value === undefined ? '-' : value.toFixed(digits);
}

function pValue(value: number | null | undefined): string {
  if (value === null || value === undefined) return '-';
  return value < 0.0001 ? '<0.0001' : value.toFixed(4);
}

function statusText(status: DriftComparison['status'] | 'ok'): string {
  return status === 'drift' ? 'DRIFT' : status;
}

function groupText(group: DriftGroup): string {
  const title =
    `${group.slice === null ? 'overall' : `slice ${group.slice}`}: ${group.rows} rows in ` +
    `${group.windows} window${group.windows === 1 ? '' : 's'}` +
    (group.flagged > 0 ? `, ${group.flagged} flagged` : '');
  if (group.problem !== undefined) return `  ${title}\n  cannot compare: ${group.problem}\n`;
  const table = renderTable(
    [
      'name',
      'kind',
      { header: 'psi ref', align: 'right' },
      { header: 'ks d', align: 'right' },
      { header: 'ks p', align: 'right' },
      { header: 'psi prev', align: 'right' },
      'status',
    ],
    group.items.map((item) => [
      item.name,
      item.kind,
      fixed(item.vsReference?.psi),
      fixed(item.vsReference?.ksStatistic),
      pValue(item.vsReference?.ksPValue),
      fixed(item.vsPrevious?.psi),
      statusText(item.status),
    ]),
  );
  return `  ${title}\n${table.replace(/^/gm, '    ')}`;
}

export function driftReportText(report: DriftReportBodyView): string {
  const t = report.thresholds;
  const head =
    `${report.endpoint}: drift since ${report.since} (windows of ${report.windowMs / 1000} s` +
    (report.bySlice ? `, by ${report.sliceKey ?? '-'}` : '') +
    `)\nflagged: PSI >= ${t.psiAlert}, or KS p < ${t.ksPValue} with D >= ${t.ksMinStatistic}; ` +
    `warn: PSI >= ${t.psiWarn}; at least ${t.minCount} values a side\n`;
  if (report.versions.length === 0) return `${head}no sketches in this period\n`;
  const parts = report.versions.map(
    (version) =>
      `\n${version.model}:${version.version}` +
      (version.hasReference
        ? ''
        : ' (no reference profile: drift against the previous window only)') +
      '\n' +
      version.groups.map(groupText).join('\n'),
  );
  return head + parts.join('');
}
