// `kiln endpoints ...`: list, show and delete serving endpoints (`kiln deploy` creates and
// updates them), and the history of their traffic changes. Renderings in endpoints-render.ts.

import type { Command } from 'commander';
import type { Endpoint, Page, TrafficEvent } from '../api-types.ts';
import { integerOption } from '../arguments.ts';
import { withClient } from '../context.ts';
import { apiPath } from '../http-client.ts';
import { emit, type JsonOption } from '../output.ts';
import { endpointDetails, endpointsTable } from './endpoints-render.ts';
import { sinceTime } from './tokens.ts';
import { historyTable } from './traffic-render.ts';

export function registerEndpointsCommands(program: Command): void {
  const endpoints = program
    .command('endpoints')
    .description('list, inspect and delete serving endpoints');

  endpoints
    .command('list')
    .description('list endpoints')
    .option('--json', 'print JSON')
    .action(async (options: JsonOption, command: Command) => {
      const result = await withClient(command, (client) =>
        client.get<{ items: Endpoint[] }>(apiPath('endpoints')),
      );
      emit(options, result, () =>
        result.items.length === 0
          ? 'no endpoints (create one with `kiln deploy`)\n'
          : endpointsTable(result.items),
      );
    });

  endpoints
    .command('show')
    .description('show an endpoint, its status and its replicas')
    .argument('<name>', 'endpoint name')
    .option('--json', 'print JSON')
    .action(async (name: string, options: JsonOption, command: Command) => {
      const endpoint = await withClient(command, (client) =>
        client.get<Endpoint>(apiPath('endpoints', name)),
      );
      emit(options, endpoint, () => endpointDetails(endpoint));
    });

  endpoints
    .command('history')
    .description("an endpoint's traffic changes, newest first: who, when, what and why")
    .argument('<name>', 'endpoint name')
    .option('--limit <n>', 'at most this many events', integerOption(1), 50)
    .option('--since <when>', 'only changes since: a duration back (30m, 12h, 7d) or an ISO time')
    .option('--json', 'print JSON')
    .action(
      async (
        name: string,
        options: JsonOption & { limit: number; since?: string },
        command: Command,
      ) => {
        const since =
          options.since === undefined ? undefined : sinceTime(options.since, Date.now());
        const result = await withClient(command, (client) =>
          client.listAll<TrafficEvent>(
            apiPath('endpoints', name, 'history'),
            { since },
            options.limit,
          ),
        );
        emit(options, result satisfies Page<TrafficEvent>, () =>
          result.items.length === 0
            ? `no traffic changes for ${name}\n`
            : historyTable(result.items),
        );
      },
    );

  endpoints
    .command('delete')
    .description('delete an endpoint and stop its workers')
    .argument('<name>', 'endpoint name')
    .option('--json', 'print JSON')
    .action(async (name: string, options: JsonOption, command: Command) => {
      const endpoint = await withClient(command, (client) =>
        client.delete<Endpoint>(apiPath('endpoints', name)),
      );
      emit(
        options,
        endpoint,
        () => `deleted endpoint ${endpoint.name} (was ${endpoint.model} v${endpoint.version})\n`,
      );
    });
}
