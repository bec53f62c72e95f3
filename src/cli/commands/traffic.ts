// `kiln traffic show|set|clear ENDPOINT`, `kiln rollback ENDPOINT` and `kiln shadow
// set|clear|report ENDPOINT`: an endpoint's traffic policy, one step back, and the shadow
// versions that get copies of its requests. (`kiln endpoints history` is in endpoints.ts.)
//
// Versions are `MODEL:VERSION`, or a bare `VERSION` for the endpoint's own model (read from
// the platform first): `kiln traffic set fraud --split 1=95,2=5`.

import { performance } from 'node:perf_hooks';
import { InvalidArgumentError, type Command } from 'commander';
import type { RollbackResult, ShadowReport, TrafficView } from '../api-types.ts';
import { parseNumber, parseVersionNumber } from '../arguments.ts';
import { withClient } from '../context.ts';
import { usageError } from '../errors.ts';
import { apiPath, type KilnClient } from '../http-client.ts';
import { emit, type JsonOption } from '../output.ts';
import { sinceTime } from './tokens.ts';
import { shadowReportText, splitText, trafficDetails } from './traffic-render.ts';

/** `fraud:2=5` / `2=5` before the model is known. */
export interface WeightedVersion {
  readonly model: string | null;
  readonly version: number;
  readonly value: number;
}

/** `[MODEL:]VERSION=NUMBER` → its parts; a commander option/argument parser. */
export function parseWeightedVersion(text: string, what: string): WeightedVersion {
  const match = /^(?:(.+):)?([^:=]+)=(.+)$/.exec(text.trim());
  const version = match === null ? undefined : parseVersionNumber(match[2] ?? '');
  const value = match === null ? undefined : parseNumber(match[3] ?? '');
  if (match === null || version === undefined || value === undefined) {
    throw new InvalidArgumentError(
      `expected [MODEL:]VERSION=${what} (e.g. fraud:2=${what === 'WEIGHT' ? '5' : '0.25'}), got "${text}"`,
    );
  }
  return { model: match[1] ?? null, version, value };
}

/** `--split 1=95,2=5` (repeatable): every entry, in order. */
function collectSplit(text: string, previous: readonly WeightedVersion[] = []): WeightedVersion[] {
  const parts = text.split(',').filter((part) => part.trim() !== '');
  return [...previous, ...parts.map((part) => parseWeightedVersion(part, 'WEIGHT'))];
}

/** A shadow operand: `fraud:3=0.25`, or `fraud:3` / `3` for every request. */
function parseShadow(text: string): WeightedVersion {
  if (text.includes('=')) return parseWeightedVersion(text, 'RATE');
  return parseWeightedVersion(`${text}=1`, 'RATE');
}

interface ReasonOption extends JsonOption {
  readonly reason?: string;
}

interface SetOptions extends ReasonOption {
  readonly split: readonly WeightedVersion[];
  readonly shadow?: readonly WeightedVersion[];
  readonly keyPath?: string;
  readonly sliceKey?: string;
  readonly slicePath?: string;
}

