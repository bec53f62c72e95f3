// `kiln keys ...`: ed25519 signing keys. Private keys are made and kept here, on the client
// (`<home>/keys/NAME.key`, mode 0600); the platform only ever sees public keys it trusts.
// `kiln keys api ...` (gateway API keys) lives in keys-api.ts.

import { basename, join } from 'node:path';
import type { Command } from 'commander';
import { generateSigningKeyPair } from '../../registry/signing.ts';
import type { TrustedKey } from '../api-types.ts';
import { homeOf, withClient } from '../context.ts';
import { CliError, usageError } from '../errors.ts';
import { readPublicKey, writeKeyFiles } from '../local-files.ts';
import { apiPath, type KilnClient } from '../http-client.ts';
import { emit, renderKeyValues, renderTable, shortTime, type JsonOption } from '../output.ts';
import { registerApiKeyCommands } from './keys-api.ts';

/** Key names become file names, so they follow the API's name rules (docs/api.md). */
const namePattern = /^[a-z0-9][a-z0-9._-]{0,62}$/;

export function registerKeysCommands(program: Command): void {
  const keys = program
    .command('keys')
    .description('manage manifest signing keys (and, under `keys api`, gateway API keys)');

  keys
    .command('create')
    .description('generate an ed25519 key pair: <dir>/NAME.key (private, 0600) and NAME.pub')
    .argument('<name>', 'key name')
    .option('--dir <dir>', 'where to write the key files (default: <home>/keys)')
    .option('--trust', 'also register the public key as trusted on the platform')
    .option('--team <team>', 'with --trust: trust it for this team only')
    .option('--json', 'print JSON')
    .action(
      async (
        name: string,
        options: JsonOption & { dir?: string; trust?: boolean; team?: string },
        command: Command,
      ) => {
        if (!namePattern.test(name))
          throw usageError(
            `invalid key name "${name}"`,
            'use 1–63 of a-z 0-9 . _ - starting with a letter or digit',
          );
        if (options.team !== undefined && options.trust !== true)
          throw usageError('--team needs --trust');
        const dir = options.dir ?? join(homeOf(command), 'keys');
        const pair = generateSigningKeyPair();
        const privateKeyPath = join(dir, `${name}.key`);
        const publicKeyPath = join(dir, `${name}.pub`);
        await writeKeyFiles(
          dir,
          privateKeyPath,
          pair.privateKeyPem,
          publicKeyPath,
          pair.publicKeyPem,
        );
        let trusted: Awaited<ReturnType<typeof trustKey>> | null = null;
        if (options.trust === true) {
          try {
            trusted = await withClient(command, (client) =>
              trustKey(client, name, pair.publicKeyPem, options.team),
            );
          } catch (error) {
            // The key pair is written; only the trust step failed: say so, and how to finish.
            if (error instanceof CliError) {
              const team = options.team === undefined ? '' : ` --team ${options.team}`;
              throw new CliError(error.code, `${error.message} (the key pair was written)`, {
                exitCode: error.exitCode,
                ...(error.status === undefined ? {} : { status: error.status }),
                hint: `the keys are in ${dir}; trust the public key with \`kiln keys trust ${publicKeyPath}${team}\` once the platform is reachable`,
                cause: error,
              });
            }
            throw error;
          }
        }
        const result = { keyId: pair.keyId, name, privateKeyPath, publicKeyPath, trusted };
        emit(options, result, () =>
          renderKeyValues([
            ['key id', pair.keyId],
            ['private key', privateKeyPath],
            ['public key', publicKeyPath],
            [
              'trusted',
              trusted === null
                ? 'no (run `kiln keys trust ' + publicKeyPath + '`)'
                : `yes${trusted.team === null ? '' : ` (team ${trusted.team})`}`,
            ],
          ]),
        );
      },
    );

  keys
    .command('trust')
    .description('trust a public key (PEM) for verifying signed manifests')
    .argument('<pubfile>', 'public key file (SPKI PEM), e.g. keys/release.pub')
    .option('--name <name>', 'key name (default: the file name without .pub)')
    .option('--team <team>', "trust it for this team's models only")
    .option('--json', 'print JSON')
    .action(
      async (
        file: string,
        options: JsonOption & { name?: string; team?: string },
        command: Command,
      ) => {
        const pem = await readPublicKey(file);
        const name = options.name ?? basename(file).replace(/\.pub$/, '');
        const key = await withClient(command, (client) =>
          trustKey(client, name, pem, options.team),
        );
        emit(
          options,
          key,
          () =>
            `trusted key ${key.keyId} (${key.name}${key.team === null ? ', all teams' : `, team ${key.team}`})\n`,
        );
      },
    );

  keys
    .command('list')
    .description('list trusted keys')
    .option('--json', 'print JSON')
    .action(async (options: JsonOption, command: Command) => {
      const result = await withClient(command, (client) =>
        client.get<{ items: TrustedKey[] }>(apiPath('trusted-keys')),
      );
      emit(options, result, () =>
        result.items.length === 0
          ? 'no trusted keys\n'
          : renderTable(
              ['key id', 'name', 'team', 'created'],
              result.items.map((k) => [k.keyId, k.name, k.team ?? '(all)', shortTime(k.createdAt)]),
            ),
      );
    });

  keys
    .command('revoke')
    .description('stop trusting a key')
    .argument('<keyid>', 'key id (16 hex characters)')
    .option('--json', 'print JSON')
    .action(async (keyId: string, options: JsonOption, command: Command) => {
      const key = await withClient(command, (client) =>
        client.delete<TrustedKey>(apiPath('trusted-keys', keyId)),
      );
      emit(options, key, () => `revoked key ${key.keyId} (${key.name})\n`);
    });

  registerApiKeyCommands(keys);
}

async function trustKey(
  client: KilnClient,
  name: string,
  publicKey: string,
  team: string | undefined,
): Promise<TrustedKey> {
  return client.post<TrustedKey>(apiPath('trusted-keys'), {
    name,
    publicKey,
    ...(team === undefined ? {} : { team }),
  });
}
