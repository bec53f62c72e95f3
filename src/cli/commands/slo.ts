// `kiln slo status ENDPOINT` and `kiln slo rules [ENDPOINT]` (docs/slo.md): an endpoint's SLO
// as the control plane evaluates it, and the SLOs as Prometheus alerting rules for teams that
// alert from Prometheus. SLOs themselves are set with the endpoint's observability settings
// (deploy's config.observability.slo, `kiln observe set`).

import { writeFile } from 'node:fs/promises';
import type { Command } from 'commander';
import type { SloStatus } from '../../control/observability/slo/slo-service.ts';
import { withClient } from '../context.ts';
import { apiPath } from '../http-client.ts';
import { emit, writeOut, type JsonOption } from '../output.ts';
import { sloStatusText } from './slo-render.ts';

export function registerSloCommands(program: Command): void {
  const slo = program
    .command('slo')
    .description("endpoints' SLOs: burn rates, error budgets, alerts, Prometheus rules");

  slo
    .command('status')
    .description("an endpoint's SLIs per window, 30-day budgets, alert states and transitions")
    .argument('<endpoint>', 'endpoint name')
    .option('--json', 'print JSON')
    .action(async (endpoint: string, options: JsonOption, command: Command) => {
      const status = await withClient(command, (client) =>
        client.get<SloStatus>(apiPath('endpoints', endpoint, 'slo')),
      );
      emit(options, status, () => sloStatusText(status));
    });

  slo
    .command('rules')
    .description('the SLOs as Prometheus recording and alerting rules (YAML for rule_files)')
    .argument('[endpoint]', "one endpoint's (default: every endpoint with an SLO)")
    .option('--output <file>', 'write the rules to this file instead of stdout')
    .action(
      async (endpoint: string | undefined, options: { output?: string }, command: Command) => {
        const { rules } = await withClient(command, (client) =>
          client.get<{ rules: string }>(apiPath('slo', 'rules'), {
            format: 'json',
            ...(endpoint === undefined ? {} : { endpoint }),
          }),
        );
        if (options.output === undefined) writeOut(rules);
        else await writeFile(options.output, rules);
      },
    );
}
