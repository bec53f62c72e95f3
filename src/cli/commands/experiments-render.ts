// How `kiln experiments` prints experiments and their report (pure string builders).

import type { ExperimentReport, MetricReport } from '../../control/traffic/experiment-report.ts';
import type { ExperimentRecord } from '../../store/traffic-records.ts';
import { renderKeyValues, renderTable, shortTime } from '../output.ts';

export function variantsText(experiment: ExperimentRecord): string {
  return experiment.variants.map((v) => `${v.model}:${v.version} ${v.weight}%`).join(', ');
}

export function experimentsTable(experiments: readonly ExperimentRecord[]): string {
  return renderTable(
    ['id', 'name', 'endpoint', 'state', 'variants', 'created'],
    experiments.map((e) => [
      e.id,
      e.name,
      e.endpoint,
      e.state,
      variantsText(e),
      shortTime(e.createdAt),
    ]),
  );
}

export function experimentDetails(experiment: ExperimentRecord): string {
  return renderKeyValues([
    ['id', experiment.id],
    ['name', experiment.name],
    ['endpoint', experiment.endpoint],
    ['state', experiment.state],
    ['variants', variantsText(experiment)],
    ['control', controlOf(experiment)],
    ['key path', experiment.keyPath ?? '(kiln-user header only)'],
    ['created', `${shortTime(experiment.createdAt)} by ${experiment.createdBy}`],
    ['stopped', shortTime(experiment.stoppedAt)],
  ]);
}

function controlOf(experiment: ExperimentRecord): string {
  const first = experiment.variants[0];
  return first === undefined ? '-' : `${first.model}:${first.version}`;
}

export function reportText(report: ExperimentReport): string {
  const e = report.experiment;
  const since =
    e.state === 'running'
      ? `running since ${shortTime(e.createdAt)}`
      : `${shortTime(e.createdAt)} to ${shortTime(e.stoppedAt)}`;
  const parts = [
    `experiment ${e.id} "${e.name}" on endpoint ${e.endpoint} (${since}; control ${report.control})\n`,
    '\ntraffic since the start:\n',
    renderTable(
      [
        'variant',
        { header: 'weight', align: 'right' },
        { header: 'requests', align: 'right' },
        { header: 'share', align: 'right' },
        { header: 'errors', align: 'right' },
        { header: 'error rate', align: 'right' },
        { header: 'p50 ms', align: 'right' },
        { header: 'p99 ms', align: 'right' },
      ],
      report.variants.map((v) => [
        v.variant,
        `${v.weight}%`,
        v.requests,
        percent(v.share),
        v.errors,
        percent(v.errorRate),
        figure(v.latencyMs?.p50 ?? null),
        figure(v.latencyMs?.p99 ?? null),
      ]),
    ),
  ];
  if (report.metrics.length === 0) {
    parts.push(
      '\nno outcomes reported yet (`kiln experiments outcomes ID` or POST .../outcomes)\n',
    );
  }
  for (const metric of report.metrics) parts.push('\n', metricText(report, metric));
  return parts.join('');
}

function metricText(report: ExperimentReport, metric: MetricReport): string {
  const confidence = `${figure(report.confidence * 100)}% CI`;
  const header =
    `metric ${metric.metric} (${metric.kind}; ` +
    `${metric.kind === 'rate' ? 'two-proportion z-test' : "Welch's t-test"}, ` +
    `alpha ${report.alpha}, sample size at power ${report.power}):\n`;
  const rows = metric.variants.map((summary) => {
    const comparison = metric.comparisons.find((c) => c.variant === summary.variant);
    const base = [summary.variant, summary.count, figure(summary.mean)];
    if (comparison === undefined) return [...base, '(control)'];
    if (!comparison.ok) return [...base, comparison.problem];
    const size = comparison.sampleSize;
    return [
      ...base,
      signed(comparison.effect),
      comparison.relativeLift === null ? '-' : `${signed(comparison.relativeLift * 100)}%`,
      `${metric.kind === 'rate' ? 'h' : 'd'} ${signed(comparison.standardizedEffect)}`,
      `[${figure(comparison.interval[0])}, ${figure(comparison.interval[1])}]`,
      comparison.degreesOfFreedom === null
        ? `z ${figure(comparison.statistic)}`
        : `t ${figure(comparison.statistic)}, df ${figure(comparison.degreesOfFreedom)}`,
      figure(comparison.pValue),
      comparison.significant ? 'yes' : 'no',
      size.ok
        ? `${size.perGroup} (${size.remainingPerGroup} more; ${size.basis} ${figure(size.effect)})`
        : size.problem,
    ];
  });
  return (
    header +
    renderTable(
      [
        'variant',
        { header: 'n', align: 'right' },
        { header: metric.kind === 'rate' ? 'rate' : 'mean', align: 'right' },
        'effect',
        'lift',
        'std effect',
        confidence,
        'statistic',
        'p-value',
        'significant',
        'needed per group',
      ],
      rows,
    )
  );
}

/** Four significant digits; tiny or huge values in exponent form; null as -. */
export function figure(value: number | null): string {
  if (value === null) return '-';
  if (value === 0) return '0';
  const magnitude = Math.abs(value);
  if (magnitude < 1e-3 || magnitude >= 1e7) return value.toExponential(2);
  return String(Number(value.toPrecision(4)));
}

function signed(value: number): string {
  return value > 0 ? `+${figure(value)}` : figure(value);
}

function percent(share: number | null): string {
  return share === null ? '-' : `${figure(share * 100)}%`;
}
