// Human text for `kiln slo status`: the objectives, each SLI's burn rate per window and the
// 30-day budget left, the alerts' states and the recent transitions. Pure string builders.

import type { SloStatus } from '../../control/observability/slo/slo-service.ts';
import { renderKeyValues, renderTable, shortTime, type Cell } from '../output.ts';

function objectives(status: SloStatus): string {
  const slo = status.slo;
  const parts: string[] = [];
  if (slo.availability !== null) parts.push(`availability ${slo.availability}`);
  if (slo.latencyMs !== null) {
    parts.push(`latency ${slo.latencyTarget ?? ''} within ${slo.latencyMs} ms`);
  }
  if (slo.driftPsiCeiling !== null) parts.push(`drift PSI <= ${slo.driftPsiCeiling}`);
  return parts.join(', ');
}

function percent(value: number | null | undefined): Cell {
  return value === null || value === undefined ? null : `${(value * 100).toFixed(1)} %`;
}

export function sloStatusText(status: SloStatus): string {
  const head = renderKeyValues([
    ['endpoint', status.endpoint],
    ['objectives', objectives(status)],
    ['webhooks', status.slo.webhooks.length === 0 ? null : status.slo.webhooks.join(', ')],
    ['evaluated', shortTime(status.evaluatedAt)],
  ]);
  const windows = status.slis[0]?.windows.map((w) => w.window) ?? [];
  const slis =
    status.slis.length === 0
      ? ''
      : '\nburn rate per window (alerts: 1h & 5m > 14.4 page, 6h & 30m > 6 ticket)\n' +
        renderTable(
          [
            'sli',
            { header: 'objective', align: 'right' },
            ...windows.map((w) => ({ header: w, align: 'right' as const })),
            { header: 'budget left (30d)', align: 'right' },
          ],
          status.slis.map((sli) => [
            sli.sli,
            sli.objective,
            ...sli.windows.map((w) => (w.total === 0 ? null : w.burnRate.toFixed(2))),
            percent(status.budgets.find((b) => b.sli === sli.sli)?.remaining),
          ]),
        );
  const alerts =
    status.alerts.length === 0
      ? '\nno alert has fired\n'
      : '\n' +
        renderTable(
          ['alert', 'severity', 'state', 'since', 'summary'],
          status.alerts.map((a) => [a.alert, a.severity, a.state, shortTime(a.since), a.summary]),
        );
  const events =
    status.events.length === 0
      ? ''
      : '\nrecent transitions\n' +
        renderTable(
          ['at', 'alert', 'state'],
          status.events.map((e) => [shortTime(e.at), e.alert, e.state]),
        );
  return head + slis + alerts + events;
}
