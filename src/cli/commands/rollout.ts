// `kiln rollout start|status|pause|resume|promote|abort ENDPOINT`: canary and blue-green
// rollouts (issue 13). `start` also backs `kiln deploy --strategy canary|blue-green`.
//
//   kiln rollout start fraud --to fraud:3 --steps 1,5,25,50,100 --interval 2m \
//        --max-error-rate 0.01 --max-p99-ms 50 --slice-key country --slice-path $.parameters.country
//     ─► resolve --to to a version number (GET the version) ─► POST /endpoints/{e}/rollout
//     ─► print the rollout [--wait: poll until it has finished]

import { setTimeout as sleep } from 'node:timers/promises';
import { InvalidArgumentError, Option, type Command } from 'commander';
import { integerOption, parseNumber, parseVersionRef, refSegment } from '../arguments.ts';
import type { Model, ModelVersion } from '../api-types.ts';
import { withClient } from '../context.ts';
import { CliError, usageError } from '../errors.ts';
import { apiPath, type KilnClient } from '../http-client.ts';
import { emit, printJson, writeOut } from '../output.ts';
import { rolloutText, type RolloutView } from './rollout-render.ts';

export interface RolloutFlags {
  readonly steps?: number[];
  readonly interval?: number;
  readonly maxErrorRate?: number;
  readonly maxP99Ms?: number;
  readonly maxPsi?: number;
  readonly minRequests?: number;
  readonly minSliceRequests?: number;
  readonly sliceKey?: string;
  readonly slicePath?: string;
  readonly reason?: string;
}

export type RolloutStrategy = 'canary' | 'blue-green';

export interface RolloutStartBody {
  model: string;
  version: number;
  strategy: RolloutStrategy;
  steps?: number[];
  intervalMs?: number;
  thresholds?: Record<string, number>;
  sliceKey?: string;
  slicePath?: string;
  reason?: string;
}

/** `2m`, `90s`, `1h`, `500ms`, or plain seconds → milliseconds. */
export function parseDuration(text: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text.trim());
  if (match === null)
    throw new InvalidArgumentError('expected a duration such as 30s, 2m, 1h or 500ms');
  const factor = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[match[2] ?? 's'] ?? 1000;
  return Math.round(Number(match[1]) * factor);
}

/** `1,5,25,50,100` → [1, 5, 25, 50, 100]; the platform checks the order and the last 100. */
export function stepList(text: string): number[] {
  const parts = text.split(',').map((part) => part.trim());
  if (parts.some((part) => parseNumber(part) === undefined))
    throw new InvalidArgumentError('expected percentages separated by commas, e.g. 1,5,25,50,100');
  return parts.map(Number);
}

function numberOption(text: string): number {
  const value = parseNumber(text);
  if (value === undefined) throw new InvalidArgumentError('expected a number');
  return value;
}

/** The flags `rollout start` and `deploy --strategy canary|blue-green` share. */
export function addRolloutOptions(command: Command): Command {
  return command
    .option(
      '--steps <percents>',
      'canary: its share at each step, ending at 100 (default 1,5,25,50,100)',
      stepList,
    )
    .option(
      '--interval <duration>',
      'canary: how long each step runs at least before promotion (default 2m)',
      parseDuration,
    )
    .option(
      '--max-error-rate <rate>',
      'canary: error rate it may not significantly exceed (default 0.01)',
      numberOption,
    )
    .option('--max-p99-ms <ms>', 'canary: limit on its p99 latency (default 1000)', numberOption)
    .option(
      '--max-psi <psi>',
      'canary: limit on PSI of its outputs against the baseline (default 0.2)',
      numberOption,
    )
    .option(
      '--min-requests <n>',
      'canary: requests per version before a step is judged (default 100)',
      integerOption(1),
    )
    .option(
      '--min-slice-requests <n>',
      'canary: the same, per slice (default: --min-requests)',
      integerOption(1),
    )
    .option('--slice-key <name>', 'canary: judge each value of this slice too (e.g. country)')
    .option(
      '--slice-path <path>',
      'canary: where the slice value is in the body ($.parameters.country)',
    )
    .option('--reason <text>', 'why, for the history');
}

