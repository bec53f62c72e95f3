// `kiln models profile NAME:V --data FILE [--output FILE]`: computes a version's reference
// profile (per feature and output: a quantile sketch, missing count, category counts) from a
// CSV/JSONL sample on this machine, stores it with the version, and with --output writes it
// too. `--from FILE` stores a profile file written earlier; with neither it shows the stored
// one. `kiln models register --profile FILE` stores a profile file with a new version (the
// JSON this command writes). docs/profiles.md.
//
// Only the profile crosses the network, never the sample: sketches are a few KiB per column.

import { readFile, writeFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { systemClock, isoAt } from '../../core/clock.ts';
import { computeProfile } from '../../observability/profile/compute-profile.ts';
import type { DataProfile, FeatureSketch } from '../../observability/profile/data-profile.ts';
import { parseDataProfile } from '../../observability/profile/parse-data-profile.ts';
import {
  parseSampleFile,
  sampleFormatOf,
  type SampleFormat,
} from '../../observability/profile/parse-sample-file.ts';
import type { VersionProfile } from '../../store/profile-records.ts';
import { HistogramSketch } from '../../traffic/histogram-sketch.ts';
import { parseVersionRef, refSegment } from '../arguments.ts';
import { withClient } from '../context.ts';
import { describeFsError, localFileError, usageError } from '../errors.ts';
import { apiPath, type KilnClient } from '../http-client.ts';
import { emit, renderKeyValues, renderTable, shortTime, writeOut } from '../output.ts';

/** Reads a profile file and checks it whole here, so a bad file fails before any upload. */
export async function readProfileFile(file: string): Promise<DataProfile> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw localFileError(`cannot read profile file ${file}: ${describeFsError(error)}`, error);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw localFileError(`profile file ${file} is not valid JSON: ${(error as Error).message}`);
  }
  const checked = parseDataProfile(parsed);
  if (!checked.ok) throw localFileError(`profile file ${file}: ${checked.reason}`);
  return checked.value;
}

export function putVersionProfile(
  client: KilnClient,
  model: string,
  version: number | string,
  profile: DataProfile,
): Promise<VersionProfile> {
  return client.put<VersionProfile>(
    apiPath('models', model, 'versions', version, 'profile'),
    profile,
  );
}

export function profileSummary(stored: VersionProfile): string {
  const { profile } = stored;
  const head = renderKeyValues([
    ['profile', `${stored.model}:${stored.version}`],
    ['rows', profile.rows],
    ['features', Object.keys(profile.features).length],
    ['outputs', Object.keys(profile.outputs).length],
    ['computed', shortTime(profile.createdAt)],
    ['stored', shortTime(stored.storedAt)],
  ]);
  const rows = [
    ...Object.entries(profile.features).map(([name, sketch]) => sketchRow(name, 'feature', sketch)),
    ...Object.entries(profile.outputs).map(([name, sketch]) => sketchRow(name, 'output', sketch)),
  ];
  const table = renderTable(
    [
      'name',
      'side',
      'kind',
      { header: 'present', align: 'right' },
      { header: 'missing', align: 'right' },
      'summary',
    ],
    rows,
  );
  return `${head}\n${table}`;
}

function number(value: number | null): string {
  return value === null ? '-' : String(Number(value.toPrecision(4)));
}

function sketchRow(name: string, side: string, sketch: FeatureSketch): string[] {
  const present = sketch.kind === 'numeric' ? sketch.moments.count : sketch.count;
  const total = present + sketch.missing;
  const missing = total === 0 ? '-' : `${((100 * sketch.missing) / total).toFixed(1)}%`;
  let summary: string;
  if (sketch.kind === 'numeric') {
    const histogram = HistogramSketch.fromSnapshot(sketch.histogram);
    const median = histogram.ok ? histogram.sketch.quantile(0.5) : null;
    summary =
      present === 0
        ? '-'
        : `mean ${number(sketch.moments.mean)}, p50 ${number(median)}, ` +
          `[${number(sketch.moments.min)}, ${number(sketch.moments.max)}]`;
  } else {
    const top = Object.entries(sketch.categories)
      .sort((a, b) => b[1] - a[1])
      .slice(0, 3)
      .map(
        ([category, count]) => `${category} ${((100 * count) / Math.max(1, present)).toFixed(0)}%`,
      );
    const more = Object.keys(sketch.categories).length - top.length;
    summary = `${top.join(', ')}${more > 0 ? `, +${more} more` : ''}${sketch.other > 0 ? `, other ${sketch.other}` : ''}`;
  }
  return [name, side, sketch.kind, String(present), missing, summary];
}

