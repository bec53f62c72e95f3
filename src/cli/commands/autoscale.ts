// `kiln autoscale set|show|clear|events ENDPOINT`: an endpoint's autoscaling policy, what the
// autoscaler decides and why, and its history. `set` replaces the whole policy with what the
// flags say (the rest takes the platform's defaults, docs/autoscaling.md); the platform checks
// it and names every problem at once (KILN_AUTOSCALE_INVALID).

import { InvalidArgumentError, type Command } from 'commander';
import type { AutoscaleSettings, ScaleEventView, ScaleStatusView } from '../api-types.ts';
import { integerOption, parseNumber } from '../arguments.ts';
import { withClient } from '../context.ts';
import { apiPath } from '../http-client.ts';
import { emit, type JsonOption } from '../output.ts';
import { sinceTime } from './tokens.ts';
import { scaleEventsTable, scaleStatusText } from './autoscale-render.ts';

export interface AutoscaleFlags {
  readonly min: number;
  readonly max: number;
  readonly signal?: string;
  readonly target?: number;
  readonly customMetric?: string;
  readonly slo?: number;
  readonly sloObjective?: number;
  readonly panicWindow?: number;
  readonly stableWindow?: number;
  readonly panicThreshold?: number;
  readonly scaleDownDelay?: number;
  readonly idle?: number;
  readonly queueLimit?: number;
  readonly coldStartTimeout?: number;
  readonly coldStartBudget?: number;
  readonly predictive?: boolean;
  readonly startup?: number;
}

const durationUnits: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** `500ms`, `6s`, `5m`, `1h` → milliseconds; commander option parser. */
export function durationMsOption(text: string): number {
  const match = /^(\d{1,9}(?:\.\d+)?)(ms|s|m|h)$/.exec(text.trim());
  const ms = match === null ? Number.NaN : Number(match[1]) * (durationUnits[match[2] ?? ''] ?? 0);
  if (!Number.isFinite(ms) || ms < 0 || !Number.isInteger(Math.round(ms))) {
    throw new InvalidArgumentError('expected a duration like 500ms, 6s, 5m or 1h');
  }
  return Math.round(ms);
}

/** A number greater than 0 (a target may be fractional: 0.7 of a CPU). */
export function positiveNumberOption(text: string): number {
  const value = parseNumber(text);
  if (value === undefined || value <= 0) {
    throw new InvalidArgumentError('expected a number greater than 0');
  }
  return value;
}

/** The policy body the flags describe (only what they give; the platform fills the rest). */
export function autoscaleBody(flags: AutoscaleFlags): AutoscaleSettings {
  const body: AutoscaleSettings = { minReplicas: flags.min, maxReplicas: flags.max };
  if (flags.signal !== undefined) body.signal = flags.signal;
  if (flags.target !== undefined) body.target = flags.target;
  if (flags.customMetric !== undefined) body.customMetric = flags.customMetric;
  if (flags.slo !== undefined || flags.sloObjective !== undefined) {
    body.slo = {};
    if (flags.slo !== undefined) body.slo.latencyMs = flags.slo;
    if (flags.sloObjective !== undefined) body.slo.objective = flags.sloObjective;
  }
  if (flags.panicWindow !== undefined) body.panicWindowMs = flags.panicWindow;
  if (flags.stableWindow !== undefined) body.stableWindowMs = flags.stableWindow;
  if (flags.panicThreshold !== undefined) body.panicThreshold = flags.panicThreshold;
  if (flags.scaleDownDelay !== undefined) body.scaleDownDelayMs = flags.scaleDownDelay;
  const toZero: NonNullable<AutoscaleSettings['scaleToZero']> = {};
  if (flags.idle !== undefined) toZero.idleMs = flags.idle;
  if (flags.queueLimit !== undefined) toZero.queueLimit = flags.queueLimit;
  if (flags.coldStartTimeout !== undefined) toZero.timeoutMs = flags.coldStartTimeout;
  if (flags.coldStartBudget !== undefined) toZero.coldStartBudgetMs = flags.coldStartBudget;
  if (Object.keys(toZero).length > 0) body.scaleToZero = toZero;
  if (flags.startup !== undefined) body.predictive = { startupMs: flags.startup };
  else if (flags.predictive === true) body.predictive = true;
  return body;
}

