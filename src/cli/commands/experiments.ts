// `kiln experiments create|list|show|stop|report|outcomes`: A/B experiments over an
// endpoint's versions (docs/experiments.md). Renderings in experiments-render.ts.

import { readFile } from 'node:fs/promises';
import { InvalidArgumentError, Option, type Command } from 'commander';
import type { ExperimentReport } from '../../control/traffic/experiment-report.ts';
import type { OutcomeInput, OutcomesAccepted } from '../../control/traffic/experiments.ts';
import type { ExperimentRecord } from '../../store/traffic-records.ts';
import { parseNumber, parseVersionNumber } from '../arguments.ts';
import { withClient } from '../context.ts';
import { describeFsError, localFileError, usageError } from '../errors.ts';
import { apiPath } from '../http-client.ts';
import { emit, type JsonOption } from '../output.ts';
import {
  experimentDetails,
  experimentsTable,
  reportText,
  variantsText,
} from './experiments-render.ts';

/** As the API takes them per call (routes-experiments.ts). */
const outcomesPerCall = 10_000;

interface Variant {
  model: string;
  version: number;
  weight: number;
}

export function registerExperimentsCommands(program: Command): void {
  const experiments = program
    .command('experiments')
    .description('A/B experiments: a fixed split with sticky users, outcomes and a report');

  experiments
    .command('create')
    .description('start an experiment on an endpoint (the first variant is the control)')
    .argument('<endpoint>', 'endpoint name')
    .requiredOption('--name <name>', 'what the experiment tests')
    .addOption(
      new Option('--variant <model:version=weight>', 'a variant and its percent (repeat; sum 100)')
        .argParser(collectVariant)
        .makeOptionMandatory(),
    )
    .option('--key-path <path>', 'where the user key is in request bodies (e.g. $.parameters.user)')
    .option('--reason <text>', 'why, for the endpoint history')
    .option('--json', 'print JSON')
    .action(
      async (
        endpoint: string,
        options: JsonOption & {
          name: string;
          variant: Variant[];
          keyPath?: string;
          reason?: string;
        },
        command: Command,
      ) => {
        const body = {
          endpoint,
          name: options.name,
          variants: options.variant,
          ...(options.keyPath === undefined ? {} : { keyPath: options.keyPath }),
          ...(options.reason === undefined ? {} : { reason: options.reason }),
        };
        const created = await withClient(command, (client) =>
          client.post<ExperimentRecord>(apiPath('experiments'), body),
        );
        emit(
          options,
          created,
          () =>
            `started experiment ${created.id} "${created.name}" on endpoint ${created.endpoint}: ` +
            `${variantsText(created)}\n`,
        );
      },
    );

  experiments
    .command('list')
    .description('list experiments, newest first')
    .option('--endpoint <name>', 'only this endpoint’s')
    .addOption(new Option('--state <state>', 'only these').choices(['running', 'stopped']))
    .option('--json', 'print JSON')
    .action(
      async (options: JsonOption & { endpoint?: string; state?: string }, command: Command) => {
        const result = await withClient(command, (client) =>
          client.get<{ items: ExperimentRecord[] }>(apiPath('experiments'), {
            endpoint: options.endpoint,
            state: options.state,
          }),
        );
        emit(options, result, () =>
          result.items.length === 0
            ? 'no experiments (start one with `kiln experiments create`)\n'
            : experimentsTable(result.items),
        );
      },
    );

  experiments
    .command('show')
    .description('show one experiment')
    .argument('<id>', 'experiment id')
    .option('--json', 'print JSON')
    .action(async (id: string, options: JsonOption, command: Command) => {
      const experiment = await withClient(command, (client) =>
        client.get<ExperimentRecord>(apiPath('experiments', id)),
      );
      emit(options, experiment, () => experimentDetails(experiment));
    });

  experiments
    .command('stop')
    .description('stop an experiment: the endpoint’s stable version takes all traffic again')
    .argument('<id>', 'experiment id')
    .option('--reason <text>', 'why, for the endpoint history')
    .option('--json', 'print JSON')
    .action(async (id: string, options: JsonOption & { reason?: string }, command: Command) => {
      const stopped = await withClient(command, (client) =>
        client.post<ExperimentRecord>(
          apiPath('experiments', id, 'stop'),
          options.reason === undefined ? {} : { reason: options.reason },
        ),
      );
      emit(
        options,
        stopped,
        () =>
          `stopped experiment ${stopped.id}; endpoint ${stopped.endpoint} back to its stable version\n`,
      );
    });

  experiments
    .command('report')
    .description('per-variant traffic, and each outcome metric against the control')
    .argument('<id>', 'experiment id')
    .option(
      '--mde <effect>',
      'minimum detectable effect for the sample size: NUMBER for every metric, or METRIC=NUMBER,… (default: the observed effect)',
    )
    .option('--alpha <alpha>', 'significance level (default 0.05)', probabilityOption)
    .option(
      '--power <power>',
      'power the sample size is planned for (default 0.8)',
      probabilityOption,
    )
    .option('--json', 'print JSON')
    .action(
      async (
        id: string,
        options: JsonOption & { mde?: string; alpha?: number; power?: number },
        command: Command,
      ) => {
        const report = await withClient(command, (client) =>
          client.get<ExperimentReport>(apiPath('experiments', id, 'report'), {
            mde: options.mde,
            alpha: options.alpha,
            power: options.power,
          }),
        );
        emit(options, report, () => reportText(report));
      },
    );

  experiments
    .command('outcomes')
    .description('report outcomes: one with the flags, or many from a file')
    .argument('<id>', 'experiment id')
    .option(
      '--file <file>',
      'JSON: a list of {metric, kind, value, user | variant}, {"outcomes": [...]}, or one per line',
    )
    .option('--metric <name>', 'the metric (with --kind, --value and --user or --variant)')
    .addOption(new Option('--kind <kind>', 'rate: 0/1 values; mean: any').choices(['rate', 'mean']))
    .option('--value <number>', 'the outcome', numberOption)
    .option('--user <key>', 'the user it was for (its variant is the one it was served)')
    .option('--variant <model:version>', 'the variant it was for')
    .option('--json', 'print JSON')
    .action(
      async (
        id: string,
        options: JsonOption & {
          file?: string;
          metric?: string;
          kind?: 'rate' | 'mean';
          value?: number;
          user?: string;
          variant?: string;
        },
        command: Command,
      ) => {
        const outcomes =
          options.file === undefined ? [oneOutcome(options)] : await readOutcomes(options.file);
        const accepted = await withClient(command, async (client) => {
          const total: Record<string, number> = {};
          let count = 0;
          for (let at = 0; at < outcomes.length; at += outcomesPerCall) {
            const batch = outcomes.slice(at, at + outcomesPerCall);
            const result = await client.post<OutcomesAccepted>(
              apiPath('experiments', id, 'outcomes'),
              { outcomes: batch },
            );
            count += result.accepted;
            for (const [variant, n] of Object.entries(result.variants)) {
              total[variant] = (total[variant] ?? 0) + n;
            }
          }
          return { experiment: id, accepted: count, variants: total };
        });
        emit(options, accepted, () => {
          const split = Object.entries(accepted.variants)
            .sort(([a], [b]) => (a < b ? -1 : 1))
            .map(([variant, n]) => `${variant} ${n}`)
            .join(', ');
          return `accepted ${accepted.accepted} outcomes for experiment ${id} (${split})\n`;
        });
      },
    );
}