export function registerTrafficCommands(program: Command): void {
  const traffic = program
    .command('traffic')
    .description("an endpoint's traffic policy: which versions take what share of requests");

  traffic
    .command('show')
    .description('show the split in force, shadows, the previous and warm versions')
    .argument('<endpoint>', 'endpoint name')
    .option('--json', 'print JSON')
    .action(async (endpoint: string, options: JsonOption, command: Command) => {
      const view = await withClient(command, (client) =>
        client.get<TrafficView>(apiPath('endpoints', endpoint, 'traffic')),
      );
      emit(options, view, () => trafficDetails(view));
    });

  traffic
    .command('set')
    .description('split traffic over versions (weights in whole percent, summing to 100)')
    .argument('<endpoint>', 'endpoint name')
    .requiredOption(
      '--split <versions>',
      "[MODEL:]VERSION=WEIGHT,… e.g. 1=95,2=5 (a bare version is of the endpoint's model)",
      collectSplit,
    )
    .option(
      '--shadow <version>',
      '[MODEL:]VERSION=RATE: also copy this share of requests to it (repeatable)',
      (text: string, previous: WeightedVersion[] = []) => [...previous, parseShadow(text)],
    )
    .option('--key-path <path>', 'where the caller key is in the body, e.g. $.parameters.user')
    .option('--slice-key <name>', 'name of the slice counted per value, e.g. country')
    .option('--slice-path <path>', 'where the slice value is in the body (needs --slice-key)')
    .option('--reason <text>', 'why, for the history')
    .option('--json', 'print JSON')
    .action(async (endpoint: string, options: SetOptions, command: Command) => {
      const view = await withClient(command, async (client) => {
        const model = await modelOfEndpoint(client, endpoint, [
          ...options.split,
          ...(options.shadow ?? []),
        ]);
        return client.put<TrafficView>(apiPath('endpoints', endpoint, 'traffic'), {
          versions: options.split.map((v) => ({
            model: v.model ?? model,
            version: v.version,
            weight: v.value,
          })),
          shadows: (options.shadow ?? []).map((v) => ({
            model: v.model ?? model,
            version: v.version,
            sampleRate: v.value,
          })),
          ...(options.keyPath === undefined ? {} : { keyPath: options.keyPath }),
          ...(options.sliceKey === undefined ? {} : { sliceKey: options.sliceKey }),
          ...(options.slicePath === undefined ? {} : { slicePath: options.slicePath }),
          ...(options.reason === undefined ? {} : { reason: options.reason }),
        });
      });
      emit(options, view, () => `endpoint ${view.endpoint}: ${splitText(view.split)}\n`);
    });

  traffic
    .command('clear')
    .description('end the policy: the stable version takes all traffic again')
    .argument('<endpoint>', 'endpoint name')
    .option('--reason <text>', 'why, for the history')
    .option('--json', 'print JSON')
    .action(async (endpoint: string, options: ReasonOption, command: Command) => {
      const view = await withClient(command, (client) =>
        client.delete<TrafficView>(withReason(apiPath('endpoints', endpoint, 'traffic'), options)),
      );
      emit(options, view, () => `endpoint ${view.endpoint}: ${splitText(view.split)}\n`);
    });

  program
    .command('rollback')
    .description(
      'one step back: abort a rollout in progress, else end the traffic policy, else return to the previous version',
    )
    .argument('<endpoint>', 'endpoint name')
    .option('--reason <text>', 'why, for the history')
    .option('--json', 'print JSON')
    .action(async (endpoint: string, options: ReasonOption, command: Command) => {
      // From the call to the answer: the routing change is published before the API answers.
      const started = performance.now();
      const result = await withClient(command, (client) =>
        client.post<RollbackResult>(
          apiPath('endpoints', endpoint, 'rollback'),
          options.reason === undefined ? {} : { reason: options.reason },
        ),
      );
      const seconds = (performance.now() - started) / 1000;
      emit(
        options,
        result,
        () =>
          `rolled back ${endpoint}: ${result.summary} (API answered in ${seconds.toFixed(3)} s)\n`,
      );
    });

  const shadow = program
    .command('shadow')
    .description('shadow versions: copies of requests, answers compared, never returned');

  shadow
    .command('set')
    .description('replace the shadows: each gets this share of requests (default all)')
    .argument('<endpoint>', 'endpoint name')
    .argument('<versions...>', '[MODEL:]VERSION[=RATE], rate in [0, 1], e.g. fraud:3=0.25')
    .option('--reason <text>', 'why, for the history')
    .option('--json', 'print JSON')
    .action(async (endpoint: string, texts: string[], options: ReasonOption, command: Command) => {
      const shadows = texts.map(parseShadowOperand);
      const view = await withClient(command, async (client) => {
        const model = await modelOfEndpoint(client, endpoint, shadows);
        return client.put<TrafficView>(apiPath('endpoints', endpoint, 'shadows'), {
          shadows: shadows.map((v) => ({
            model: v.model ?? model,
            version: v.version,
            sampleRate: v.value,
          })),
          ...(options.reason === undefined ? {} : { reason: options.reason }),
        });
      });
      emit(options, view, () => `endpoint ${view.endpoint}: ${shadowsText(view)}\n`);
    });

  shadow
    .command('clear')
    .description('no more shadows')
    .argument('<endpoint>', 'endpoint name')
    .option('--reason <text>', 'why, for the history')
    .option('--json', 'print JSON')
    .action(async (endpoint: string, options: ReasonOption, command: Command) => {
      const view = await withClient(command, (client) =>
        client.delete<TrafficView>(withReason(apiPath('endpoints', endpoint, 'shadows'), options)),
      );
      emit(options, view, () => `endpoint ${view.endpoint}: ${shadowsText(view)}\n`);
    });

  shadow
    .command('report')
    .description('how the shadows answered: agreement with the primary, |diff|, latency')
    .argument('<endpoint>', 'endpoint name')
    .option('--since <when>', 'a duration back (10m, 1h, 7d) or an ISO time (default: 1h)')
    .option('--json', 'print JSON')
    .action(
      async (endpoint: string, options: JsonOption & { since?: string }, command: Command) => {
        const since =
          options.since === undefined ? undefined : sinceTime(options.since, Date.now());
        const report = await withClient(command, (client) =>
          client.get<ShadowReport>(apiPath('endpoints', endpoint, 'shadows', 'report'), {
            since,
          }),
        );
        emit(options, report, () => shadowReportText(report));
      },
    );
}

function parseShadowOperand(text: string): WeightedVersion {
  try {
    return parseShadow(text);
  } catch (error) {
    // Commander turns an option parser's error into a usage error, not an operand's.
    throw usageError((error as Error).message);
  }
}

function shadowsText(view: TrafficView): string {
  const shadows = view.policy?.shadows ?? [];
  if (shadows.length === 0) return 'no shadows';
  return `shadows ${shadows
    .map((s) => `${s.model}:${s.version} ${Number((s.sampleRate * 100).toFixed(2))}%`)
    .join(', ')}`;
}

/** The endpoint's model, read only when a bare version needs it. */
async function modelOfEndpoint(
  client: KilnClient,
  endpoint: string,
  versions: readonly WeightedVersion[],
): Promise<string> {
  if (versions.every((v) => v.model !== null)) return '';
  const view = await client.get<TrafficView>(apiPath('endpoints', endpoint, 'traffic'));
  return view.stable.model;
}

function withReason(path: string, options: ReasonOption): string {
  return options.reason === undefined
    ? path
    : `${path}?reason=${encodeURIComponent(options.reason)}`;
}
