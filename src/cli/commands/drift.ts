// `kiln drift report ENDPOINT [--slice KEY] [--since 1h]`: what the endpoint's workers served
// against its versions' reference profiles (skew) and against the previous window (drift),
// per feature and output, overall and per value of the slice key (docs/drift.md).

import type { Command } from 'commander';
import type { DriftReportBodyView } from '../../control/observability/drift/drift-view.ts';
import { withClient } from '../context.ts';
import { apiPath } from '../http-client.ts';
import { emit, type JsonOption } from '../output.ts';
import { driftReportText } from './drift-render.ts';

export function registerDriftCommands(program: Command): void {
  const drift = program.command('drift').description("an endpoint's input and output drift");

  drift
    .command('report')
    .description(
      'PSI and Kolmogorov-Smirnov per feature and output vs reference and previous window',
    )
    .argument('<endpoint>', 'endpoint name')
    .option('--slice <key>', 'also per value of this slice key (the configured one)')
    .option('--since <when>', 'a duration back from now (30m, 1h, 7d) or an ISO 8601 time', '1h')
    .option('--json', 'print JSON')
    .action(
      async (
        endpoint: string,
        options: JsonOption & { slice?: string; since: string },
        command: Command,
      ) => {
        const query: Record<string, string> = { since: options.since };
        if (options.slice !== undefined) query.slice = options.slice;
        const report = await withClient(command, (client) =>
          client.get<DriftReportBodyView>(apiPath('endpoints', endpoint, 'drift'), query),
        );
        emit(options, report, () => driftReportText(report));
      },
    );
}
