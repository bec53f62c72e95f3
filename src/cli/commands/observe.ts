// `kiln observe show|set|clear ENDPOINT`: an endpoint's observability settings (tracing,
// drift, prediction log, quality, SLOs; docs/observability.md), changed in place: no redeploy,
// no replica restarted. `set` starts from the settings in force (or `--file`'s, which replace
// them), changes the fields its flags name, and sends the whole; the platform checks every
// part and names the field at fault (KILN_OBSERVABILITY_INVALID).

import { InvalidArgumentError, type Command } from 'commander';
import { readFile } from 'node:fs/promises';
import { parseNumber } from '../arguments.ts';
import { withClient } from '../context.ts';
import { describeFsError, localFileError } from '../errors.ts';
import { apiPath } from '../http-client.ts';
import { emit, renderKeyValues, type JsonOption } from '../output.ts';
import { durationMsOption } from './autoscale.ts';

/** What `GET /api/v1/endpoints/{e}/observability` answers. */
export interface ObservabilityView {
  readonly endpoint: string;
  readonly observability: Record<string, Record<string, unknown> | undefined>;
}

export interface ObserveFlags {
  readonly file?: string;
  readonly traceSample?: number;
  readonly drift?: boolean;
  readonly sliceKey?: string;
  readonly slicePath?: string;
  readonly driftWindow?: number;
  readonly logSample?: number;
}

const parts = ['tracing', 'drift', 'predictionLog', 'quality', 'slo'] as const;

/** A share in [0, 1]; commander option parser. */
export function fractionOption(text: string): number {
  const value = parseNumber(text);
  if (value === undefined || value < 0 || value > 1) {
    throw new InvalidArgumentError('expected a number from 0 to 1, e.g. 0.01');
  }
  return value;
}

type Settings = Record<string, Record<string, unknown>>;

/** `base` with the fields the flags name changed (a part a flag names is created). */
export function observeBody(base: Settings, flags: ObserveFlags): Settings {
  const out: Settings = {};
  for (const [part, value] of Object.entries(base)) out[part] = { ...value };
  const field = (part: string, name: string, value: unknown): void => {
    out[part] = { ...(out[part] ?? {}), [name]: value };
  };
  if (flags.traceSample !== undefined) field('tracing', 'sampleRate', flags.traceSample);
  if (flags.drift === false) delete out.drift;
  else if (flags.drift === true) field('drift', 'enabled', true);
  if (flags.sliceKey !== undefined) field('drift', 'sliceKey', flags.sliceKey);
  if (flags.slicePath !== undefined) field('drift', 'slicePath', flags.slicePath);
  if (flags.driftWindow !== undefined) field('drift', 'windowMs', flags.driftWindow);
  if (flags.logSample !== undefined) field('predictionLog', 'sampleRate', flags.logSample);
  return out;
}

async function readSettingsFile(file: string): Promise<Settings> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw localFileError(`cannot read ${file}: ${describeFsError(error)}`, error);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw localFileError(`${file} is not valid JSON: ${(error as Error).message}`, error);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw localFileError(
      `${file} must hold a JSON object like {"tracing": {"sampleRate": 0.01}, "drift": {...}}`,
    );
  }
  return parsed as Settings;
}

function fieldText(value: unknown): string {
  if (value === null) return '-';
  if (typeof value === 'string') return value;
  return JSON.stringify(value);
}

/** One line per part: `off`, or its fields as `name=value`. */
export function observabilityText(view: ObservabilityView): string {
  return renderKeyValues([
    ['endpoint', view.endpoint],
    ...parts.map((part): readonly [string, string] => {
      const value = view.observability[part];
      if (value === undefined) return [part, 'off'];
      const fields = Object.entries(value).map(([name, v]) => `${name}=${fieldText(v)}`);
      return [part, fields.length === 0 ? 'on' : fields.join(' ')];
    }),
  ]);
}

export function registerObserveCommands(program: Command): void {
  const observe = program
    .command('observe')
    .description(
      "an endpoint's observability settings: tracing, drift, prediction log, quality, SLOs",
    );

  observe
    .command('show')
    .description('the settings in force (a part not set is off)')
    .argument('<endpoint>', 'endpoint name')
    .option('--json', 'print JSON')
    .action(async (endpoint: string, options: JsonOption, command: Command) => {
      const view = await withClient(command, (client) =>
        client.get<ObservabilityView>(apiPath('endpoints', endpoint, 'observability')),
      );
      emit(options, view, () => observabilityText(view));
    });

  observe
    .command('set')
    .description(
      'change settings in place (no replica restarts): the flags change the settings in force, or those of --file',
    )
    .argument('<endpoint>', 'endpoint name')
    .option('--file <file>', 'a JSON object of settings, replacing those in force')
    .option('--trace-sample <rate>', 'tracing: share of new traces sampled, 0..1', fractionOption)
    .option('--drift', 'drift: collect input/output sketches (defaults for the rest)')
    .option('--no-drift', 'drift: off')
    .option('--slice-key <name>', "drift: the slice's name in reports, e.g. country")
    .option('--slice-path <path>', 'drift: where the slice value is in the body, e.g. $.country')
    .option('--drift-window <duration>', 'drift: length of one window, e.g. 5m', durationMsOption)
    .option('--log-sample <rate>', 'prediction log: share of requests logged, 0..1', fractionOption)
    .option('--json', 'print JSON')
    .action(async (endpoint: string, options: ObserveFlags & JsonOption, command: Command) => {
      const view = await withClient(command, async (client) => {
        const path = apiPath('endpoints', endpoint, 'observability');
        const base =
          options.file === undefined
            ? ((await client.get<ObservabilityView>(path)).observability as Settings)
            : await readSettingsFile(options.file);
        return client.put<ObservabilityView>(path, observeBody(base, options));
      });
      emit(options, view, () => observabilityText(view));
    });

  observe
    .command('clear')
    .description('take one part off (--part), or every part')
    .argument('<endpoint>', 'endpoint name')
    .option('--part <part>', `one of ${parts.join(', ')}`, (text: string) => {
      if (!(parts as readonly string[]).includes(text)) {
        throw new InvalidArgumentError(`expected one of ${parts.join(', ')}`);
      }
      return text;
    })
    .option('--json', 'print JSON')
    .action(async (endpoint: string, options: JsonOption & { part?: string }, command: Command) => {
      const path = apiPath('endpoints', endpoint, 'observability');
      const view = await withClient(command, (client) =>
        client.delete<ObservabilityView>(
          options.part === undefined ? path : `${path}?part=${encodeURIComponent(options.part)}`,
        ),
      );
      emit(options, view, () => observabilityText(view));
    });
}
