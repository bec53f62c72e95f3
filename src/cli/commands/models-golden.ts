// `kiln models golden set MODEL:VERSION FILE` and `kiln models golden show MODEL:VERSION`:
// the input/output pairs a version must reproduce before a blue-green switch gives it
// traffic (`kiln models register --golden FILE` sets them with the version). The file is
// what the API takes (docs/rollouts.md):
//
//   { "tolerance": { "absolute": 1e-6, "relative": 1e-4 },
//     "cases": [ { "request": { "inputs": [...] }, "outputs": [ { "name": "y", "data": [...] } ] } ] }

import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { parseVersionRef, refSegment } from '../arguments.ts';
import { withClient } from '../context.ts';
import { describeFsError, localFileError, usageError } from '../errors.ts';
import { apiPath, type KilnClient } from '../http-client.ts';
import { emit, renderKeyValues, shortTime } from '../output.ts';

export interface GoldenSet {
  readonly model: string;
  readonly version: number;
  readonly tolerance: { readonly absolute: number; readonly relative: number };
  readonly cases: readonly unknown[];
  readonly createdAt: string;
}

/** Reads a golden file and checks its shape; the platform checks every case. */
export async function readGoldenFile(file: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw localFileError(`cannot read golden file ${file}: ${describeFsError(error)}`, error);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw localFileError(
      `golden file ${file} is not valid JSON: ${(error as Error).message}`,
      error,
    );
  }
  const cases = (parsed as { cases?: unknown } | null)?.cases;
  if (typeof parsed !== 'object' || parsed === null || !Array.isArray(cases))
    throw localFileError(`golden file ${file} must hold {"cases": [{"request", "outputs"}, ...]}`);
  return parsed;
}

export function putGoldenSet(
  client: KilnClient,
  model: string,
  version: number | string,
  body: unknown,
): Promise<GoldenSet> {
  return client.put<GoldenSet>(apiPath('models', model, 'versions', version, 'golden'), body);
}

export function goldenSummary(golden: GoldenSet): string {
  return renderKeyValues([
    ['golden set', `${golden.model}:${golden.version}`],
    ['cases', golden.cases.length],
    ['tolerance', `absolute ${golden.tolerance.absolute}, relative ${golden.tolerance.relative}`],
    ['set', shortTime(golden.createdAt)],
  ]);
}

function versionSegment(text: string): { model: string; segment: string } {
  const ref = parseVersionRef(text);
  const segment = refSegment(ref);
  if (segment === undefined) throw usageError(`name a version: ${text}:VERSION or ${text}@ALIAS`);
  return { model: ref.model, segment };
}

export function registerGoldenCommands(models: Command): void {
  const golden = models
    .command('golden')
    .description("a version's golden set: input/output pairs checked before a blue-green switch");

  golden
    .command('set')
    .description("register (or replace) a version's golden set from a JSON file")
    .argument('<ref>', 'MODEL:VERSION or MODEL@ALIAS')
    .argument('<file>', 'JSON {tolerance?, cases: [{request, outputs}]}')
    .option('--json', 'print JSON')
    .action(async (text: string, file: string, options: { json?: boolean }, command: Command) => {
      const { model, segment } = versionSegment(text);
      const body = await readGoldenFile(file);
      const stored = await withClient(command, (client) =>
        putGoldenSet(client, model, segment, body),
      );
      emit(options, stored, () => goldenSummary(stored));
    });

  golden
    .command('show')
    .description("show a version's golden set")
    .argument('<ref>', 'MODEL:VERSION or MODEL@ALIAS')
    .option('--json', 'print JSON')
    .action(async (text: string, options: { json?: boolean }, command: Command) => {
      const { model, segment } = versionSegment(text);
      const stored = await withClient(command, (client) =>
        client.get<GoldenSet>(apiPath('models', model, 'versions', segment, 'golden')),
      );
      emit(options, stored, () => goldenSummary(stored));
    });
}
