// `kiln models ...`: the registry — list, show, versions, aliases, lineage, delete, verify.
// `register` lives in models-register.ts; renderings in models-render.ts.

import type { Command } from 'commander';
import {
  formatRef,
  integerOption,
  parseVersionNumber,
  parseVersionRef,
  refSegment,
  type VersionRef,
} from '../arguments.ts';
import type { AliasEntry, AliasMove, Model, ModelVersion, VerifyResult } from '../api-types.ts';
import { withClient } from '../context.ts';
import { CliError, usageError } from '../errors.ts';
import { apiPath, type KilnClient } from '../http-client.ts';
import { emit, humanSize, type JsonOption } from '../output.ts';
import { registerGoldenCommands } from './models-golden.ts';
import { registerProfileCommand } from './models-profile.ts';
import { aliasMoveText, registerRegisterCommand } from './models-register.ts';
import {
  aliasesTable,
  lineageTable,
  modelDetails,
  modelsTable,
  versionDetails,
  versionsTable,
} from './models-render.ts';

export function registerModelsCommands(program: Command): void {
  const models = program
    .command('models')
    .description('register, inspect and manage model versions');
  registerRegisterCommand(models);
  registerGoldenCommands(models);
  registerProfileCommand(models);

  models
    .command('list')
    .description('list models')
    .option('--team <team>', 'only models of this team')
    .option('--limit <n>', 'show at most N models', integerOption(1))
    .option('--json', 'print JSON')
    .action(async (options: JsonOption & { team?: string; limit?: number }, command: Command) => {
      const page = await withClient(command, (client) =>
        client.listAll<Model>(apiPath('models'), { team: options.team }, options.limit),
      );
      emit(options, page, () =>
        page.items.length === 0 ? 'no models\n' : modelsTable(page.items),
      );
    });

  models
    .command('show')
    .description('show a model, or one version with NAME:VERSION or NAME@ALIAS')
    .argument('<ref>', 'NAME, NAME:VERSION or NAME@ALIAS')
    .option('--json', 'print JSON')
    .action(async (text: string, options: JsonOption, command: Command) => {
      const ref = parseVersionRef(text);
      const segment = refSegment(ref);
      await withClient(command, async (client) => {
        if (segment === undefined) {
          const model = await client.get<Model>(apiPath('models', ref.model));
          emit(options, model, () => modelDetails(model));
        } else {
          const version = await client.get<ModelVersion>(
            apiPath('models', ref.model, 'versions', segment),
          );
          emit(options, version, () => versionDetails(version));
        }
      });
    });

  models
    .command('versions')
    .description("list a model's versions, newest first")
    .argument('<name>', 'model name')
    .option('--all', 'include deleted versions')
    .option('--json', 'print JSON')
    .action(async (name: string, options: JsonOption & { all?: boolean }, command: Command) => {
      const all = options.all === true;
      const page = await withClient(command, (client) =>
        client.listAll<ModelVersion>(
          apiPath('models', name, 'versions'),
          all ? { includeDeleted: true } : {},
        ),
      );
      emit(options, page, () =>
        page.items.length === 0
          ? `model ${name} has no versions\n`
          : versionsTable(page.items, all),
      );
    });

  models
    .command('alias')
    .description(
      'list aliases (NAME), set or move one (NAME ALIAS VERSION), or remove one (NAME ALIAS --delete)',
    )
    .argument('<name>', 'model name')
    .argument('[alias]', 'alias name')
    .argument('[version]', 'version the alias should point at')
    .option('--delete', 'remove the alias')
    .option('--json', 'print JSON')
    .action(
      async (
        name: string,
        alias: string | undefined,
        versionText: string | undefined,
        options: JsonOption & { delete?: boolean },
        command: Command,
      ) => {
        await withClient(command, (client) => runAlias(client, name, alias, versionText, options));
      },
    );

  models
    .command('lineage')
    .description('find versions by dataset, run or experiment')
    .option('--dataset <uri>', 'training dataset URI')
    .option('--dataset-version <version>', 'training dataset version (with another filter)')
    .option('--run <run>', 'training run')
    .option('--experiment <name>', 'experiment')
    .option('--json', 'print JSON')
    .action(
      async (
        options: JsonOption & {
          dataset?: string;
          datasetVersion?: string;
          run?: string;
          experiment?: string;
        },
        command: Command,
      ) => {
        if (
          options.dataset === undefined &&
          options.run === undefined &&
          options.experiment === undefined
        ) {
          throw usageError('lineage needs at least one of --dataset, --run, --experiment');
        }
        const query = {
          dataset: options.dataset,
          datasetVersion: options.datasetVersion,
          run: options.run,
          experiment: options.experiment,
        };
        const page = await withClient(command, (client) =>
          client.listAll<ModelVersion>(apiPath('lineage'), query),
        );
        emit(options, page, () =>
          page.items.length === 0 ? 'no matching versions\n' : lineageTable(page.items),
        );
      },
    );

  models
    .command('delete')
    .description('soft-delete a version (hidden from lists; its blobs are collected by gc)')
    .argument('<ref>', 'NAME:VERSION')
    .option('--json', 'print JSON')
    .action(async (text: string, options: JsonOption, command: Command) => {
      const ref = parseVersionRef(text);
      if (ref.kind !== 'version') throw usageError(`delete needs NAME:VERSION, got "${text}"`);
      const version = await withClient(command, (client) =>
        client.delete<ModelVersion>(apiPath('models', ref.model, 'versions', ref.version)),
      );
      emit(options, version, () => `deleted ${version.model} version ${version.version}\n`);
    });

  models
    .command('verify')
    .description("re-hash a version's files in the artifact store and re-check its signature")
    .argument('<ref>', 'NAME (latest), NAME:VERSION or NAME@ALIAS')
    .option('--json', 'print JSON')
    .action(async (text: string, options: JsonOption, command: Command) => {
      const ref = parseVersionRef(text);
      await withClient(command, async (client) => {
        const segment = refSegment(ref) ?? String(await latestVersion(client, ref));
        const result = await client.post<VerifyResult>(
          apiPath('models', ref.model, 'versions', segment, 'verify'),
        );
        const shown = ref.kind === 'latest' ? `${ref.model}:${segment}` : formatRef(ref);
        emit(
          options,
          result,
          () =>
            `verified ${shown}: ${result.files} ${result.files === 1 ? 'file' : 'files'}, ${humanSize(result.bytes)} intact, signature ${result.signature}\n`,
        );
      });
    });
}

