// `kiln gc`: remove artifact blobs no live version references (after a grace period, since
// a registration may be about to reference a freshly uploaded blob).

import type { Command } from 'commander';
import { integerOption } from '../arguments.ts';
import type { GcResult } from '../api-types.ts';
import { withClient } from '../context.ts';
import { emit, humanSize, type JsonOption } from '../output.ts';

export function registerGcCommand(program: Command): void {
  program
    .command('gc')
    .description('delete artifact blobs that no live version references')
    .option('--dry-run', 'only report what would be removed')
    .option(
      '--grace-seconds <n>',
      'keep blobs uploaded within the last N seconds (server default: 3600)',
      integerOption(0),
    )
    .option('--json', 'print JSON')
    .action(
      async (
        options: JsonOption & { dryRun?: boolean; graceSeconds?: number },
        command: Command,
      ) => {
        const body = {
          dryRun: options.dryRun === true,
          ...(options.graceSeconds === undefined ? {} : { graceSeconds: options.graceSeconds }),
        };
        const result = await withClient(command, (client) =>
          client.post<GcResult>('/api/v1/gc', body),
        );
        emit(options, result, () => gcText(result));
      },
    );
}

export function gcText(result: GcResult): string {
  const verb = result.dryRun ? 'would remove' : 'removed';
  const blobs = `${result.removedBlobs} blob${result.removedBlobs === 1 ? '' : 's'}`;
  return `${verb} ${blobs} (${humanSize(result.removedBytes)}), kept ${result.keptBlobs}\n`;
}