/** The POST body from the flags; thresholds only as given (the platform fills defaults). */
export function rolloutBody(
  model: string,
  version: number,
  strategy: RolloutStrategy,
  flags: RolloutFlags,
): RolloutStartBody {
  const body: RolloutStartBody = { model, version, strategy };
  if (flags.steps !== undefined) body.steps = flags.steps;
  if (flags.interval !== undefined) body.intervalMs = flags.interval;
  const thresholds: Record<string, number> = {};
  if (flags.maxErrorRate !== undefined) thresholds.maxErrorRate = flags.maxErrorRate;
  if (flags.maxP99Ms !== undefined) thresholds.maxP99Ms = flags.maxP99Ms;
  if (flags.maxPsi !== undefined) thresholds.maxPsi = flags.maxPsi;
  if (flags.minRequests !== undefined) thresholds.minRequests = flags.minRequests;
  if (flags.minSliceRequests !== undefined) thresholds.minSliceRequests = flags.minSliceRequests;
  if (Object.keys(thresholds).length > 0) body.thresholds = thresholds;
  if (flags.sliceKey !== undefined) body.sliceKey = flags.sliceKey;
  if (flags.slicePath !== undefined) body.slicePath = flags.slicePath;
  if (flags.reason !== undefined) body.reason = flags.reason;
  if (strategy === 'blue-green') {
    const canaryOnly = Object.keys(body).filter((key) =>
      ['steps', 'intervalMs', 'thresholds', 'sliceKey', 'slicePath'].includes(key),
    );
    if (canaryOnly.length > 0)
      throw usageError(
        '--steps, --interval, thresholds and slices are for canary rollouts, not blue-green',
      );
  }
  return body;
}

/** The canary-only flags given, as typed (`--steps`, `--max-p99-ms` …), in the order listed. */
export function canaryFlagsGiven(flags: RolloutFlags): string[] {
  const names: [keyof RolloutFlags, string][] = [
    ['steps', '--steps'],
    ['interval', '--interval'],
    ['maxErrorRate', '--max-error-rate'],
    ['maxP99Ms', '--max-p99-ms'],
    ['maxPsi', '--max-psi'],
    ['minRequests', '--min-requests'],
    ['minSliceRequests', '--min-slice-requests'],
    ['sliceKey', '--slice-key'],
    ['slicePath', '--slice-path'],
  ];
  return names.filter(([field]) => flags[field] !== undefined).map(([, flag]) => flag);
}

/** The version number `--to` names (MODEL:VERSION, MODEL@ALIAS, or MODEL for the latest). */
export async function resolveVersionNumber(
  client: KilnClient,
  text: string,
): Promise<{ model: string; version: number }> {
  const ref = parseVersionRef(text);
  if (ref.kind === 'version') return { model: ref.model, version: ref.version };
  const segment = refSegment(ref);
  if (segment === undefined) {
    const model = await client.get<Model>(apiPath('models', ref.model));
    if (model.latestVersion === null)
      throw new CliError('KILN_VERSION_NOT_FOUND', `model ${ref.model} has no version yet`);
    return { model: ref.model, version: model.latestVersion };
  }
  const version = await client.get<ModelVersion>(apiPath('models', ref.model, 'versions', segment));
  return { model: ref.model, version: version.version };
}

export async function startRollout(
  client: KilnClient,
  endpoint: string,
  to: string,
  strategy: RolloutStrategy,
  flags: RolloutFlags,
): Promise<RolloutView> {
  const { model, version } = await resolveVersionNumber(client, to);
  return client.post<RolloutView>(
    apiPath('endpoints', endpoint, 'rollout'),
    rolloutBody(model, version, strategy, flags),
  );
}

const finished = new Set(['succeeded', 'rolled-back', 'aborted']);

/** Polls until the rollout has finished (or `timeoutMs` passed): the last view seen. */
export async function waitForRollout(
  client: KilnClient,
  first: RolloutView,
  timeoutMs: number,
  intervalMs = 500,
): Promise<{ finished: boolean; view: RolloutView }> {
  const deadline = Date.now() + timeoutMs;
  let view = first;
  while (!finished.has(view.rollout.state)) {
    const left = deadline - Date.now();
    if (left <= 0) return { finished: false, view };
    await sleep(Math.min(intervalMs, left));
    view = await client.get<RolloutView>(apiPath('rollouts', view.rollout.id));
  }
  return { finished: true, view };
}