export function registerAutoscaleCommands(program: Command): void {
  const autoscale = program
    .command('autoscale')
    .description("an endpoint's autoscaling: policy, decisions, history");

  autoscale
    .command('set')
    .description('put an autoscaling policy in force (replaces the current one whole)')
    .argument('<endpoint>', 'endpoint name')
    .requiredOption('--min <n>', 'fewest replicas (0 allows scale to zero)', integerOption(0))
    .requiredOption('--max <n>', 'most replicas (>= 1)', integerOption(1))
    .option(
      '--signal <signal>',
      'what to scale on: concurrency (default), qps, queue-depth, cpu, accelerator, custom, slo',
    )
    .option('--target <x>', 'target value of the signal per replica', positiveNumberOption)
    .option('--custom-metric <name>', "with --signal custom: the worker metric's name")
    .option(
      '--slo <duration>',
      'with --signal slo: the latency objective (arrival → answer), e.g. 200ms',
      durationMsOption,
    )
    .option(
      '--slo-objective <x>',
      'with --signal slo: the share of requests within it, in (0, 1) (default 0.999)',
      positiveNumberOption,
    )
    .option('--stable-window <duration>', 'averaging window, e.g. 60s', durationMsOption)
    .option('--panic-window <duration>', 'short window for bursts, e.g. 6s', durationMsOption)
    .option(
      '--panic-threshold <x>',
      'panic when demand >= this × ready capacity (default 2)',
      positiveNumberOption,
    )
    .option(
      '--scale-down-delay <duration>',
      'scale down only after the lower count held this long, e.g. 30s',
      durationMsOption,
    )
    .option(
      '--idle <duration>',
      'with --min 0: go to zero after this long idle, e.g. 5m',
      durationMsOption,
    )
    .option(
      '--queue-limit <n>',
      'with --min 0: requests a gateway holds while waking',
      integerOption(1),
    )
    .option(
      '--cold-start-timeout <duration>',
      'with --min 0: how long a held request waits for a replica',
      durationMsOption,
    )
    .option(
      '--cold-start-budget <duration>',
      'with --min 0: the cold start you accept (counted when over)',
      durationMsOption,
    )
    .option('--predictive', 'add replicas ahead of the daily peaks learned from history')
    .option(
      '--startup <duration>',
      "predictive: a replica's start-up time (default: measured)",
      durationMsOption,
    )
    .option('--json', 'print JSON')
    .action(async (endpoint: string, options: AutoscaleFlags & JsonOption, command: Command) => {
      const body = autoscaleBody(options);
      const status = await withClient(command, (client) =>
        client.put<ScaleStatusView>(apiPath('endpoints', endpoint, 'autoscale'), body),
      );
      emit(options, status, () => scaleStatusText(status));
    });

  autoscale
    .command('show')
    .description('the policy, the count, what the autoscaler decided last and why')
    .argument('<endpoint>', 'endpoint name')
    .option('--json', 'print JSON')
    .action(async (endpoint: string, options: JsonOption, command: Command) => {
      const status = await withClient(command, (client) =>
        client.get<ScaleStatusView>(apiPath('endpoints', endpoint, 'scale')),
      );
      emit(options, status, () => scaleStatusText(status));
    });

  autoscale
    .command('clear')
    .description('stop autoscaling: the endpoint keeps the count it runs now')
    .argument('<endpoint>', 'endpoint name')
    .option('--json', 'print JSON')
    .action(async (endpoint: string, options: JsonOption, command: Command) => {
      const status = await withClient(command, (client) =>
        client.delete<ScaleStatusView>(apiPath('endpoints', endpoint, 'autoscale')),
      );
      emit(
        options,
        status,
        () =>
          `${endpoint}: autoscaling off, ${status.replicas} replica${status.replicas === 1 ? '' : 's'}\n`,
      );
    });

  autoscale
    .command('events')
    .description('scale events, newest first')
    .argument('<endpoint>', 'endpoint name')
    .option('--since <when>', 'a duration back from now (30m, 12h, 7d) or an ISO 8601 time')
    .option('--limit <n>', 'at most this many (<= 1000)', integerOption(1), 50)
    .option('--json', 'print JSON')
    .action(
      async (
        endpoint: string,
        options: JsonOption & { since?: string; limit: number },
        command: Command,
      ) => {
        const since =
          options.since === undefined ? {} : { since: sinceTime(options.since, Date.now()) };
        const result = await withClient(command, (client) =>
          client.get<{ items: ScaleEventView[] }>(
            apiPath('endpoints', endpoint, 'scale', 'events'),
            { limit: options.limit, ...since },
          ),
        );
        emit(options, result, () =>
          result.items.length === 0 ? 'no scale events\n' : scaleEventsTable(result.items),
        );
      },
    );
}