interface ProfileOptions {
  readonly data?: string;
  readonly from?: string;
  readonly output?: string;
  readonly outputs?: string;
  readonly categorical?: string;
  readonly exclude?: string;
  readonly sampleFormat?: SampleFormat;
  readonly json?: boolean;
}

function names(text: string | undefined): string[] {
  return (text ?? '')
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '');
}

/** Reads and profiles a sample; every problem is a local-file error naming the file. */
export async function profileSample(file: string, options: ProfileOptions): Promise<DataProfile> {
  const format = options.sampleFormat ?? sampleFormatOf(file);
  if (format === null) {
    throw usageError(
      `cannot tell the format of ${file}: name it .csv or .jsonl, or pass --sample-format`,
    );
  }
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw localFileError(`cannot read sample ${file}: ${describeFsError(error)}`, error);
  }
  const rows = parseSampleFile(text, format);
  if (!rows.ok) throw localFileError(`sample ${file}: ${rows.reason}`);
  const profile = computeProfile(rows.value, {
    outputs: names(options.outputs),
    categorical: names(options.categorical),
    exclude: names(options.exclude),
    createdAt: isoAt(systemClock),
  });
  if (!profile.ok) throw localFileError(`sample ${file}: ${profile.reason}`);
  return profile.value;
}

export function registerProfileCommand(models: Command): void {
  models
    .command('profile')
    .description(
      "a version's reference profile: compute it from a data sample (--data) and store it, or show it",
    )
    .argument('<ref>', 'MODEL:VERSION or MODEL@ALIAS')
    .option('--data <file>', 'CSV (header = column names) or JSONL sample to profile')
    .option('--from <file>', 'store a profile JSON file written earlier (instead of --data)')
    .option('--output <file>', 'also write the computed profile (JSON) to this file')
    .option('--outputs <columns>', "comma-separated columns holding the model's outputs")
    .option('--categorical <columns>', 'comma-separated columns to treat as categories')
    .option('--exclude <columns>', 'comma-separated columns to leave out (ids, labels)')
    .option('--sample-format <format>', 'csv or jsonl (default: by the file extension)')
    .option('--json', 'print JSON')
    .action(async (text: string, options: ProfileOptions, command: Command) => {
      const ref = parseVersionRef(text);
      const segment = refSegment(ref);
      if (segment === undefined) {
        throw usageError(`name a version: ${text}:VERSION or ${text}@ALIAS`);
      }
      if (
        options.sampleFormat !== undefined &&
        options.sampleFormat !== 'csv' &&
        options.sampleFormat !== 'jsonl'
      ) {
        throw usageError(`--sample-format ${String(options.sampleFormat)}: use csv or jsonl`);
      }
      if (options.data !== undefined && options.from !== undefined) {
        throw usageError('give --data SAMPLE or --from PROFILE, not both');
      }
      if (options.from !== undefined) {
        const file = await readProfileFile(options.from);
        const stored = await withClient(command, (client) =>
          putVersionProfile(client, ref.model, segment, file),
        );
        emit(options, stored, () => profileSummary(stored));
        return;
      }
      if (options.data === undefined) {
        for (const flag of ['output', 'outputs', 'categorical', 'exclude'] as const) {
          if (options[flag] !== undefined) throw usageError(`--${flag} needs --data FILE`);
        }
        const stored = await withClient(command, (client) =>
          client.get<VersionProfile>(apiPath('models', ref.model, 'versions', segment, 'profile')),
        );
        emit(options, stored, () => profileSummary(stored));
        return;
      }
      const profile = await profileSample(options.data, options);
      if (options.output !== undefined) {
        try {
          await writeFile(options.output, `${JSON.stringify(profile)}\n`);
        } catch (error) {
          throw localFileError(`cannot write ${options.output}: ${describeFsError(error)}`, error);
        }
        if (options.json !== true) writeOut(`wrote ${options.output}\n`);
      }
      const stored = await withClient(command, (client) =>
        putVersionProfile(client, ref.model, segment, profile),
      );
      emit(options, stored, () => profileSummary(stored));
    });
}