/** `--variant iris:2=50`, repeatable. */
export function collectVariant(text: string, previous: readonly Variant[] = []): Variant[] {
  const match = /^(.+):(\d+)=(\d+)$/.exec(text.trim());
  const version = match === null ? undefined : parseVersionNumber(match[2] ?? '');
  if (match === null || version === undefined) {
    throw new InvalidArgumentError(`expected MODEL:VERSION=WEIGHT (e.g. iris:2=50), got "${text}"`);
  }
  return [...previous, { model: match[1] ?? '', version, weight: Number(match[3]) }];
}

function probabilityOption(text: string): number {
  const value = parseNumber(text);
  if (value === undefined || !(value > 0 && value < 1)) {
    throw new InvalidArgumentError(`expected a number between 0 and 1, got "${text}"`);
  }
  return value;
}

function numberOption(text: string): number {
  const value = parseNumber(text);
  if (value === undefined) throw new InvalidArgumentError(`expected a number, got "${text}"`);
  return value;
}

function oneOutcome(options: {
  metric?: string;
  kind?: 'rate' | 'mean';
  value?: number;
  user?: string;
  variant?: string;
}): OutcomeInput {
  const { metric, kind, value, user, variant } = options;
  if (metric === undefined || kind === undefined || value === undefined) {
    throw usageError(
      'give --file, or --metric, --kind and --value',
      'e.g. kiln experiments outcomes ID --metric converted --kind rate --value 1 --user u42',
    );
  }
  if ((user === undefined) === (variant === undefined)) {
    throw usageError('give exactly one of --user or --variant');
  }
  return {
    metric,
    kind,
    value,
    ...(user === undefined ? {} : { user }),
    ...(variant === undefined ? {} : { variant }),
  };
}

/** A JSON list, `{"outcomes": [...]}`, or one JSON object per line; the platform checks each. */
export async function readOutcomes(file: string): Promise<OutcomeInput[]> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw localFileError(`cannot read outcomes file ${file}: ${describeFsError(error)}`, error);
  }
  const trimmed = text.trim();
  try {
    if (trimmed.startsWith('[')) return JSON.parse(trimmed) as OutcomeInput[];
    if (trimmed.startsWith('{')) {
      let whole: unknown;
      try {
        whole = JSON.parse(trimmed);
      } catch {
        whole = undefined; // several objects, one per line: read below
      }
      const list = (whole as { outcomes?: unknown } | undefined)?.outcomes;
      if (Array.isArray(list)) return list as OutcomeInput[];
      if (whole !== undefined) return [whole as OutcomeInput];
    }
    const lines = trimmed.split('\n').filter((line) => line.trim() !== '');
    return lines.map((line) => JSON.parse(line) as OutcomeInput);
  } catch (error) {
    throw localFileError(
      `outcomes file ${file} is not JSON (a list, {"outcomes": [...]}, or one object per line): ${(error as Error).message}`,
      error,
    );
  }
}