async function runAlias(
  client: KilnClient,
  name: string,
  alias: string | undefined,
  versionText: string | undefined,
  options: JsonOption & { delete?: boolean },
): Promise<void> {
  if (alias === undefined) {
    if (options.delete === true) throw usageError('--delete needs an ALIAS');
    const result = await client.get<{ items: AliasEntry[] }>(apiPath('models', name, 'aliases'));
    emit(options, result, () =>
      result.items.length === 0 ? `model ${name} has no aliases\n` : aliasesTable(result.items),
    );
    return;
  }
  if (options.delete === true) {
    if (versionText !== undefined) throw usageError('give either VERSION or --delete, not both');
    const removed = await client.delete<{ alias: string; version: number }>(
      apiPath('models', name, 'aliases', alias),
    );
    emit(options, removed, () => `removed alias ${removed.alias} (was ${removed.version})\n`);
    return;
  }
  if (versionText === undefined)
    throw usageError('missing VERSION (or --delete to remove the alias)');
  const version = parseVersionNumber(versionText);
  if (version === undefined)
    throw usageError(`invalid version "${versionText}": expected a positive whole number`);
  const move = await client.put<AliasMove>(apiPath('models', name, 'aliases', alias), { version });
  emit(options, move, () => `alias ${aliasMoveText(move)}\n`);
}

async function latestVersion(client: KilnClient, ref: VersionRef): Promise<number> {
  const model = await client.get<Model>(apiPath('models', ref.model));
  if (model.latestVersion === null) {
    throw new CliError('KILN_VERSION_NOT_FOUND', `model ${ref.model} has no versions`, {
      hint: 'register one with `kiln models register`',
    });
  }
  return model.latestVersion;
}
