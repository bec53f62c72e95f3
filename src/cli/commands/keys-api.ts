// `kiln keys api ...`: API keys for the gateway (data plane). Unlike signing keys, these are
// made by the platform: it keeps only a digest, so the key is printed once, at creation.

import type { Command } from 'commander';
import type { ApiKey, CreatedApiKey } from '../api-types.ts';
import { withClient } from '../context.ts';
import { usageError } from '../errors.ts';
import { apiPath } from '../http-client.ts';
import { emit, type JsonOption } from '../output.ts';
import { apiKeysTable, createdApiKeyText, scopeText } from './endpoints-render.ts';

export function registerApiKeyCommands(keys: Command): void {
  const api = keys
    .command('api')
    .description('manage API keys for calling endpoints through the gateway');

  api
    .command('create')
    .description('create an API key for one endpoint or for every endpoint of a team')
    .argument('<name>', 'key name')
    .option('--team <team>', 'the key may call every endpoint of this team')
    .option('--endpoint <endpoint>', 'the key may call this endpoint only')
    .option('--json', 'print JSON (includes the key)')
    .action(
      async (
        name: string,
        options: JsonOption & { team?: string; endpoint?: string },
        command: Command,
      ) => {
        const body = apiKeyBody(name, options);
        const key = await withClient(command, (client) =>
          client.post<CreatedApiKey>(apiPath('api-keys'), body),
        );
        emit(options, key, () => createdApiKeyText(key));
      },
    );

  api
    .command('list')
    .description('list API keys (never the keys themselves)')
    .option('--json', 'print JSON')
    .action(async (options: JsonOption, command: Command) => {
      const result = await withClient(command, (client) =>
        client.get<{ items: ApiKey[] }>(apiPath('api-keys')),
      );
      emit(options, result, () =>
        result.items.length === 0 ? 'no API keys\n' : apiKeysTable(result.items),
      );
    });

  api
    .command('revoke')
    .description('revoke an API key (refused by the gateway from then on)')
    .argument('<id>', 'key id (see `kiln keys api list`)')
    .option('--json', 'print JSON')
    .action(async (id: string, options: JsonOption, command: Command) => {
      const key = await withClient(command, (client) =>
        client.delete<ApiKey>(apiPath('api-keys', id)),
      );
      emit(options, key, () => `revoked API key ${key.id} (${key.name}, ${scopeText(key)})\n`);
    });
}

/** `{name, team}` or `{name, endpoint}`: exactly one scope, else a usage error. */
export function apiKeyBody(
  name: string,
  options: { readonly team?: string; readonly endpoint?: string },
): { name: string; team: string } | { name: string; endpoint: string } {
  if (options.team !== undefined && options.endpoint !== undefined)
    throw usageError('give --team or --endpoint, not both');
  if (options.team !== undefined) return { name, team: options.team };
  if (options.endpoint !== undefined) return { name, endpoint: options.endpoint };
  throw usageError(
    'an API key needs a scope: --team T or --endpoint E',
    'e.g. `kiln keys api create ci --endpoint fraud`',
  );
}