/** A rollout that ended without succeeding fails the command (exit 1) with its reason. */
export function outcomeError(view: RolloutView): CliError | null {
  const { rollout } = view;
  if (rollout.state === 'succeeded' || !finished.has(rollout.state)) return null;
  return new CliError(
    'KILN_ROLLOUT_FAILED',
    `rollout ${rollout.id} on ${rollout.endpoint} ${rollout.state}: ${rollout.reason ?? 'no reason given'}`,
    { hint: `see the history with \`kiln endpoints history ${rollout.endpoint}\`` },
  );
}

interface StartOptions extends RolloutFlags {
  readonly to: string;
  readonly strategy: RolloutStrategy;
  readonly wait?: boolean;
  readonly timeoutS: number;
  readonly json?: boolean;
}

export function registerRolloutCommands(program: Command): void {
  const rollout = program
    .command('rollout')
    .description('canary and blue-green rollouts of a new version on an endpoint');

  addRolloutOptions(
    rollout
      .command('start')
      .description('start rolling a new version out on an endpoint')
      .argument('<endpoint>', 'endpoint name')
      .requiredOption('--to <ref>', 'the new version: MODEL:VERSION, MODEL@ALIAS or MODEL')
      .addOption(
        new Option('--strategy <strategy>', 'canary (steps) or blue-green (all at once)')
          .choices(['canary', 'blue-green'])
          .default('canary'),
      ),
  )
    .option('--wait', 'wait until the rollout has finished')
    .option('--timeout-s <seconds>', 'with --wait: give up after this long', integerOption(1), 3600)
    .option('--json', 'print JSON')
    .action(async (endpoint: string, options: StartOptions, command: Command) => {
      rolloutBody('m', 1, options.strategy, options); // usage errors before any call
      await withClient(command, async (client) => {
        let view = await startRollout(client, endpoint, options.to, options.strategy, options);
        if (options.json !== true) writeOut(rolloutText(view));
        if (options.wait === true) {
          const outcome = await waitForRollout(client, view, options.timeoutS * 1000);
          view = outcome.view;
          if (options.json !== true) writeOut(rolloutText(view));
          if (!outcome.finished)
            throw new CliError(
              'KILN_WAIT_TIMEOUT',
              `rollout ${view.rollout.id} still ${view.rollout.state} after ${options.timeoutS} s`,
            );
        }
        if (options.json === true) printJson(view);
        const failed = outcomeError(view);
        if (failed !== null) throw failed;
      });
    });

  rollout
    .command('status')
    .description("an endpoint's rollout (the active one, else the latest) and its step's analysis")
    .argument('<endpoint>', 'endpoint name')
    .option('--json', 'print JSON')
    .action(async (endpoint: string, options: { json?: boolean }, command: Command) => {
      const view = await withClient(command, (client) =>
        client.get<RolloutView>(apiPath('endpoints', endpoint, 'rollout')),
      );
      emit(options, view, () => rolloutText(view));
    });

  for (const [action, description] of [
    ['pause', 'hold the rollout at its step (a breach still rolls back)'],
    ['resume', 'let a paused rollout carry on'],
    ['promote', 'go to the next step now (the last one completes the rollout)'],
    ['abort', 'stop the rollout: all traffic back to the baseline'],
  ] as const) {
    rollout
      .command(action)
      .description(description)
      .argument('<endpoint>', 'endpoint name')
      .option('--reason <text>', 'why, for the history')
      .option('--json', 'print JSON')
      .action(
        async (
          endpoint: string,
          options: { json?: boolean; reason?: string },
          command: Command,
        ) => {
          const view = await withClient(command, (client) =>
            client.post<RolloutView>(
              apiPath('endpoints', endpoint, 'rollout', action),
              options.reason === undefined ? {} : { reason: options.reason },
            ),
          );
          emit(options, view, () => rolloutText(view));
        },
      );
  }
}
