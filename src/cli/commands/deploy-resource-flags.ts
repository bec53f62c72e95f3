// `kiln deploy`'s placement flags (issue 14): what one replica needs of a node, sent as the
// endpoint config's `resources` (docs/placement.md). Absent flags send nothing: the endpoint
// asks nothing of placement (best effort) or keeps what it asked before.

import { InvalidArgumentError, Option, type Command } from 'commander';
import type { ResourceRequest } from '../../placement/inventory.ts';
import { integerOption, parseNumber } from '../arguments.ts';

export interface ResourceFlags {
  readonly cpus?: number;
  readonly memoryGib?: number;
  readonly gpus?: number;
  readonly gpuMemoryGib?: number;
  readonly gpuType?: string;
  readonly mig?: string;
  readonly capacity?: 'spot' | 'on-demand' | 'any';
}

function positiveNumber(text: string): number {
  const value = parseNumber(text);
  if (value === undefined || value <= 0) throw new InvalidArgumentError('expected a number > 0');
  return value;
}

export function addResourceOptions(command: Command): Command {
  return command
    .option(
      '--cpus <n>',
      'placement: CPU cores one replica needs (fractions allowed)',
      positiveNumber,
    )
    .option('--memory-gib <n>', 'placement: memory one replica needs, in GiB', positiveNumber)
    .option(
      '--gpus <n>',
      'placement: whole accelerators on one node (tensor parallel)',
      integerOption(1),
    )
    .option(
      '--gpu-memory-gib <n>',
      'placement: accelerator memory one replica needs (packed onto shared devices or MIG instances)',
      positiveNumber,
    )
    .option('--gpu-type <type>', 'placement: accelerator type to match, e.g. A100-80GB')
    .option('--mig <profile>', 'placement: a MIG instance of this profile, e.g. 1g.10gb')
    .addOption(
      new Option('--capacity <kind>', 'placement: spot, on-demand or any (spot preferred)').choices(
        ['spot', 'on-demand', 'any'],
      ),
    );
}

/** The `resources` the flags ask for; null: none given. */
export function resourceRequest(flags: ResourceFlags): ResourceRequest | null {
  const accelerator = {
    ...(flags.gpuType === undefined ? {} : { type: flags.gpuType }),
    ...(flags.gpuMemoryGib === undefined ? {} : { memoryGiB: flags.gpuMemoryGib }),
    ...(flags.gpus === undefined ? {} : { count: flags.gpus }),
    ...(flags.mig === undefined ? {} : { mig: flags.mig }),
  };
  const request: ResourceRequest = {
    ...(flags.cpus === undefined ? {} : { cpu: flags.cpus }),
    ...(flags.memoryGib === undefined ? {} : { memoryGiB: flags.memoryGib }),
    ...(Object.keys(accelerator).length === 0 ? {} : { accelerator }),
    ...(flags.capacity === undefined ? {} : { capacity: flags.capacity }),
  };
  return Object.keys(request).length === 0 ? null : request;
}
