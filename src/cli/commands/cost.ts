// `kiln cost report [--by team|endpoint] [--since 7d] [--until T] [--csv | --json]`: the
// chargeback report (docs/cost.md): replica time priced by the platform's price table, with
// requests, LLM tokens, cost per 1000 requests and right-sizing hints.

import { Option, type Command } from 'commander';
import type { CostReport } from '../../observability/cost/cost-report.ts';
import { costReportCsv } from '../../observability/cost/cost-report-csv.ts';
import type { PriceTable } from '../../observability/cost/price-table.ts';
import { withClient } from '../context.ts';
import { apiPath } from '../http-client.ts';
import { emit, renderTable, writeOut, type JsonOption } from '../output.ts';
import { sinceTime } from './tokens.ts';

export type CostAnswer = CostReport & {
  readonly prices: { readonly source: string | null; readonly table: PriceTable };
};

interface ReportOptions extends JsonOption {
  readonly by: 'team' | 'endpoint';
  readonly since: string;
  readonly until?: string;
  readonly csv?: boolean;
}

export function registerCostCommands(program: Command): void {
  const cost = program.command('cost').description('what endpoints cost, by team or endpoint');

  cost
    .command('report')
    .description('chargeback: replica time priced, requests, tokens and right-sizing hints')
    .addOption(
      new Option('--by <group>', 'group by team or endpoint')
        .choices(['team', 'endpoint'])
        .default('team'),
    )
    .option('--since <when>', 'a duration back from now (12h, 7d, 30d) or an ISO 8601 time', '7d')
    .option('--until <when>', 'end of the window (default: now)')
    .option('--csv', 'print CSV (one line per team or endpoint) for spreadsheets')
    .option('--json', 'print JSON')
    .action(async (options: ReportOptions, command: Command) => {
      const nowMs = Date.now();
      const report = await withClient(command, (client) =>
        client.get<CostAnswer>(apiPath('cost'), {
          by: options.by,
          since: sinceTime(options.since, nowMs),
          ...(options.until === undefined ? {} : { until: sinceTime(options.until, nowMs) }),
        }),
      );
      if (options.csv === true && options.json !== true) {
        writeOut(costReportCsv(report));
        return;
      }
      emit(options, report, () => costReportText(report));
    });
}

function usd(value: number | null): string {
  if (value === null) return '-';
  return value >= 100 ? value.toFixed(0) : value >= 1 ? value.toFixed(2) : value.toFixed(4);
}

function amount(value: number): string {
  return value >= 100 ? value.toFixed(0) : value.toFixed(2);
}

export function costReportText(report: CostAnswer): string {
  let text = `cost by ${report.by}, ${report.since} to ${report.until} (USD; prices: ${
    report.prices.source ?? 'defaults'
  })\n\n`;
  const rows = [...report.rows, report.total];
  text += renderTable(
    [
      report.by,
      ...(report.by === 'endpoint' ? ['team'] : []),
      { header: 'cost', align: 'right' },
      { header: 'replica-h', align: 'right' },
      { header: 'cpu-h', align: 'right' },
      { header: 'gpu-h', align: 'right' },
      { header: 'spot', align: 'right' },
      { header: 'requests', align: 'right' },
      { header: 'tokens', align: 'right' },
      { header: '$/1k req', align: 'right' },
      { header: 'cpu use', align: 'right' },
    ],
    rows.map((r) => [
      r.key,
      ...(report.by === 'endpoint' ? [r.key === 'total' ? '' : r.team] : []),
      usd(r.costUsd),
      amount(r.replicaHours),
      amount(r.cpuHours),
      amount(r.acceleratorHours),
      `${(r.spotShare * 100).toFixed(0)}%`,
      r.requests,
      r.promptTokens + r.completionTokens,
      usd(r.usdPer1kRequests),
      r.cpuUtilization === null ? '-' : `${(r.cpuUtilization * 100).toFixed(0)}%`,
    ]),
  );
  if (report.unpricedAcceleratorTypes.length > 0)
    text += `\nnot in the price table (charged 0): ${report.unpricedAcceleratorTypes.join(', ')}\n`;
  if (report.hints.length > 0) {
    text += '\nRight-sizing hints\n';
    text += renderTable(
      ['endpoint', 'hint', { header: 'saves', align: 'right' }, 'why'],
      report.hints.map((h) => [h.endpoint, h.kind, usd(h.savingsUsd), h.message]),
    );
  }
  return text;
}
