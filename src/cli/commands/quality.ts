// `kiln quality report ENDPOINT [--slice KEY] [--since 24h]`: model quality from outcomes
// joined to predictions (issue 15, D; docs/outcomes.md): accuracy, AUC and log-loss for
// classifiers, MAE and RMSE for regressors, overall, per version and per slice value.

import type { Command } from 'commander';
import type { QualityReport, VersionQuality } from '../../control/observability/quality-service.ts';
import type { QualityFigures } from '../../observability/quality/quality-metrics.ts';
import { withClient } from '../context.ts';
import { apiPath } from '../http-client.ts';
import { emit, type JsonOption } from '../output.ts';

export function registerQualityCommands(program: Command): void {
  const quality = program
    .command('quality')
    .description('model quality from outcomes joined to predictions');

  quality
    .command('report')
    .description('accuracy / AUC / log-loss or MAE / RMSE per version (and per slice value)')
    .argument('<endpoint>', 'endpoint name')
    .option('--slice <key>', 'also per value of this slice key (the endpoint’s quality.sliceKey)')
    .option('--since <when>', 'predictions made since: 30m, 24h, 7d or an ISO time', '24h')
    .option('--json', 'print JSON')
    .action(
      async (
        endpoint: string,
        options: JsonOption & { slice?: string; since: string },
        command: Command,
      ) => {
        const report = await withClient(command, (client) =>
          client.get<QualityReport>(apiPath('endpoints', endpoint, 'quality'), {
            since: options.since,
            slice: options.slice,
          }),
        );
        emit(options, report, () => qualityText(report));
      },
    );
}

export function qualityText(report: QualityReport): string {
  const classification = report.task === 'classification';
  const head = classification
    ? ['', 'joined', 'accuracy', 'auc', 'log-loss']
    : ['', 'joined', 'mae', 'rmse'];
  const rows: string[][] = [head];
  const row = (label: string, q: QualityFigures): string[] =>
    q.task === 'classification'
      ? [label, String(q.count), figure(q.accuracy), figure(q.auc), figure(q.logLoss)]
      : [label, String(q.count), figure(q.mae), figure(q.rmse)];
  const versions = (list: readonly VersionQuality[], indent: string): void => {
    for (const v of list) rows.push(row(`${indent}${v.model}:${v.version}`, v));
  };
  rows.push(row('overall', report.overall));
  versions(report.versions, '  ');
  for (const slice of report.slices ?? []) {
    rows.push(
      row(`${report.sliceKey}=${slice.slice === '' ? '(none)' : slice.slice}`, slice.overall),
    );
    versions(slice.versions, '  ');
  }
  const widths = head.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  const table = rows
    .map((r) =>
      r
        .map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!)))
        .join('  '),
    )
    .join('\n');
  const threshold = classification ? `, threshold ${report.threshold}` : '';
  return `endpoint ${report.endpoint}: ${report.task}${threshold}, predictions since ${report.since}\n${table}\n`;
}

function figure(value: number | null): string {
  return value === null ? '-' : value.toFixed(4);
}
