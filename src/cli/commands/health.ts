// `kiln health`: is the platform up, and which one is it.

import type { Command } from 'commander';
import type { Health } from '../api-types.ts';
import { withClient } from '../context.ts';
import { emit, renderKeyValues, type JsonOption } from '../output.ts';

export function registerHealthCommand(program: Command): void {
  program
    .command('health')
    .description("check the platform's health")
    .option('--json', 'print JSON')
    .action(async (options: JsonOption, command: Command) => {
      await withClient(command, async (client) => {
        const health = await client.get<Health>('/api/v1/health');
        emit(options, health, () =>
          renderKeyValues([
            ['status', health.status],
            ['url', client.baseUrl],
            ['version', health.version],
            ['store', health.store],
            ['home', health.home],
            ['gateway', health.gatewayUrl],
          ]),
        );
      });
    });
}
