// `kiln policy ...`: the signing policy — whether versions must carry a signature by a
// trusted key, globally or per team (a team's own setting overrides the global one).

import { Option, type Command } from 'commander';
import type { Policy } from '../api-types.ts';
import { withClient } from '../context.ts';
import { emit, renderKeyValues, renderTable, type JsonOption } from '../output.ts';

export function registerPolicyCommands(program: Command): void {
  const policy = program.command('policy').description('show or change the signing policy');

  policy
    .command('show')
    .description('show the signing policy')
    .option('--json', 'print JSON')
    .action(async (options: JsonOption, command: Command) => {
      const result = await withClient(command, (client) => client.get<Policy>('/api/v1/policy'));
      emit(options, result, () => policyText(result));
    });

  policy
    .command('set')
    .description('require (or stop requiring) signed manifests, globally or for one team')
    .addOption(
      new Option('--require-signature <bool>', 'true or false')
        .choices(['true', 'false'])
        .makeOptionMandatory(),
    )
    .option('--team <team>', 'set it for this team only')
    .option('--json', 'print JSON')
    .action(
      async (
        options: JsonOption & { requireSignature: 'true' | 'false'; team?: string },
        command: Command,
      ) => {
        const body = {
          requireSignature: options.requireSignature === 'true',
          ...(options.team === undefined ? {} : { team: options.team }),
        };
        const result = await withClient(command, (client) =>
          client.put<Policy>('/api/v1/policy/signing', body),
        );
        emit(options, result, () => policyText(result));
      },
    );
}

export function policyText(policy: Policy): string {
  const { requireSignature, teams } = policy.signing;
  let text = renderKeyValues([
    ['require signature', requireSignature ? 'yes (all teams)' : 'no (all teams)'],
  ]);
  const entries = Object.entries(teams).sort(([a], [b]) => (a < b ? -1 : 1));
  if (entries.length > 0) {
    text +=
      '\n' +
      renderTable(
        ['team', 'require signature'],
        entries.map(([team, p]) => [team, p.requireSignature ? 'yes' : 'no']),
      );
  }
  return text;
}
