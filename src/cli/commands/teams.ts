// `kiln teams ...`: per-team rate limits. Every gateway keeps a token bucket per team
// (`--rps` sustained, `--burst` at once) and answers 429 KILN_RATE_LIMITED beyond it.

import { InvalidArgumentError, Option, type Command } from 'commander';
import type { TeamLimit } from '../api-types.ts';
import { integerOption, parseNumber } from '../arguments.ts';
import { withClient } from '../context.ts';
import { apiPath } from '../http-client.ts';
import { emit, renderTable, shortTime, type JsonOption } from '../output.ts';

export function registerTeamsCommands(program: Command): void {
  const teams = program.command('teams').description('per-team rate limits at the gateway');

  teams
    .command('limit')
    .description("set (or change) a team's request rate at each gateway")
    .argument('<team>', 'team name')
    .addOption(
      new Option('--rps <n>', 'sustained requests per second (> 0, may be fractional)')
        .argParser(positiveNumberOption)
        .makeOptionMandatory(),
    )
    .addOption(
      new Option('--burst <n>', 'requests accepted at once after a quiet spell (>= 1)')
        .argParser(integerOption(1))
        .makeOptionMandatory(),
    )
    .option('--json', 'print JSON')
    .action(
      async (
        team: string,
        options: JsonOption & { rps: number; burst: number },
        command: Command,
      ) => {
        const body = { requestsPerSecond: options.rps, burst: options.burst };
        const limit = await withClient(command, (client) =>
          client.put<TeamLimit>(apiPath('teams', team, 'limits'), body),
        );
        emit(options, limit, () => `team ${limit.team}: ${limitText(limit)}\n`);
      },
    );

  teams
    .command('limits')
    .description('list team rate limits (teams not listed are unlimited)')
    .option('--json', 'print JSON')
    .action(async (options: JsonOption, command: Command) => {
      const result = await withClient(command, (client) =>
        client.get<{ items: TeamLimit[] }>(apiPath('teams', 'limits')),
      );
      emit(options, result, () =>
        result.items.length === 0 ? 'no team limits\n' : teamLimitsTable(result.items),
      );
    });

  teams
    .command('unlimit')
    .description("remove a team's rate limit")
    .argument('<team>', 'team name')
    .option('--json', 'print JSON')
    .action(async (team: string, options: JsonOption, command: Command) => {
      const removed = await withClient(command, (client) =>
        client.delete<TeamLimit>(apiPath('teams', team, 'limits')),
      );
      emit(options, removed, () => `team ${removed.team}: no rate limit\n`);
    });
}

export function limitText(limit: TeamLimit): string {
  return `${limit.requestsPerSecond} requests/s, burst ${limit.burst}`;
}

export function teamLimitsTable(limits: readonly TeamLimit[]): string {
  return renderTable(
    ['team', { header: 'rps', align: 'right' }, { header: 'burst', align: 'right' }, 'updated'],
    limits.map((l) => [l.team, l.requestsPerSecond, l.burst, shortTime(l.updatedAt)]),
  );
}

function positiveNumberOption(text: string): number {
  const value = parseNumber(text);
  if (value === undefined || value <= 0) {
    throw new InvalidArgumentError('expected a number greater than 0');
  }
  return value;
}
